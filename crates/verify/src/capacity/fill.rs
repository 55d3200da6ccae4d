//! `verify --capacity DIR`: the fill-and-check for a mounted filesystem, in the spirit of
//! f3write/f3read. Files of 1 GiB fill the free space (every 512-byte sector tagged with the
//! run and its place in the fill), are flushed, and are read back with O_DIRECT (or after
//! dropping their cached pages); a counterfeit shows as sectors that read back as zeros or
//! garbage, or as another place's sectors (a wrap). Nothing but the run's own files is
//! written; they are removed at the end (a wrap on a fake card can still damage other files,
//! as with f3write: the verdict says so).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sinkrate_platform::buf::AlignedBuf;

use crate::session::VerifyError;
use sinkrate_formats::capacity_tag::{fill_unit, read_tag, SECTOR};
use sinkrate_model::verify::CapacityVerdict;

const FILE_BYTES: u64 = 1 << 30;
const CHUNK: usize = 1 << 20;
/// Left free so the filesystem itself is not starved (and a small file still fits).
const MARGIN: u64 = 4 << 20;
/// Below this much free space there is nothing to tell.
pub const MIN_FREE: u64 = 16 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FillReport {
    pub dir: String,
    /// What the filesystem says it has, in all and free.
    pub fs_total_bytes: u64,
    pub fs_free_bytes: u64,
    pub files: u64,
    pub written_bytes: u64,
    /// Sectors read back as written.
    pub ok_bytes: u64,
    /// Sectors that read back as another place's (a wrap).
    pub overwritten_bytes: u64,
    /// Sectors that read back as zeros, garbage or an earlier run's data.
    pub lost_bytes: u64,
    /// Where in the fill the first bad sector is.
    pub first_bad_at_bytes: Option<u64>,
    /// Files of the fill the filesystem no longer has when they are read back: a wrap
    /// overwrote its own records (their bytes count as lost).
    #[serde(default)]
    pub vanished_files: u64,
    pub write_bytes_per_s: Option<f64>,
    pub read_bytes_per_s: Option<f64>,
    pub read_method: String,
    pub verdict: CapacityVerdict,
    pub verdict_text: String,
    pub seconds: f64,
    pub error: Option<String>,
}

fn file_name(dir: &Path, run_id: u64, i: u64) -> PathBuf {
    dir.join(format!("sinkrate-capacity-{run_id:016x}-{i:04}.bin"))
}

/// Fills `dir`'s free space, reads it back and removes what it wrote.
pub fn run(
    dir: &Path,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<FillReport, VerifyError> {
    let space = sinkrate_sys::space::space(dir).map_err(crate::session::io(dir))?;
    if space.available_bytes < MIN_FREE {
        return Err(VerifyError::TooSmall {
            what: dir.display().to_string(),
            available: space.available_bytes,
            block: MIN_FREE as usize,
        });
    }
    let started = Instant::now();
    let run_id = crate::session::new_run_id();
    let target = space.available_bytes.saturating_sub(MARGIN) / CHUNK as u64 * CHUNK as u64;
    let mut r = empty_report(dir, space.total_bytes, space.available_bytes);
    let mut written_files: Vec<(PathBuf, u64)> = Vec::new();
    let wrote = write_all(
        dir,
        run_id,
        target,
        stop,
        on_progress,
        &mut r,
        &mut written_files,
    );
    // A write that failed (not ENOSPC) ends the fill, not the check: on a card that wraps,
    // the fill overwrites the filesystem's own tables, and the filesystem then answers EPERM,
    // EIO or ENOSPC. What was written is read back all the same: tags from the wrong place
    // prove the wrap, and the error is then part of the evidence.
    let read = if stop.load(Ordering::Relaxed) {
        Err("interrupted".to_string())
    } else {
        // A filesystem driver in user space (FUSE) writes through the device's own page
        // cache, which O_DIRECT on the file does not bypass: as root, that cache goes too.
        // A kernel's filesystem needs none of it (O_DIRECT, or the files' own pages
        // dropped), and the machine's other work is left its cache and its dirty data.
        let in_user_space = sinkrate_sys::host::target_facts(dir, false)
            .fs_type
            .is_some_and(|t| t.starts_with("fuse"));
        match in_user_space.then(drop_all_caches) {
            Some(Ok(true)) => r
                .read_method
                .push_str(", after dropping the kernel's caches"),
            Some(Err(e)) => r.error = Some(e),
            _ => {}
        }
        if r.error.is_some() {
            Err("the read-back could come from the page cache".to_string())
        } else {
            read_all(run_id, stop, on_progress, &mut r, &written_files)
        }
    };
    for (path, _) in &written_files {
        match sinkrate_sys::owned::remove(path) {
            Ok(_) => {}
            Err(e) => {
                let line = format!("{} could not be removed: {e}", path.display());
                r.error = Some(
                    r.error
                        .take()
                        .map_or(line.clone(), |x| format!("{x}; {line}")),
                );
            }
        }
    }
    r.seconds = started.elapsed().as_secs_f64();
    let errors: Vec<String> = [wrote.err(), read.err()].into_iter().flatten().collect();
    conclude(&mut r, &errors, stop.load(Ordering::Relaxed));
    Ok(r)
}

/// The verdict from what was read back and the errors met on the way: bytes that did not
/// come back (tags from the wrong place, or files the filesystem no longer gives back after
/// the fill) make a write or read error evidence (named in the verdict), not a failure;
/// without them, an error fails the check.
fn conclude(r: &mut FillReport, errors: &[String], interrupted: bool) {
    let proven = r.lost_bytes + r.overwritten_bytes > 0;
    if errors.is_empty() || (proven && !interrupted) {
        judge(r);
        if !errors.is_empty() {
            // Evidence, not a failure of the run: in the verdict, not in `error`.
            r.verdict_text.push_str(&format!(
                " The fill then failed as a filesystem whose tables were overwritten does: {}.",
                errors.join("; ")
            ));
        }
    } else {
        let e = errors.join("; ");
        r.error = Some(r.error.take().map_or(e.clone(), |x| format!("{e}; {x}")));
        r.verdict = CapacityVerdict::Failed;
        r.verdict_text = format!("the fill-and-check could not finish: {e}");
    }
}

/// A report before anything is written: nothing counted, not judged yet.
fn empty_report(dir: &Path, total: u64, free: u64) -> FillReport {
    FillReport {
        dir: dir.display().to_string(),
        fs_total_bytes: total,
        fs_free_bytes: free,
        files: 0,
        written_bytes: 0,
        ok_bytes: 0,
        overwritten_bytes: 0,
        lost_bytes: 0,
        first_bad_at_bytes: None,
        vanished_files: 0,
        write_bytes_per_s: None,
        read_bytes_per_s: None,
        read_method: String::new(),
        verdict: CapacityVerdict::Failed,
        verdict_text: String::new(),
        seconds: 0.0,
        error: None,
    }
}

fn write_all(
    dir: &Path,
    run_id: u64,
    target: u64,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&str, u64, u64),
    r: &mut FillReport,
    files: &mut Vec<(PathBuf, u64)>,
) -> Result<(), String> {
    let mut buf = AlignedBuf::new(CHUNK);
    let started = Instant::now();
    let mut addr = 0u64;
    let mut full = false;
    while addr < target && !full {
        let path = file_name(dir, run_id, files.len() as u64);
        sinkrate_sys::owned::track(&path);
        let (f, direct) = crate::session::open_direct(&path, true, true)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if let Ok(meta) = f.metadata() {
            sinkrate_sys::owned::made(&path, &meta);
        }
        r.read_method = if direct {
            "O_DIRECT"
        } else {
            "dropped page cache"
        }
        .into();
        files.push((path.clone(), 0));
        let mut in_file = 0u64;
        while in_file < FILE_BYTES && addr < target {
            if stop.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            fill_unit(buf.as_mut_slice(), run_id, addr);
            match f.write_all_at(buf.as_slice(), in_file) {
                Ok(()) => {}
                // The free space the filesystem reported was less than it could give: the
                // fill ends here, as f3write's does.
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    full = true;
                    break;
                }
                Err(e) => {
                    return Err(format!("{} at offset {in_file}: {e}", path.display()));
                }
            }
            in_file += CHUNK as u64;
            addr += CHUNK as u64;
            if let Some(last) = files.last_mut() {
                last.1 = in_file;
            }
            // Kept as it goes: a write that fails later leaves what came before to be read.
            r.files = files.len() as u64;
            r.written_bytes = addr;
            on_progress("writing", addr, target);
        }
        // What the page cache or the device's cache held is on the device before it is read.
        f.sync_all()
            .map_err(|e| format!("{}: fsync: {e}", path.display()))?;
        if !direct {
            crate::session::drop_cached_pages(&f);
        }
        // A partial chunk at ENOSPC may have been written in part: it is not counted.
        let _ = f.set_len(in_file);
    }
    r.files = files.len() as u64;
    r.written_bytes = addr;
    r.write_bytes_per_s = Some(addr as f64 / started.elapsed().as_secs_f64().max(1e-9));
    Ok(())
}

fn read_all(
    run_id: u64,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&str, u64, u64),
    r: &mut FillReport,
    files: &[(PathBuf, u64)],
) -> Result<(), String> {
    let mut buf = AlignedBuf::new(CHUNK);
    let started = Instant::now();
    let mut addr = 0u64;
    let mut read = 0u64;
    let mut unreadable: Vec<String> = Vec::new();
    for (path, len) in files {
        let (f, direct) = match crate::session::open_direct(path, false, false) {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                r.vanished_files += 1;
                r.lost_bytes += len;
                r.first_bad_at_bytes.get_or_insert(addr);
                addr += len;
                continue;
            }
            // A file the filesystem will not open or read any more (its tables overwritten
            // by a wrap, or a failing card): said, and the next file is read, so that tags
            // elsewhere can still prove a wrap.
            Err(e) => {
                unreadable.push(format!("{}: {e}", path.display()));
                // What does not come back is lost, as a vanished file's bytes are.
                r.lost_bytes += len;
                r.first_bad_at_bytes.get_or_insert(addr);
                addr += len;
                continue;
            }
        };
        if !direct {
            crate::session::drop_cached_pages(&f);
        }
        let mut at = 0u64;
        while at < *len {
            if stop.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            let n = (*len - at).min(CHUNK as u64) as usize;
            if let Err(e) = crate::session::read_block(&f, &mut buf.as_mut_slice()[..n], at) {
                unreadable.push(format!("{} at offset {at}: {e}", path.display()));
                r.lost_bytes += *len - at;
                r.first_bad_at_bytes.get_or_insert(addr);
                addr += *len - at;
                break;
            }
            for (i, s) in buf.as_slice()[..n].chunks_exact(SECTOR).enumerate() {
                let here = addr + (i * SECTOR) as u64;
                match read_tag(s) {
                    Some((run, a)) if run == run_id && a == here => r.ok_bytes += SECTOR as u64,
                    Some((run, _)) if run == run_id => {
                        r.overwritten_bytes += SECTOR as u64;
                        r.first_bad_at_bytes.get_or_insert(here);
                    }
                    _ => {
                        r.lost_bytes += SECTOR as u64;
                        r.first_bad_at_bytes.get_or_insert(here);
                    }
                }
            }
            at += n as u64;
            addr += n as u64;
            read += n as u64;
            on_progress("reading", addr, r.written_bytes);
        }
    }
    r.read_bytes_per_s =
        (read > 0).then(|| read as f64 / started.elapsed().as_secs_f64().max(1e-9));
    match unreadable.len() {
        0 => Ok(()),
        1 => Err(unreadable.remove(0)),
        n => Err(format!(
            "{} (and {} more file(s) not read back)",
            unreadable.remove(0),
            n - 1
        )),
    }
}

/// How long the machine's dirty data may take to reach its devices before a read-back
/// through a FUSE driver is given up: a device elsewhere that does not answer holds sync(2)
/// for as long as it does not.
const SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Writes back and drops the kernel's clean page cache (root only); whether it did, or why
/// it could not.
fn drop_all_caches() -> Result<bool, String> {
    if !sinkrate_sys::is_root() {
        return Ok(false);
    }
    // The device under a FUSE driver is not known from its mount (the driver names itself
    // as the source): only sync(2) reaches its cache. On a thread, waited for at most
    // SYNC_WAIT.
    let syncing = std::thread::Builder::new()
        .name("sync".into())
        // SAFETY: sync takes no arguments and cannot fail.
        .spawn(|| unsafe { libc::sync() })
        .map_err(|e| format!("sync: {e}"))?;
    let started = std::time::Instant::now();
    while !syncing.is_finished() {
        if started.elapsed() >= SYNC_WAIT {
            return Err(format!(
                "the kernel's dirty data did not reach the devices within {} s (sync(2) has not returned: a device on this machine does not answer)",
                SYNC_WAIT.as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(std::fs::write("/proc/sys/vm/drop_caches", b"1").is_ok())
}

fn gb(b: u64) -> String {
    format!("{:.2} GB", b as f64 / 1e9)
}

fn judge(r: &mut FillReport) {
    let bad = r.lost_bytes + r.overwritten_bytes;
    if bad == 0 {
        r.verdict = CapacityVerdict::Genuine;
        r.verdict_text = format!(
            "the free space holds what it reports: {} written in {} file(s) and read back intact",
            gb(r.written_bytes),
            r.files
        );
        return;
    }
    r.verdict = CapacityVerdict::Fake;
    let used = r.fs_total_bytes.saturating_sub(r.fs_free_bytes);
    let holds = r.first_bad_at_bytes.unwrap_or(0);
    let how = if r.vanished_files > 0 {
        "writes past that overwrote the filesystem's own records (files of the fill are gone)"
    } else if r.overwritten_bytes > 0 {
        "writes past that overwrite what was written earlier"
    } else {
        "writes past that are lost (they read back as zeros or garbage)"
    };
    let size = if r.vanished_files > 0 {
        format!(
            "this card does not hold the {} its filesystem reports",
            gb(r.fs_total_bytes)
        )
    } else {
        format!(
            "this card holds about {} (its used space and the first {} of the fill), not the {} its filesystem reports",
            gb(used + holds),
            gb(holds),
            gb(r.fs_total_bytes)
        )
    };
    r.verdict_text = format!(
        "{size}: {how}; {} of {} written did not come back. Files already on it may be damaged too; sinkrate verify --capacity DEVICE on the unmounted card says its real size to the byte.",
        gb(bad),
        gb(r.written_bytes)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(lost: u64, overwritten: u64) -> FillReport {
        let written: u64 = 256 << 20;
        FillReport {
            files: 4,
            written_bytes: written,
            ok_bytes: written - lost - overwritten,
            overwritten_bytes: overwritten,
            lost_bytes: lost,
            first_bad_at_bytes: (lost + overwritten > 0).then_some(120 << 20),
            seconds: 1.0,
            ..empty_report(Path::new("/card"), 512 << 20, 500 << 20)
        }
    }

    #[test]
    fn a_write_error_after_a_proven_wrap_is_evidence_not_a_failure() {
        let eperm = vec![
            "/card/f-0003.bin at offset 8388608: Operation not permitted (os error 1)".to_string(),
        ];
        let mut r = filled(0, 64 << 20);
        conclude(&mut r, &eperm, false);
        assert_eq!(r.verdict, CapacityVerdict::Fake);
        assert!(
            r.verdict_text.contains("Operation not permitted"),
            "{}",
            r.verdict_text
        );
        assert_eq!(r.error, None);
        // The same error with nothing proven: the check failed, and says why.
        let mut r = filled(0, 0);
        conclude(&mut r, &eperm, false);
        assert_eq!(r.verdict, CapacityVerdict::Failed);
        assert!(r
            .error
            .as_deref()
            .is_some_and(|e| e.contains("not permitted")));
        // Interrupted: never a verdict.
        let mut r = filled(0, 64 << 20);
        conclude(&mut r, &["interrupted".to_string()], true);
        assert_eq!(r.verdict, CapacityVerdict::Failed);
        // No error: judged as before.
        let mut r = filled(0, 0);
        conclude(&mut r, &[], false);
        assert_eq!(r.verdict, CapacityVerdict::Genuine);
    }
}
