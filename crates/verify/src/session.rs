//! A verify run: where the blocks go (a new file in a directory, or an unmounted device,
//! guarded as bench's writes are), writing them, reading them back from the device, and the
//! verdict. `--read-only` reads the blocks a kept run left, learning the run from block 0.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use sinkrate_platform::buf::AlignedBuf;

use sinkrate_formats::verify_block::{self, Expected, Header, MIN_BLOCK};
use sinkrate_model::verify::{
    BadBlock, Counts, Finding, Phase, ReadMethod, VerifyReport, VerifyVerdict,
};
use sinkrate_units::product::bytes_binary as bytes;

/// A directory's default: this much, or less when the filesystem has less free.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;
/// Bad blocks described one by one in the report; the rest are counted.
const DESCRIBED: usize = 32;
const FILE_PREFIX: &str = "sinkrate-verify-";
/// Blocks read ahead of the check.
const READ_AHEAD: usize = 2;

#[derive(Debug, Clone)]
pub struct Config {
    /// A directory (a new file is written in it), an unmounted block device, or for
    /// `read_only` a file or device a kept run wrote.
    pub target: PathBuf,
    /// Bytes to write; None: the whole device, or for a directory 1 GiB (less when the
    /// filesystem has less free).
    pub size: Option<u64>,
    pub block_size: usize,
    pub keep: bool,
    pub read_only: bool,
    /// Write to a device that is mounted or holds a filesystem signature.
    pub force: bool,
}

/// Refusals before anything is written, and what stopped a run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}: no such file, directory or device")]
    NotFound(String),
    #[error("{0}: a regular file; give a directory (a new file is written there) or an unmounted device, or --read-only to check data a kept run left")]
    PlainFile(String),
    #[error("{dir} is on {fs_type}, which keeps files in memory: nothing written there reaches a device")]
    NotStorage { dir: String, fs_type: String },
    #[error("refusing to write to {device}: {reason} (--force writes anyway and destroys it)")]
    DeviceInUse { device: String, reason: String },
    #[error("--block-size {0}: must be a multiple of 4096, at least 4 KiB and at most 64 MiB")]
    BlockSize(usize),
    #[error("{what} holds {available} bytes: too small for one {block} byte block")]
    TooSmall {
        what: String,
        available: u64,
        block: usize,
    },
    #[error("{dir}: --size {size} bytes is more than the {free} bytes it holds free")]
    NoSpace { dir: String, size: u64, free: u64 },
    #[error("{0}: not data sinkrate verify wrote (no verify header at its start){1}")]
    NotVerifyData(String, String),
    #[error("{0}: holds several kept verify files ({1}); name the one to read")]
    SeveralKept(String, String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("--capacity {0}: neither a block device (probed unmounted) nor a directory (filled and checked)")]
    CapacityNeedsDevice(String),
    #[error("{0}")]
    Undo(String),
    #[error("{0}")]
    Refused(String),
    #[error("interrupted")]
    Interrupted,
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VerifyError + '_ {
    move |source| VerifyError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Where a run's progress is, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub reading: bool,
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub phase_seconds: f64,
}

enum Data {
    /// A file this run creates (and removes unless kept).
    NewFile { dir: PathBuf, path: PathBuf },
    /// A file or device named for --read-only, or a device to write.
    Existing { path: PathBuf, is_device: bool },
}

fn is_device(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_block_device()
}

fn kept_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(FILE_PREFIX) && n.ends_with(".bin"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn resolve(cfg: &Config, run_id: u64) -> Result<Data, VerifyError> {
    let target = &cfg.target;
    let meta = std::fs::metadata(target)
        .map_err(|_| VerifyError::NotFound(target.display().to_string()))?;
    if is_device(&meta) {
        return Ok(Data::Existing {
            path: target.clone(),
            is_device: true,
        });
    }
    if meta.is_file() {
        if cfg.read_only {
            return Ok(Data::Existing {
                path: target.clone(),
                is_device: false,
            });
        }
        return Err(VerifyError::PlainFile(target.display().to_string()));
    }
    if cfg.read_only {
        let kept = kept_files(target);
        return match kept.as_slice() {
            [one] => Ok(Data::Existing {
                path: one.clone(),
                is_device: false,
            }),
            [] => Err(VerifyError::NotVerifyData(
                target.display().to_string(),
                format!(": no {FILE_PREFIX}*.bin file in it"),
            )),
            many => Err(VerifyError::SeveralKept(
                target.display().to_string(),
                many.iter()
                    .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        };
    }
    let facts = sinkrate_sys::host::target_facts(target, false);
    if let Some(fs_type) = facts
        .fs_type
        .filter(|f| !sinkrate_sys::mounts::is_storage(f))
    {
        return Err(VerifyError::NotStorage {
            dir: target.display().to_string(),
            fs_type,
        });
    }
    Ok(Data::NewFile {
        dir: target.clone(),
        path: target.join(format!("{FILE_PREFIX}{run_id:016x}.bin")),
    })
}

pub(crate) fn open_direct(path: &Path, write: bool, create: bool) -> std::io::Result<(File, bool)> {
    let mut o = OpenOptions::new();
    if write {
        o.write(true);
    } else {
        o.read(true);
    }
    if create {
        o.create_new(true);
    }
    match o.clone().custom_flags(direct_flag()).open(path) {
        Ok(f) => Ok((f, true)),
        // A filesystem without O_DIRECT (EINVAL): the page cache is dealt with by hand.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            if create {
                let _ = std::fs::remove_file(path);
            }
            o.open(path).map(|f| (f, false))
        }
        Err(e) => Err(e),
    }
}

#[cfg(target_os = "linux")]
fn direct_flag() -> i32 {
    libc::O_DIRECT
}

/// Elsewhere there is no O_DIRECT; the page cache is dropped by hand.
#[cfg(not(target_os = "linux"))]
fn direct_flag() -> i32 {
    0
}

pub(crate) fn drop_cached_pages(f: &File) {
    // SAFETY: advisory calls on a descriptor this function borrows.
    unsafe {
        libc::fdatasync(f.as_raw_fd());
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

fn now_unix_s() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

/// A fresh run id: the clock and the process mixed, never zero.
pub(crate) fn new_run_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    sinkrate_platform::rng::Rng::new(t ^ (u64::from(std::process::id()) << 32)).next_u64() | 1
}

struct Plan {
    run_id: u64,
    generation: u32,
    block_size: usize,
    blocks: u64,
}

impl Plan {
    fn expected(&self, block: u64) -> Expected {
        Expected {
            run_id: self.run_id,
            generation: self.generation,
            block,
            offset: block * self.block_size as u64,
            total_blocks: self.blocks,
        }
    }
}

/// Removes the run's own file unless it is to be kept, whatever happens.
struct Cleanup {
    path: Option<PathBuf>,
}

impl Cleanup {
    /// Removes the file now; what could not be removed (the device gone) is named.
    fn remove_now(&mut self) -> Option<String> {
        let p = self.path.take()?;
        match sinkrate_sys::owned::remove(&p) {
            Ok(_) => None,
            Err(e) => Some(format!("{} could not be removed: {e}", p.display())),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.remove_now();
    }
}

fn check_block_size(b: usize) -> Result<(), VerifyError> {
    if b < MIN_BLOCK || b % MIN_BLOCK != 0 || b > 64 << 20 {
        return Err(VerifyError::BlockSize(b));
    }
    Ok(())
}

/// Runs a verify. Refusals come back as errors before anything is written; a run that
/// started always yields a report (`failed` when an I/O error stopped it).
pub fn run(
    cfg: &Config,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<VerifyReport, VerifyError> {
    let run_id = new_run_id();
    let data = resolve(cfg, run_id)?;
    if cfg.read_only {
        let Data::Existing { path, is_device } = data else {
            return Err(VerifyError::NotFound(cfg.target.display().to_string()));
        };
        let plan = plan_from_header(&path)?;
        return Ok(read_phase(
            cfg,
            &path,
            is_device,
            &plan,
            plan.blocks,
            None,
            stop,
            on_progress,
        ));
    }
    check_block_size(cfg.block_size)?;
    let (path, is_device, room, mut cleanup) = match data {
        Data::Existing { path, is_device } => {
            guard_device(&path, cfg.force)?;
            let size = device_size(&path)?;
            (path, is_device, size, Cleanup { path: None })
        }
        Data::NewFile { dir, path } => {
            let free = sinkrate_sys::space::free_bytes(&dir).map_err(io(&dir))?;
            if let Some(size) = cfg.size.filter(|s| *s > free) {
                return Err(VerifyError::NoSpace {
                    dir: dir.display().to_string(),
                    size,
                    free,
                });
            }
            let room = free / 10 * 9;
            (path, false, room, Cleanup { path: None })
        }
    };
    let wanted = match (cfg.size, is_device) {
        (Some(s), true) if s > room => {
            return Err(VerifyError::NoSpace {
                dir: path.display().to_string(),
                size: s,
                free: room,
            })
        }
        // A directory's explicit size was checked against its free space above.
        (Some(s), _) => s,
        (None, true) => room,
        (None, false) => DEFAULT_FILE_SIZE.min(room),
    };
    let blocks = wanted / cfg.block_size as u64;
    if blocks == 0 {
        return Err(VerifyError::TooSmall {
            what: path.display().to_string(),
            available: wanted,
            block: cfg.block_size,
        });
    }
    let plan = Plan {
        run_id,
        generation: 1,
        block_size: cfg.block_size,
        blocks,
    };
    // Armed by write_phase once it has created the file: only this run's own file is removed.
    let remove = (!is_device && !cfg.keep).then_some(&mut cleanup);
    // What the write costs the device: a new file's directory's devices, or the device.
    let device_count = sinkrate_sys::disks::WrittenSince::start(
        if is_device {
            &path
        } else {
            path.parent().unwrap_or(&path)
        },
        is_device,
    );
    let written = write_phase(&path, is_device, &plan, remove, stop, on_progress);
    let device_bytes_written = device_count.bytes();
    let write = match written {
        Ok(w) => w,
        Err((_, VerifyError::Interrupted)) => return Err(VerifyError::Interrupted),
        Err((done, e)) => {
            // The blocks written before the refusal, read back from the device: a card that
            // turns read-only at the end of its life should still hold them.
            let before = done.bytes / plan.block_size as u64;
            let mut r = if before > 0 {
                read_phase(
                    cfg,
                    &path,
                    is_device,
                    &plan,
                    before,
                    None,
                    stop,
                    on_progress,
                )
            } else {
                empty_report(cfg, &path, is_device, &plan)
            };
            r.verdict = VerifyVerdict::Failed;
            // The moment the device refused: a card at the end of its life turns read-only
            // after some amount written, which is the figure its user needs.
            r.verdict_text = format!(
                "writing failed after {} written, {:.1} s into the test: {e}",
                sinkrate_units::product::bytes_si(done.bytes),
                done.seconds
            );
            if before > 0 {
                let c = &r.counts;
                r.verdict_text.push_str(&match (c.ok + c.bad(), c.bad()) {
                    (checked, 0) if checked == before => format!(
                        "; the {before} blocks written before it read back as written"
                    ),
                    (checked, 0) => format!(
                        "; {checked} of the {before} blocks written before it read back as written before reading stopped"
                    ),
                    (checked, bad) => format!(
                        "; {bad} of the {checked} blocks written before it that were read back did not read back as written"
                    ),
                });
            }
            // What was written before the fault, as the figures up to it.
            r.write = Some(done);
            r.device_bytes_written = device_bytes_written;
            if let Some(left) = cleanup.remove_now() {
                r.verdict_text.push_str(&format!("; {left}"));
            }
            return Ok(r);
        }
    };
    let mut report = read_phase(
        cfg,
        &path,
        is_device,
        &plan,
        plan.blocks,
        Some(write),
        stop,
        on_progress,
    );
    report.device_bytes_written = device_bytes_written;
    drop(cleanup);
    Ok(report)
}

/// The system layer's refusal of a device write (mounted, swap, held by dm/md, or a
/// signature), as bench's.
pub(crate) fn guard_device(path: &Path, force: bool) -> Result<(), VerifyError> {
    match sinkrate_sys::guard::block_device_in_use(&sinkrate_sys::SysRoot::live(), path)
        .map_err(io(path))?
    {
        Some(reason) if !force => Err(VerifyError::DeviceInUse {
            device: path.display().to_string(),
            reason: reason.to_string(),
        }),
        _ => Ok(()),
    }
}

/// A device's or file's size, as bench sizes it (BLKGETSIZE64 for a device on Linux).
pub(crate) fn device_size(path: &Path) -> Result<u64, VerifyError> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(VerifyError::NotFound(path.display().to_string()))
        }
        Err(e) => return Err(io(path)(e)),
    };
    if meta.file_type().is_block_device() {
        sinkrate_sys::files::block_device_size(path).map_err(io(path))
    } else {
        Ok(meta.len())
    }
}

fn plan_from_header(path: &Path) -> Result<Plan, VerifyError> {
    let (f, _) = open_direct(path, false, false).map_err(io(path))?;
    drop_cached_pages(&f);
    let mut buf = AlignedBuf::new(MIN_BLOCK);
    let n = f.read_at(buf.as_mut_slice(), 0).map_err(io(path))?;
    let not_ours = |why: &str| VerifyError::NotVerifyData(path.display().to_string(), why.into());
    let h = match Header::decode(&buf.as_slice()[..n]) {
        Some(Ok(h)) => h,
        Some(Err(())) => return Err(not_ours(" (its header is damaged)")),
        None => return Err(not_ours("")),
    };
    let block_size = h.length as usize;
    if check_block_size(block_size).is_err() || h.block != 0 || h.total_blocks == 0 {
        return Err(not_ours(" (its header is not a first block's)"));
    }
    Ok(Plan {
        run_id: h.run_id,
        generation: h.generation,
        block_size,
        blocks: h.total_blocks,
    })
}

fn write_phase(
    path: &Path,
    is_device: bool,
    plan: &Plan,
    cleanup: Option<&mut Cleanup>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Phase, (Phase, VerifyError)> {
    let nothing = |e| (Phase::of(0, 0.0), e);
    let (f, _direct) = if is_device {
        // O_EXCL on a block device: no one else may hold it open for writing.
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(direct_flag() | libc::O_EXCL)
            .open(path)
            .map_err(io(path))
            .map_err(nothing)?;
        (f, true)
    } else {
        // Listed before it exists, so a run killed with SIGKILL leaves it to the next run.
        if cleanup.is_some() {
            sinkrate_sys::owned::track(path);
        }
        let opened = open_direct(path, true, true)
            .map_err(|e| {
                sinkrate_sys::owned::forget(path);
                io(path)(e)
            })
            .map_err(nothing)?;
        if cleanup.is_some() {
            if let Ok(meta) = opened.0.metadata() {
                sinkrate_sys::owned::made(path, &meta);
            }
        }
        opened
    };
    if let Some(c) = cleanup {
        c.path = Some(path.to_path_buf());
    }
    let mut buf = AlignedBuf::new(plan.block_size);
    let total = plan.blocks * plan.block_size as u64;
    let started = Instant::now();
    let mut last_report = started;
    let now_s = now_unix_s();
    let so_far = |b: u64| Phase::of(b * plan.block_size as u64, started.elapsed().as_secs_f64());
    for b in 0..plan.blocks {
        if stop.load(Ordering::Relaxed) {
            return Err((so_far(b), VerifyError::Interrupted));
        }
        let e = plan.expected(b);
        let slice = &mut buf.as_mut_slice()[..plan.block_size];
        crate::block::fill(slice, &e, now_s);
        f.write_all_at(slice, e.offset).map_err(|source| {
            let path = format!("{} (block {b} at offset {})", path.display(), e.offset);
            (so_far(b), VerifyError::Io { path, source })
        })?;
        if last_report.elapsed().as_millis() >= 250 {
            last_report = Instant::now();
            on_progress(Progress {
                reading: false,
                done_bytes: (b + 1) * plan.block_size as u64,
                total_bytes: total,
                phase_seconds: started.elapsed().as_secs_f64(),
            });
        }
    }
    f.sync_all()
        .map_err(|err| (so_far(plan.blocks), io(path)(err)))?;
    Ok(Phase::of(total, started.elapsed().as_secs_f64()))
}

fn empty_report(cfg: &Config, path: &Path, is_device: bool, plan: &Plan) -> VerifyReport {
    VerifyReport {
        target: cfg.target.display().to_string(),
        data_path: path.display().to_string(),
        is_device,
        run_id: format!("{:016x}", plan.run_id),
        generation: plan.generation,
        block_size_bytes: plan.block_size as u64,
        blocks: plan.blocks,
        write: None,
        device_bytes_written: None,
        read: None,
        read_method: None,
        counts: Counts::default(),
        bad_blocks: Vec::new(),
        verdict: VerifyVerdict::Failed,
        verdict_text: String::new(),
        kept: cfg.keep && !is_device,
    }
}

/// Reads back and checks blocks `0..upto` of `plan` (all of them, or those written before
/// a write failed).
#[allow(clippy::too_many_arguments)]
fn read_phase(
    cfg: &Config,
    path: &Path,
    is_device: bool,
    plan: &Plan,
    upto: u64,
    write: Option<Phase>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(Progress),
) -> VerifyReport {
    let mut r = empty_report(cfg, path, is_device, plan);
    r.write = write;
    let (f, direct) = match open_direct(path, false, false) {
        Ok(x) => x,
        Err(e) => {
            r.verdict_text = format!("reading failed: {}: {e}", path.display());
            return r;
        }
    };
    if !direct {
        drop_cached_pages(&f);
    }
    r.read_method = Some(if direct {
        ReadMethod::ODirect
    } else {
        ReadMethod::DroppedPageCache
    });
    let total = upto * plan.block_size as u64;
    let started = Instant::now();
    let mut last_report = started;
    let mut failure = None;
    let mut read = 0;
    // A reader thread keeps the device busy while this one checks the block before: the
    // check (a header and a crc32c) then costs no device time.
    let (full_tx, full_rx) =
        std::sync::mpsc::sync_channel::<(u64, std::io::Result<AlignedBuf>)>(READ_AHEAD);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<AlignedBuf>();
    for _ in 0..READ_AHEAD + 1 {
        let _ = empty_tx.send(AlignedBuf::new(plan.block_size));
    }
    std::thread::scope(|scope| {
        let file = &f;
        scope.spawn(move || {
            for b in 0..upto {
                let Ok(mut buf) = empty_rx.recv() else { return };
                let offset = b * plan.block_size as u64;
                let got = read_block(file, &mut buf.as_mut_slice()[..plan.block_size], offset)
                    .map(|()| buf);
                let failed = got.is_err();
                if full_tx.send((b, got)).is_err() || failed {
                    return;
                }
            }
        });
        let full_rx = full_rx;
        for (b, got) in full_rx.iter() {
            let e = plan.expected(b);
            let buf = match got {
                Ok(buf) => buf,
                Err(err) => {
                    failure = Some(format!(
                        "reading block {b} (offset {}) failed: {err}",
                        e.offset
                    ));
                    break;
                }
            };
            read += plan.block_size as u64;
            let finding = verify_block::check(&buf.as_slice()[..plan.block_size], &e);
            r.counts.add(&finding);
            if !finding.is_ok() && r.bad_blocks.len() < DESCRIBED {
                r.bad_blocks.push(BadBlock {
                    block: b,
                    offset_bytes: e.offset,
                    finding,
                });
            }
            if stop.load(Ordering::Relaxed) {
                failure = Some("interrupted".to_string());
                break;
            }
            let _ = empty_tx.send(buf);
            if last_report.elapsed().as_millis() >= 250 {
                last_report = Instant::now();
                on_progress(Progress {
                    reading: true,
                    done_bytes: read,
                    total_bytes: total,
                    phase_seconds: started.elapsed().as_secs_f64(),
                });
            }
        }
        // Closing both channels ends the reader wherever it waits.
        drop(full_rx);
        drop(empty_tx);
    });
    r.read = Some(Phase::of(read, started.elapsed().as_secs_f64()));
    let (verdict, text) = judge(plan, &r, failure);
    r.verdict = verdict;
    r.verdict_text = text;
    r
}

/// Reads a whole block; past the end of a file (a truncated one) the rest reads as zeros.
pub(crate) fn read_block(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = f.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            buf[done..].fill(0);
            break;
        }
        done += n;
    }
    Ok(())
}

fn judge(plan: &Plan, r: &VerifyReport, failure: Option<String>) -> (VerifyVerdict, String) {
    let c = &r.counts;
    let checked = c.ok + c.bad();
    if let Some(f) = failure {
        return (
            VerifyVerdict::Failed,
            format!(
                "{f}; {checked} of {} blocks checked before, {} of them bad",
                plan.blocks,
                c.bad()
            ),
        );
    }
    let Some(first) = r.bad_blocks.first() else {
        return (
            VerifyVerdict::Verified,
            format!(
                "every one of the {} blocks ({}) read back as written",
                plan.blocks,
                bytes(plan.blocks * plan.block_size as u64)
            ),
        );
    };
    let mut kinds = Vec::new();
    for (n, what) in [
        (c.stale, "stale"),
        (c.misplaced, "misplaced"),
        (c.zeros, "zeros"),
        (c.garbage, "garbage"),
        (c.corrupt, "corrupt"),
    ] {
        if n > 0 {
            kinds.push(format!("{n} {what}"));
        }
    }
    let mut text = format!(
        "{} of {} blocks did not read back as written ({}); the first, block {} at {}, holds {}",
        c.bad(),
        plan.blocks,
        kinds.join(", "),
        first.block,
        bytes(first.offset_bytes),
        first.finding.words(plan.run_id, plan.generation)
    );
    // A device that wraps: from some offset on, every read returns what was written one
    // fixed distance earlier (one misplaced block alone is a misdirected write).
    let shifts: Vec<(u64, u64)> = r
        .bad_blocks
        .iter()
        .filter_map(|b| match b.finding {
            Finding::Misplaced { from_offset, .. } if from_offset < b.offset_bytes => {
                Some((b.offset_bytes, b.offset_bytes - from_offset))
            }
            _ => None,
        })
        .collect();
    if let [(first_at, shift), rest @ ..] = shifts.as_slice() {
        if !rest.is_empty() && rest.iter().all(|(_, s)| s == shift) {
            text.push_str(&format!(
                "; from {} on, reads return what was written {} earlier: the device wraps around and seems to hold only about {}",
                bytes(*first_at),
                bytes(*shift),
                bytes(*shift)
            ));
        }
    }
    (VerifyVerdict::BadBlocks, text)
}
