//! Opening a job's files: laying out data for readers, preallocating for writers, O_DIRECT
//! with an honest fallback, exclusive opens of block devices; and removing what was created.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

use sinkrate_jobspec::options::{Engine, Fallocate, SyncMode};
use sinkrate_jobspec::JobOptions;

use super::WorkerOutcome;
use super::WorkerSetup;
use crate::backend::Backend;
use crate::distribution::BlockSampler;
use crate::error::EngineError;
use crate::files::PlannedFile;
use crate::rng::{Permutation, Rng};
use sinkrate_platform::buf::AlignedBuf;
use std::sync::atomic::AtomicBool;

/// `last_start` of a direction that has not had an I/O yet.
pub(super) const NO_START: u64 = u64::MAX;

pub(super) struct OpenFile {
    pub(super) fd: RawFd,
    pub(super) plan: PlannedFile,
    pub(super) created: bool,
    pub(super) seq_pos: [u64; 3],
    pub(super) perm: Option<Permutation>,
    /// With block sizes that vary: the pass's touched blocks of the smallest size.
    pub(super) random_map: Option<super::random_map::RandomMap>,
    /// Per direction, for a non-uniform random_distribution (made at the first random I/O).
    pub(super) samplers: [Option<BlockSampler>; 3],
    /// Where the last I/O of each direction started (rw_sequencer=identical repeats it;
    /// trimwrite writes where the last trim started). `NO_START` before the first, as fio's.
    pub(super) last_start: [u64; 3],
    pub(super) written: bool,
    /// zonemode=strided: where the current zone starts in the region, and the bytes done
    /// in it.
    pub(super) zone_base: u64,
    pub(super) zone_bytes: u64,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: closing a descriptor this struct owns.
            unsafe { libc::close(self.fd) };
        }
    }
}

pub(super) fn open_flags(o: &JobOptions, writes: bool, direct: bool) -> libc::c_int {
    let mut flags = if writes {
        libc::O_RDWR | libc::O_CREAT
    } else {
        libc::O_RDONLY
    };
    flags |= libc::O_CLOEXEC;
    if direct {
        flags |= libc::O_DIRECT;
    }
    match o.sync {
        SyncMode::Sync => flags |= libc::O_SYNC,
        SyncMode::Dsync => flags |= libc::O_DSYNC,
        SyncMode::None => {}
    }
    flags
}

pub(super) fn sys_open(path: &std::path::Path, flags: libc::c_int) -> std::io::Result<RawFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: open with a valid C string; the result is checked.
    let fd = unsafe { libc::open(c.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// Held by the job laying out its files, for jobs with create_serialize.
static LAYING_OUT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes the file's region so a read job has data to read (fio's "laying out IO file").
pub(super) fn lay_out(
    path: &std::path::Path,
    from: u64,
    to: u64,
    rng: &mut Rng,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let fd = sys_open(path, libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC)
        .map_err(|e| EngineError::io(path, e))?;
    let guard = OpenFile {
        fd,
        plan: PlannedFile {
            path: path.to_path_buf(),
            region_start: 0,
            region_len: 0,
            is_block_device: false,
            special: false,
            takes_syncs: true,
            existing_size: None,
            kept_from_earlier: false,
            sized_at_start: false,
        },
        created: false,
        seq_pos: [0; 3],
        perm: None,
        random_map: None,
        samplers: [None, None, None],
        last_start: [NO_START; 3],
        written: false,
        zone_base: 0,
        zone_bytes: 0,
    };
    let chunk = 1usize << 20;
    let mut buf = AlignedBuf::new(chunk);
    rng.fill(buf.as_mut_slice());
    let mut off = from;
    while off < to {
        if stop.load(Ordering::Relaxed) {
            return Err(EngineError::path(
                path,
                "interrupted while laying out the file",
            ));
        }
        let len = chunk.min((to - off) as usize);
        // SAFETY: buf holds at least len bytes.
        let n = unsafe { libc::pwrite(guard.fd, buf.as_mut_ptr().cast(), len, off as libc::off_t) };
        if n <= 0 {
            return Err(EngineError::io(path, std::io::Error::last_os_error()));
        }
        off += n as u64;
    }
    // SAFETY: fsync on an owned descriptor.
    if unsafe { libc::fsync(guard.fd) } < 0 {
        return Err(EngineError::io(path, std::io::Error::last_os_error()));
    }
    // As fio after "laying out IO file", whatever invalidate= says: the job reads what it
    // laid out from the device, not from the pages the layout left behind (pre_read= is
    // how a job asks for them cached).
    // SAFETY: advisory call on an owned descriptor.
    unsafe {
        libc::posix_fadvise(
            guard.fd,
            from as libc::off_t,
            (to - from) as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    Ok(())
}

/// fio's pre_read: the region read once, in full, before the job times anything, as fio
/// reads it (an advisory readahead(2) only starts the reads: beside a busy disk the job
/// then timed the device, not the cache).
fn pre_read(
    path: &std::path::Path,
    fd: RawFd,
    start: u64,
    len: u64,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    // Aligned, so a descriptor opened with O_DIRECT reads it too.
    let mut buf = AlignedBuf::new((1usize << 20).min(len.max(4096) as usize));
    let mut off = start;
    let end = start.saturating_add(len);
    while off < end && !stop.load(Ordering::Relaxed) {
        let want = buf.as_mut_slice().len().min((end - off) as usize);
        // SAFETY: buf holds at least `want` bytes.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), want, off as libc::off_t) };
        match n {
            n if n < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(EngineError::io(path, e));
            }
            // The end of what there is to read (a device shorter than the region).
            0 => break,
            n => off += n as u64,
        }
    }
    Ok(())
}

pub(super) fn preallocate(fd: RawFd, mode: Fallocate, size: u64) {
    // Failure to preallocate is not an error in fio either: the writes allocate instead.
    // SAFETY: plain syscalls on an owned descriptor.
    unsafe {
        match mode {
            Fallocate::None => {}
            #[cfg(target_os = "linux")]
            Fallocate::Native => {
                libc::fallocate(fd, 0, 0, size as libc::off_t);
            }
            // Without Linux's fallocate(2), fio's native mode is posix_fallocate too, and
            // keep-size has no equivalent (the writes allocate).
            #[cfg(not(target_os = "linux"))]
            Fallocate::Native => {
                libc::posix_fallocate(fd, 0, size as libc::off_t);
            }
            #[cfg(not(target_os = "linux"))]
            Fallocate::Keep => {}
            Fallocate::Posix => {
                libc::posix_fallocate(fd, 0, size as libc::off_t);
            }
            #[cfg(target_os = "linux")]
            Fallocate::Keep => {
                libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, size as libc::off_t);
            }
            Fallocate::Truncate => {
                libc::ftruncate(fd, size as libc::off_t);
            }
        }
    }
}

pub(super) fn open_files(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
    rng: &mut Rng,
    backend: &mut dyn Backend,
    out: &mut Vec<OpenFile>,
) -> Result<(), EngineError> {
    let o = &setup.job.options;
    setup.debug.file("setup files");
    // Trims need the descriptor open for writing, as writes do (BLKDISCARD asks for it).
    let writes = o.rw.modifies();
    if o.ioengine.opens_no_file() {
        // No descriptor: the backend holds what the job reads and writes (page_fault's
        // memory, an NBD connection) or nothing (null).
        let plan = &setup.files[0];
        // The system's error stays the job's (ENOMEM for memory page_fault cannot map).
        backend
            .attach_file(0, -1, plan.needed_size(), writes)
            .map_err(|e| EngineError::io(&plan.path, e))?;
        out.push(OpenFile {
            fd: -1,
            plan: setup.files[0].clone(),
            created: false,
            seq_pos: [0; 3],
            perm: None,
            random_map: None,
            samplers: [None, None, None],
            last_start: [NO_START; 3],
            written: false,
            zone_base: 0,
            zone_bytes: 0,
        });
        return Ok(());
    }
    for plan in &setup.files {
        let path = &plan.path;
        let existed = plan.existing_size.is_some();
        // An earlier job of the run may have made or grown the file since it was planned.
        let size_now = if plan.is_block_device || plan.special {
            plan.existing_size.unwrap_or(0)
        } else {
            std::fs::metadata(path).map_or(0, |m| m.len())
        };
        if !plan.is_block_device && !plan.special && !existed {
            setup
                .shared_files
                .make_parent_dirs(path)
                .map_err(|e| EngineError::io(path, e))?;
        }
        let create = |setup: &WorkerSetup| -> Result<(), EngineError> {
            if !plan.is_block_device && !plan.special && !existed {
                setup
                    .shared_files
                    .create(path)
                    .map_err(|e| EngineError::io(path, e))?;
            }
            Ok(())
        };
        let needs_data = !plan.is_block_device
            && !plan.special
            && (o.rw.reads() || o.overwrite || o.ioengine == Engine::Mmap && !writes)
            && size_now < plan.needed_size();
        if needs_data {
            // create_serialize (fio's default): one job creates and lays out at a time.
            let _one_at_a_time = o
                .behaviour
                .create_serialize
                .then(|| LAYING_OUT.lock().unwrap_or_else(|p| p.into_inner()));
            create(setup)?;
            if let Err(e) = lay_out(path, size_now, plan.needed_size(), rng, &setup.stop) {
                // A half-written file sinkrate created is sinkrate's to remove.
                if !existed && setup.made_files != crate::runner::MadeFiles::Kept {
                    let _ = sinkrate_sys::owned::remove(path);
                }
                return Err(e);
            }
        } else {
            create(setup)?;
        }
        let mut flags = open_flags(o, writes, o.direct);
        if plan.is_block_device {
            flags &= !libc::O_CREAT;
            if writes {
                // Held exclusively for the run: the kernel then refuses mounts of it, and
                // refuses us if it is mounted or held.
                flags |= libc::O_EXCL;
            }
        }
        let fd = match sys_open(path, flags) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && o.direct => {
                outcome.direct_fell_back = true;
                outcome.notices.push(format!(
                    "{}: the file system refused O_DIRECT (EINVAL); this job ran BUFFERED, so its figures include the page cache",
                    path.display()
                ));
                sys_open(path, open_flags(o, writes, false)).map_err(|e| EngineError::io(path, e))?
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && plan.is_block_device && setup.force_device_write => {
                sys_open(path, flags & !libc::O_EXCL).map_err(|e| EngineError::io(path, e))?
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && plan.is_block_device => {
                return Err(EngineError::path(
                    path,
                    "the kernel reports the device busy (mounted or held); not touching it (--force overrides)",
                ))
            }
            Err(e) => return Err(EngineError::io(path, e)),
        };
        setup.debug.file(format_args!(
            "open file {}, flags {:x}",
            crate::debug_trace::shown(path),
            flags & !libc::O_CLOEXEC
        ));
        let file = OpenFile {
            fd,
            plan: plan.clone(),
            created: !existed,
            seq_pos: [0; 3],
            perm: None,
            random_map: None,
            samplers: [None, None, None],
            last_start: [NO_START; 3],
            written: false,
            zone_base: 0,
            zone_bytes: 0,
        };
        if writes && !plan.is_block_device && !plan.special && size_now < plan.needed_size() {
            // falloc's trims punch holes within the file's size, which fio sets (no data).
            if o.ioengine == Engine::Mmap || o.ioengine == Engine::Falloc && o.rw.trims() {
                preallocate(fd, Fallocate::Truncate, plan.needed_size());
            } else if o.ioengine != Engine::Ftruncate
                && o.ioengine != Engine::Falloc
                && !o.behaviour.create_on_open
                && !o.fill_device
            {
                // create_on_open: the job's own writes make the file, nothing is laid out.
                preallocate(fd, o.fallocate, plan.needed_size());
            }
        }
        if o.invalidate && !plan.special {
            // SAFETY: advisory call on an owned descriptor.
            unsafe {
                libc::posix_fadvise(
                    fd,
                    plan.region_start as libc::off_t,
                    plan.region_len as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
        }
        if !plan.special && !plan.is_block_device {
            advise_access(fd, o);
        }
        if o.pre_read && o.rw.reads() {
            pre_read(path, fd, plan.region_start, plan.region_len, &setup.stop)?;
        }
        backend
            .attach_file(out.len(), fd, plan.needed_size(), writes)
            .map_err(|e| EngineError::io(path, e))?;
        out.push(file);
    }
    Ok(())
}

/// fio's fadvise_hint: tells the kernel the job's access pattern (read-ahead or not).
fn advise_access(fd: i32, o: &sinkrate_jobspec::JobOptions) {
    use sinkrate_jobspec::behaviour::FadviseHint;
    use sinkrate_jobspec::options::Pattern;
    let advice = match (o.behaviour.fadvise_hint, o.rw.pattern) {
        (FadviseHint::None, _) => return,
        (FadviseHint::Sequential, _) | (FadviseHint::Auto, Pattern::Sequential) => {
            libc::POSIX_FADV_SEQUENTIAL
        }
        (FadviseHint::Random, _) | (FadviseHint::Auto, Pattern::Random) => libc::POSIX_FADV_RANDOM,
    };
    // SAFETY: advisory call on an owned descriptor.
    unsafe { libc::posix_fadvise(fd, 0, 0, advice) };
}

/// Whether the job removes the files it creates: what it says (`unlink=`), else the run's
/// way (sinkrate's sessions remove them, bench keeps them as fio does); never with --keep.
pub(super) fn removes_its_files(setup: &WorkerSetup) -> bool {
    use crate::runner::MadeFiles;
    match (setup.made_files, setup.job.options.unlink) {
        (MadeFiles::Kept, _) => false,
        (_, Some(explicit)) => explicit,
        (MadeFiles::Removed, None) => true,
        (MadeFiles::KeptUnlessUnlinked, None) => false,
    }
}

/// The end of the job's use of one file: the last job of the run to use a file the run
/// made removes it, or an earlier run's kept file, when the job removes its files; a file
/// it leaves is listed as kept (a user's file that was there is neither).
fn give_up(
    setup: &WorkerSetup,
    plan: &PlannedFile,
    created: bool,
    remove: bool,
    outcome: &mut WorkerOutcome,
) {
    let path = &plan.path;
    let last = setup.shared_files.release(path, created);
    let ours = created || plan.kept_from_earlier || plan.existing_size.is_none();
    if remove && last {
        let removed = if plan.kept_from_earlier {
            sinkrate_sys::kept::remove(path).unwrap_or(false)
        } else {
            sinkrate_sys::owned::remove(path).unwrap_or(false)
        };
        if removed {
            outcome.removed_files.push(path.clone());
        }
        sinkrate_sys::owned::forget(path);
    } else if !remove && ours && path.exists() {
        // Still the run's to remove if it is killed before it ends; once every job is done
        // the run lists it as kept and lets it go.
        outcome.kept_files.push(path.clone());
    }
}

/// Removes the files this job created (or an earlier run kept), unless the job or the
/// user keeps them. A user's file that was there before the run is never removed.
pub(super) fn cleanup(setup: &WorkerSetup, files: &mut Vec<OpenFile>, outcome: &mut WorkerOutcome) {
    let remove = removes_its_files(setup);
    if !files.is_empty() {
        setup.debug.file("close files");
    }
    for f in files.drain(..) {
        let created = f.created;
        let path = f.plan.path.clone();
        let block = f.plan.is_block_device || f.plan.special;
        if f.fd >= 0 {
            setup.debug.file(format_args!(
                "fd close {}",
                crate::debug_trace::shown(&path)
            ));
        }
        let plan = f.plan.clone();
        drop(f);
        if block {
            continue;
        }
        give_up(setup, &plan, created, remove, outcome);
    }
}

/// A job that never opened its files still gives them up, as [`cleanup`] does.
pub(super) fn release_unopened(setup: &WorkerSetup, outcome: &mut WorkerOutcome) {
    let remove = removes_its_files(setup);
    for plan in setup
        .files
        .iter()
        .filter(|f| !f.is_block_device && !f.special)
    {
        give_up(setup, plan, false, remove, outcome);
    }
}
