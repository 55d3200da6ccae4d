//! The metadata engines (filecreate, filestat, filedelete, dircreate, dirstat, dirdelete):
//! each file or directory gets one timed operation. As in fio, the job's I/O count and
//! bytes are those of its size in blocks (in the direction rw= names) and the completion
//! latency holds one sample per operation.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering;

use sinkrate_jobspec::options::Engine;
use sinkrate_model::DirectionResult;

use super::account_one_at_a_time;
use super::thread_rusage;
use super::WorkerOutcome;
use super::WorkerSetup;
use crate::error::EngineError;
use crate::progress::Phase;

/// How many files a create engine tracks at a time, ahead of making them: one journal write
/// per batch.
const TRACK_AHEAD: usize = 1024;

pub(super) fn run_file_operations(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let clock = setup.clock;
    let mut created_here: Vec<std::path::PathBuf> = Vec::new();
    let remove = super::open::removes_its_files(setup);
    // Every file is tracked before it is made, outside the timed calls: a killed run's files
    // are removed by the next run, kept or not. The create engines track a batch ahead of
    // the loop (a job may list 500,000 files and make a thousand in its runtime; a killed
    // run's journal, which every later run sweeps, lists only what it came near making).
    let creates = matches!(o.ioengine, Engine::Filecreate | Engine::Dircreate);
    let track_absent = |files: &[crate::files::PlannedFile]| {
        sinkrate_sys::owned::track_all(
            files
                .iter()
                .filter(|f| f.existing_size.is_none())
                .map(|f| f.path.as_path()),
        )
    };
    let mut tracked_up_to = 0;
    if !creates {
        track_absent(&setup.files);
        tracked_up_to = setup.files.len();
    }
    let dirs = o.ioengine.on_directories();
    if !creates {
        // stat and delete need their targets: create the missing ones first, as fio does.
        for f in &setup.files {
            if f.existing_size.is_none() {
                if dirs {
                    std::fs::create_dir(&f.path).map_err(|e| EngineError::io(&f.path, e))?;
                } else {
                    // Exclusive: a file that appeared since the plan is not the run's.
                    let made = std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_CLOEXEC)
                        .create_new(true)
                        .open(&f.path)
                        .and_then(|file| file.metadata())
                        .map_err(|e| EngineError::io(&f.path, e))?;
                    sinkrate_sys::owned::made(&f.path, &made);
                }
                created_here.push(f.path.clone());
            }
        }
    }
    let start = clock.now_ns();
    setup.progress.started_ns.store(start, Ordering::Relaxed);
    setup.progress.set_phase(Phase::Running);
    let cpu_before = thread_rusage();
    let mut rec = DirectionResult::default();
    let write_dir = o.rw.direction == sinkrate_jobspec::options::Direction::Write;
    let bs = o.bs[usize::from(write_dir)].max(1);
    for (i, f) in setup.files.iter().enumerate() {
        if setup.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(rt) = o.runtime {
            if clock.now_ns() - start >= rt.as_nanos() as u64 {
                break;
            }
        }
        if i == tracked_up_to {
            tracked_up_to = (i + TRACK_AHEAD).min(setup.files.len());
            track_absent(&setup.files[i..tracked_up_to]);
        }
        let c = CString::new(f.path.as_os_str().as_bytes())
            .map_err(|_| EngineError::path(&f.path, "NUL in path"))?;
        // A file the plan found absent is created exclusively: one that appeared since is
        // not the run's to claim (and to remove).
        let create_flags = libc::O_CREAT
            | libc::O_RDWR
            | libc::O_CLOEXEC
            | if f.existing_size.is_none() {
                libc::O_EXCL
            } else {
                0
            };
        let t0 = clock.now_ns();
        // SAFETY: syscalls on a valid C string; results checked.
        let r = unsafe {
            match o.ioengine {
                Engine::Filecreate => {
                    let fd = libc::open(c.as_ptr(), create_flags, 0o644 as libc::c_uint);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    fd
                }
                Engine::Dircreate => libc::mkdir(c.as_ptr(), 0o755),
                Engine::Filestat | Engine::Dirstat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(c.as_ptr(), &mut st)
                }
                Engine::Dirdelete => libc::rmdir(c.as_ptr()),
                _ => libc::unlink(c.as_ptr()),
            }
        };
        let t1 = clock.now_ns();
        if r < 0 {
            outcome.result.error = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            outcome.result.error_text = Some(format!(
                "{}: {}",
                f.path.display(),
                std::io::Error::last_os_error()
            ));
            break;
        }
        if o.ioengine == Engine::Filecreate && f.existing_size.is_none() {
            // Outside the timed call: the file's identity, so only this file is removed.
            if let Ok(meta) = std::fs::symlink_metadata(&f.path) {
                sinkrate_sys::owned::made(&f.path, &meta);
            }
        }
        rec.clat.record(t1 - t0);
        rec.total_ios += f.region_len.div_ceil(bs).max(1);
        rec.io_bytes += f.region_len;
        outcome.result.files_done = i as u64 + 1;
        if matches!(o.ioengine, Engine::Filecreate | Engine::Dircreate) && f.existing_size.is_none()
        {
            created_here.push(f.path.clone());
        }
        if matches!(o.ioengine, Engine::Filedelete | Engine::Dirdelete) {
            created_here.retain(|p| p != &f.path);
        }
    }
    let end = clock.now_ns();
    rec.runtime_ns = (end - start).max(1);
    account_one_at_a_time(outcome, cpu_before, rec.runtime_ns);
    if write_dir {
        outcome.result.write = rec;
    } else {
        outcome.result.read = rec;
    }
    if remove {
        for p in created_here {
            let removed = if dirs {
                std::fs::remove_dir(&p).is_ok()
            } else {
                sinkrate_sys::owned::remove(&p).unwrap_or(false)
            };
            if removed {
                outcome.removed_files.push(p.clone());
            }
        }
        // Also the names tracked up front that the loop never reached.
        for f in setup.files.iter().filter(|f| f.existing_size.is_none()) {
            sinkrate_sys::owned::forget(&f.path);
        }
    } else {
        if !dirs {
            outcome.kept_files.extend(created_here);
        }
        // The names tracked up front that are not kept files: directories, and names the
        // loop never reached or deleted.
        for f in setup.files.iter().filter(|f| f.existing_size.is_none()) {
            if dirs || !f.path.exists() {
                sinkrate_sys::owned::forget(&f.path);
            }
        }
    }
    Ok(())
}
