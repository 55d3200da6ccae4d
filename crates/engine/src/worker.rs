//! One job's life: open and lay out its files, run the I/O loop (synchronous or queued),
//! apply rate limits, think time, fsyncs, steady-state and latency-target rules, then flush,
//! close and clean up. Everything measured lands in a [`JobResult`].

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sinkrate_jobspec::options::{
    Engine, Fallocate, Pattern, RateProcess, SteadyMetric, SyncMode, ThinktimeBlocksType,
};
use sinkrate_jobspec::{Job, JobOptions};
use sinkrate_model::{
    batch_bucket, iodepth_bucket, DirectionResult, FlushResult, JobResult, LatencyTargetResult,
    SteadyStateResult,
};
use sinkrate_stats::LatencyRecorder;

use crate::backend::{self, Backend, Completion, IoRequest, Submitted};
use crate::buffers::{AlignedBuf, Contents};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::files::PlannedFile;
use crate::logs::{JobLogs, Window};
use crate::progress::{JobProgress, Phase};
use crate::rng::{Permutation, Rng};

/// fio's default bandwidth/IOPS averaging period.
const SAMPLE_PERIOD_NS: u64 = 500_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// What the runner hands a worker.
pub struct WorkerSetup {
    pub job: Job,
    pub job_number: u32,
    pub files: Vec<PlannedFile>,
    pub clock: Clock,
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<JobProgress>,
    pub force_device_write: bool,
    pub keep_files: bool,
    pub unix_start_ms: u64,
    pub read_meminfo: fn() -> Option<u64>,
}

/// What a worker reports besides the results.
#[derive(Default)]
pub struct WorkerOutcome {
    pub result: JobResult,
    pub notices: Vec<String>,
    pub direct_fell_back: bool,
    pub removed_files: Vec<std::path::PathBuf>,
    pub log_files: Vec<std::path::PathBuf>,
}

struct OpenFile {
    fd: RawFd,
    plan: PlannedFile,
    created: bool,
    seq_pos: [u64; 2],
    perm: Option<Permutation>,
    written: bool,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: closing a descriptor this struct owns.
            unsafe { libc::close(self.fd) };
        }
    }
}

/// Per-direction block sizes and how to choose among them.
enum BlockSizes {
    Fixed(u64),
    Range { lo: u64, hi: u64, align: u64 },
    Split(Vec<(u64, f64)>),
}

impl BlockSizes {
    fn for_direction(o: &JobOptions, d: usize) -> BlockSizes {
        if let Some(split) = &o.bssplit {
            let mut cumulative = 0.0;
            let table = split[d]
                .iter()
                .map(|(bs, pct)| {
                    cumulative += pct;
                    (*bs, cumulative)
                })
                .collect();
            return BlockSizes::Split(table);
        }
        if let Some(range) = &o.bsrange {
            let (lo, hi) = range[d];
            let align = if lo % 512 == 0 { 512 } else { 1 };
            return BlockSizes::Range { lo, hi, align };
        }
        BlockSizes::Fixed(o.bs[d])
    }

    #[inline]
    fn pick(&self, rng: &mut Rng) -> u64 {
        match self {
            BlockSizes::Fixed(bs) => *bs,
            BlockSizes::Range { lo, hi, align } => {
                let steps = (hi - lo) / align + 1;
                lo + rng.below(steps) * align
            }
            BlockSizes::Split(table) => {
                let x = rng.unit() * 100.0;
                table
                    .iter()
                    .find(|(_, c)| x < *c)
                    .or(table.last())
                    .map(|e| e.0)
                    .unwrap_or(4096)
            }
        }
    }

    fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(bs) => *bs,
            BlockSizes::Range { hi, .. } => *hi,
            BlockSizes::Split(t) => t.iter().map(|e| e.0).max().unwrap_or(4096),
        }
    }
}

/// Counters of the measured phase for one direction, kept locally in the hot loop.
#[derive(Default)]
struct Tally {
    bytes: u64,
    ios: u64,
    short: u64,
    window_bytes: u64,
    window_ios: u64,
}

struct Loop<'a> {
    o: &'a JobOptions,
    clock: Clock,
    rng: Rng,
    contents: Contents,
    bs: [BlockSizes; 2],
    files: Vec<OpenFile>,
    next_file: usize,
    /// Bytes per pass (io_size, or the sum of the files' regions).
    pass_bytes: u64,
    pass_issued: u64,
    passes_done: u32,
    /// Measured-phase start (after ramp), run-clock ns.
    start_ns: u64,
    ramp_end_ns: u64,
    end_ns: Option<u64>,
    ramping: bool,
    results: [DirectionResult; 2],
    tally: [Tally; 2],
    issued_total: [u64; 2],
    rate_next_ns: [u64; 2],
    rate_anchor_ns: u64,
    rate_anchor_counts: [u64; 2],
    writes_since_sync: u64,
    sync_due: Option<usize>,
    sync: LatencyRecorder,
    blocks_since_think: u64,
    next_sample_ns: u64,
    last_sample_ns: u64,
    ss_samples: Vec<f64>,
    ss_next_ns: u64,
    ss_window_value: f64,
    ss_result: Option<SteadyStateResult>,
    lt_window: LatencyRecorder,
    lt_window_end: u64,
    lt: Option<LatencyTargetResult>,
    depth_cap: u32,
    logs: JobLogs,
    log_window: Window,
    log_window_end: u64,
    progress: &'a JobProgress,
    stop: &'a AtomicBool,
    error: Option<(i32, String)>,
    depth_hist: [u64; 7],
    submit_hist: [u64; 7],
    complete_hist: [u64; 7],
}

pub fn run_job(setup: WorkerSetup) -> WorkerOutcome {
    let mut outcome = WorkerOutcome::default();
    let o = setup.job.options.clone();
    let job_started = setup.clock.now_ns();
    outcome.result.name = o.name.clone();
    outcome.result.group = setup.job.group;
    outcome.result.job_number = setup.job_number;
    outcome.result.pid = std::process::id();
    outcome.result.options = o.clone();
    outcome.result.written_options = setup.job.written.clone();

    if !o.startdelay.is_zero() {
        let until = setup.clock.now_ns() + o.startdelay.as_nanos() as u64;
        while setup.clock.now_ns() < until && !setup.stop.load(Ordering::Relaxed) {
            setup
                .clock
                .sleep_until((setup.clock.now_ns() + 50_000_000).min(until));
        }
    }
    if setup.stop.load(Ordering::Relaxed) {
        setup.progress.set_phase(Phase::Done);
        return outcome;
    }
    setup.progress.set_phase(Phase::Preparing);
    let result = match o.ioengine {
        Engine::Filecreate | Engine::Filestat | Engine::Filedelete => {
            run_file_operations(&setup, &mut outcome)
        }
        _ => run_block_io(&setup, &mut outcome),
    };
    match result {
        Err(_) if setup.stop.load(Ordering::Relaxed) => {}
        Err(e) => {
            outcome.result.error = libc::EIO;
            outcome.result.error_text = Some(e.to_string());
        }
        Ok(()) => {}
    }
    outcome.result.elapsed_ns = setup.clock.now_ns() - job_started;
    setup.progress.set_phase(Phase::Done);
    outcome
}

fn open_flags(o: &JobOptions, writes: bool, direct: bool) -> libc::c_int {
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

fn sys_open(path: &std::path::Path, flags: libc::c_int) -> std::io::Result<RawFd> {
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

/// Writes the file's region so a read job has data to read (fio's "laying out IO file").
fn lay_out(
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
            existing_size: None,
        },
        created: false,
        seq_pos: [0; 2],
        perm: None,
        written: false,
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
    Ok(())
}

fn preallocate(fd: RawFd, mode: Fallocate, size: u64) {
    // Failure to preallocate is not an error in fio either: the writes allocate instead.
    // SAFETY: plain syscalls on an owned descriptor.
    unsafe {
        match mode {
            Fallocate::None => {}
            Fallocate::Native => {
                libc::fallocate(fd, 0, 0, size as libc::off_t);
            }
            Fallocate::Posix => {
                libc::posix_fallocate(fd, 0, size as libc::off_t);
            }
            Fallocate::Keep => {
                libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, size as libc::off_t);
            }
            Fallocate::Truncate => {
                libc::ftruncate(fd, size as libc::off_t);
            }
        }
    }
}

fn open_files(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
    rng: &mut Rng,
    backend: &mut dyn Backend,
    out: &mut Vec<OpenFile>,
) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let writes = o.rw.writes();
    if o.ioengine == Engine::Null {
        out.push(OpenFile {
            fd: -1,
            plan: setup.files[0].clone(),
            created: false,
            seq_pos: [0; 2],
            perm: None,
            written: false,
        });
        return Ok(());
    }
    for plan in &setup.files {
        let path = &plan.path;
        let existed = plan.existing_size.is_some();
        let size_now = plan.existing_size.unwrap_or(0);
        if !plan.is_block_device && !plan.special {
            let needs_data = (o.rw.reads() || o.overwrite || o.ioengine == Engine::Mmap && !writes)
                && size_now < plan.needed_size();
            if needs_data {
                if let Err(e) = lay_out(path, size_now, plan.needed_size(), rng, &setup.stop) {
                    // A half-written file sinkrate created is sinkrate's to remove.
                    if !existed && !setup.keep_files {
                        let _ = std::fs::remove_file(path);
                    }
                    return Err(e);
                }
            }
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
        let file = OpenFile {
            fd,
            plan: plan.clone(),
            created: !existed,
            seq_pos: [0; 2],
            perm: None,
            written: false,
        };
        if writes && !plan.is_block_device && !plan.special && size_now < plan.needed_size() {
            if o.ioengine == Engine::Mmap {
                preallocate(fd, Fallocate::Truncate, plan.needed_size());
            } else if o.ioengine != Engine::Ftruncate && o.ioengine != Engine::Falloc {
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
        if o.pre_read && o.rw.reads() {
            // SAFETY: advisory read-ahead into the page cache on an owned descriptor.
            unsafe {
                libc::readahead(
                    fd,
                    plan.region_start as libc::off64_t,
                    plan.region_len as usize,
                )
            };
        }
        backend
            .attach_file(out.len(), fd, plan.needed_size(), writes)
            .map_err(|e| EngineError::io(path, e))?;
        out.push(file);
    }
    Ok(())
}

fn run_block_io(setup: &WorkerSetup, outcome: &mut WorkerOutcome) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let seed = if o.randrepeat {
        o.randseed.wrapping_add(setup.job_number as u64 * 7919)
    } else {
        setup.clock.now_ns() ^ std::process::id() as u64
    };
    let mut rng = Rng::new(seed);
    let depth = if o.ioengine.is_async() || o.ioengine == Engine::Null {
        o.iodepth.max(1)
    } else {
        1
    };
    let mut backend = backend::for_engine(o.ioengine, depth).map_err(|e| {
        EngineError::job(
            &o.name,
            format!("cannot start ioengine={}: {e}", o.ioengine.fio_name()),
        )
    })?;
    let mut files = Vec::with_capacity(setup.files.len());
    let opened = open_files(setup, outcome, &mut rng, backend.as_mut(), &mut files)
        .and_then(|()| JobLogs::open(o, setup.job_number, setup.unix_start_ms));
    let logs = match opened {
        Ok(logs) => logs,
        Err(e) => {
            for i in 0..files.len() {
                backend.detach_file(i);
            }
            cleanup(setup, &mut files, outcome);
            return Err(e);
        }
    };
    let pass_bytes = o
        .io_size
        .unwrap_or_else(|| files.iter().map(|f| f.plan.region_len).sum());
    let now = setup.clock.now_ns();
    let ramp_ns = o.ramp_time.as_nanos() as u64;
    let mut lp = Loop {
        o,
        clock: setup.clock,
        contents: Contents::from_options(o),
        bs: [
            BlockSizes::for_direction(o, 0),
            BlockSizes::for_direction(o, 1),
        ],
        files,
        next_file: 0,
        pass_bytes,
        pass_issued: 0,
        passes_done: 0,
        start_ns: now,
        ramp_end_ns: now + ramp_ns,
        end_ns: None,
        ramping: ramp_ns > 0,
        results: Default::default(),
        tally: Default::default(),
        issued_total: [0; 2],
        rate_next_ns: [now; 2],
        rate_anchor_ns: now,
        rate_anchor_counts: [0; 2],
        writes_since_sync: 0,
        sync_due: None,
        sync: LatencyRecorder::new(),
        blocks_since_think: 0,
        next_sample_ns: now + sample_period_ns(o),
        last_sample_ns: now,
        ss_samples: Vec::new(),
        ss_next_ns: now + NS_PER_S,
        ss_window_value: 0.0,
        ss_result: None,
        lt_window: LatencyRecorder::new(),
        lt_window_end: now + o.latency_window.as_nanos().max(1) as u64,
        lt: o.latency_target.map(|_| LatencyTargetResult {
            depth: 1,
            windows: 0,
            windows_met: 0,
        }),
        depth_cap: if o.latency_target.is_some() { 1 } else { depth },
        logs,
        log_window: Window::default(),
        log_window_end: now
            + if o.log_avg_msec > 0 {
                o.log_avg_msec * 1_000_000
            } else {
                SAMPLE_PERIOD_NS
            },
        progress: &setup.progress,
        stop: &setup.stop,
        error: None,
        depth_hist: [0; 7],
        submit_hist: [0; 7],
        complete_hist: [0; 7],
        rng,
    };
    if !lp.ramping {
        lp.begin_measured(now);
    } else {
        setup.progress.set_phase(Phase::Ramping);
    }
    let cpu_before = thread_rusage();
    let loop_result = if depth > 1 {
        lp.run_queued(backend.as_mut(), depth)
    } else {
        lp.run_sync(backend.as_mut())
    };
    if let Err((errno, text)) = loop_result {
        lp.error = Some((errno, text));
    }
    // End-of-job syncs count in the job's runtime, as in fio.
    if lp.error.is_none() && (o.end_fsync || o.fsync_on_close) && o.rw.writes() {
        for i in (0..lp.files.len()).filter(|&i| !lp.files[i].plan.special) {
            let t0 = lp.clock.now_ns();
            if let Err(e) = backend.sync_file(i, lp.files[i].fd, false) {
                lp.error = Some((
                    e.raw_os_error().unwrap_or(libc::EIO),
                    format!("fsync of {}: {e}", lp.files[i].plan.path.display()),
                ));
                break;
            }
            lp.sync.record(lp.clock.now_ns() - t0);
        }
    }
    let end = lp.clock.now_ns();
    let cpu_after = thread_rusage();
    let runtime = end.saturating_sub(lp.start_ns).max(1);
    lp.finish_samples(end);

    let buffered_writes = o.rw.writes()
        && !o.direct
        && o.sync == SyncMode::None
        && o.fsync == 0
        && o.fdatasync == 0
        && !o.end_fsync
        && !o.fsync_on_close
        && !matches!(
            o.ioengine,
            Engine::Null | Engine::Ftruncate | Engine::Falloc
        )
        && lp.tally[1].bytes > 0
        && lp.files.iter().any(|f| !f.plan.special);
    if buffered_writes && lp.error.is_none() {
        setup.progress.set_phase(Phase::Flushing);
        let unwritten = (setup.read_meminfo)();
        let t0 = lp.clock.now_ns();
        for i in 0..lp.files.len() {
            let _ = backend.sync_file(i, lp.files[i].fd, false);
        }
        let flush_ns = lp.clock.now_ns() - t0;
        let written_regions: u64 = lp
            .files
            .iter()
            .filter(|f| f.written)
            .map(|f| f.plan.region_len)
            .sum();
        outcome.result.flush = Some(FlushResult {
            footprint_bytes: lp.tally[1].bytes.min(written_regions),
            unwritten_at_end_bytes: unwritten,
            flush_ns,
            device_bytes_per_s: lp.tally[1].bytes as f64 * 1e9 / (runtime + flush_ns) as f64,
        });
    }

    for (d, tally) in lp.tally.iter().enumerate() {
        let r = &mut lp.results[d];
        r.io_bytes = tally.bytes;
        r.total_ios = tally.ios;
        r.short_ios = tally.short;
        r.runtime_ns = if tally.ios > 0 { runtime } else { 0 };
    }
    let [read, write] = std::mem::take(&mut lp.results);
    let res = &mut outcome.result;
    res.read = read;
    res.write = write;
    res.sync = std::mem::take(&mut lp.sync);
    if let (Some(a), Some(b)) = (cpu_before, cpu_after) {
        res.usr_cpu_pct = 100.0 * (b.0 - a.0) as f64 / runtime as f64;
        res.sys_cpu_pct = 100.0 * (b.1 - a.1) as f64 / runtime as f64;
        res.ctx_switches = b.2 - a.2;
        res.minor_faults = b.3 - a.3;
        res.major_faults = b.4 - a.4;
    }
    res.iodepth_level = shares(&lp.depth_hist);
    res.iodepth_submit = shares(&lp.submit_hist);
    res.iodepth_complete = shares(&lp.complete_hist);
    // A job that ended before its steady-state window filled did not attain it.
    res.steady_state = lp.ss_result.take().or_else(|| {
        o.ss.map(|ss| SteadyStateResult {
            criterion: steady_state_criterion(&ss),
            ..SteadyStateResult::default()
        })
    });
    if let Some(mut lt) = lp.lt.take() {
        lt.depth = lp.depth_cap;
        res.latency_target = Some(lt);
    }
    if let Some((errno, text)) = lp.error.take() {
        res.error = errno;
        res.error_text = Some(text);
    }
    let logs = std::mem::take(&mut lp.logs);
    let finished_logs = logs.finish();
    for i in 0..lp.files.len() {
        backend.detach_file(i);
    }
    drop(backend);
    cleanup(setup, &mut lp.files, outcome);
    outcome.log_files = finished_logs?;
    Ok(())
}

fn shares(h: &[u64; 7]) -> [f64; 7] {
    let total: u64 = h.iter().sum();
    let mut out = [0.0; 7];
    if total > 0 {
        for (o, v) in out.iter_mut().zip(h) {
            *o = 100.0 * *v as f64 / total as f64;
        }
    }
    out
}

/// Removes the files this job created, unless the job or the user keeps them. Files that
/// existed before the run are never removed.
fn cleanup(setup: &WorkerSetup, files: &mut Vec<OpenFile>, outcome: &mut WorkerOutcome) {
    let o = &setup.job.options;
    let remove = match o.unlink {
        Some(explicit) => explicit && !setup.keep_files,
        None => !setup.keep_files,
    };
    for f in files.drain(..) {
        let created = f.created;
        let path = f.plan.path.clone();
        let block = f.plan.is_block_device;
        drop(f);
        if remove && created && !block && std::fs::remove_file(&path).is_ok() {
            outcome.removed_files.push(path);
        }
    }
}

/// (user ns, system ns, context switches, minor faults, major faults) of this thread.
fn thread_rusage() -> Option<(u64, u64, u64, u64, u64)> {
    // SAFETY: getrusage fills the struct; zeroed is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } < 0 {
        return None;
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * NS_PER_S + tv.tv_usec as u64 * 1000;
    Some((
        ns(ru.ru_utime),
        ns(ru.ru_stime),
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        ru.ru_minflt as u64,
        ru.ru_majflt as u64,
    ))
}

type LoopError = (i32, String);

/// Bandwidth/IOPS sampling period: fio's 500 ms, or log_avg_msec when that is shorter.
fn sample_period_ns(o: &JobOptions) -> u64 {
    if o.log_avg_msec > 0 {
        (o.log_avg_msec * 1_000_000).min(SAMPLE_PERIOD_NS)
    } else {
        SAMPLE_PERIOD_NS
    }
}

fn steady_state_criterion(ss: &sinkrate_jobspec::options::SteadyState) -> String {
    let metric = match ss.metric {
        SteadyMetric::Iops => "iops",
        SteadyMetric::Bw => "bw",
    };
    let limit = if ss.percent {
        ss.limit * 100.0
    } else {
        ss.limit
    };
    let unit = if ss.percent { "%" } else { "" };
    format!(
        "{metric}{}:{limit}{unit}",
        if ss.slope { "_slope" } else { "" }
    )
}

/// Submits the one queued I/O of an async backend and waits for it.
fn wait_one(backend: &mut dyn Backend) -> Result<i64, LoopError> {
    let os = |e: std::io::Error| {
        (
            e.raw_os_error().unwrap_or(libc::EIO),
            format!("submit: {e}"),
        )
    };
    backend.commit().map_err(os)?;
    let mut out = Vec::with_capacity(1);
    while out.is_empty() {
        backend.reap(1, &mut out).map_err(os)?;
    }
    Ok(out[0].result)
}

/// One planned I/O.
#[derive(Clone, Copy)]
struct Planned {
    write: bool,
    file: usize,
    offset: u64,
    len: usize,
}

impl<'a> Loop<'a> {
    fn begin_measured(&mut self, now: u64) {
        self.ramping = false;
        self.start_ns = now;
        self.end_ns = self.o.runtime.map(|r| now + r.as_nanos() as u64);
        self.results = Default::default();
        self.tally = Default::default();
        self.sync.reset();
        self.next_sample_ns = now + sample_period_ns(self.o);
        self.last_sample_ns = now;
        self.ss_next_ns = now + NS_PER_S;
        self.depth_hist = [0; 7];
        self.submit_hist = [0; 7];
        self.complete_hist = [0; 7];
        self.progress.started_ns.store(now, Ordering::Relaxed);
        self.progress.set_phase(Phase::Running);
    }

    /// Whether the job should stop issuing: interrupted, out of time, out of passes, or
    /// out of I/Os.
    #[inline]
    fn should_stop(&mut self, now: u64) -> bool {
        if self.stop.load(Ordering::Relaxed)
            || self.error.is_some()
            || self.ss_result.as_ref().is_some_and(|s| s.attained)
        {
            return true;
        }
        if let Some(limit) = self.o.number_ios {
            if !self.ramping && self.tally[0].ios + self.tally[1].ios >= limit {
                return true;
            }
        }
        if self.ramping {
            if now >= self.ramp_end_ns {
                self.begin_measured(now);
            }
            return false;
        }
        if let Some(end) = self.end_ns {
            if now >= end {
                return true;
            }
        }
        if self.pass_issued >= self.pass_bytes {
            self.passes_done += 1;
            self.pass_issued = 0;
            for f in &mut self.files {
                f.seq_pos = [0; 2];
                if let Some(p) = &mut f.perm {
                    p.restart();
                }
            }
            let time_based = self.o.time_based && self.end_ns.is_some();
            if !time_based && self.passes_done >= self.o.loops {
                return true;
            }
        }
        false
    }

    #[inline]
    fn plan_next(&mut self) -> Planned {
        let write = match self.o.rw.direction {
            sinkrate_jobspec::options::Direction::Read => false,
            sinkrate_jobspec::options::Direction::Write => true,
            sinkrate_jobspec::options::Direction::Mixed => {
                self.rng.unit() * 100.0 >= self.o.rwmixread
            }
        };
        let d = usize::from(write);
        let bs = self.bs[d].pick(&mut self.rng);
        let nfiles = self.files.len();
        let file = self.next_file;
        self.next_file = if file + 1 >= nfiles { 0 } else { file + 1 };
        let remaining = self.pass_bytes - self.pass_issued;
        let f = &mut self.files[file];
        let region = f.plan.region_len;
        let (offset, mut len) = match self.o.rw.pattern {
            Pattern::Sequential => {
                let mut pos = f.seq_pos[d];
                if pos >= region {
                    pos = 0;
                }
                let len = bs.min(region - pos);
                f.seq_pos[d] = pos + len;
                (pos, len)
            }
            Pattern::Random => {
                let align = self
                    .o
                    .blockalign
                    .map(|a| a[d])
                    .filter(|a| *a > 0)
                    .unwrap_or(bs);
                let fixed = matches!(self.bs[d], BlockSizes::Fixed(_));
                if fixed && !self.o.norandommap && region / bs > 0 {
                    let nblocks = region / bs;
                    let perm = f.perm.get_or_insert_with(|| {
                        Permutation::new(nblocks, self.o.randseed ^ file as u64)
                    });
                    let idx = match perm.next_index() {
                        Some(i) => i,
                        None => {
                            perm.restart();
                            perm.next_index().unwrap_or(0)
                        }
                    };
                    (idx * bs, bs)
                } else {
                    let slots = region.saturating_sub(bs) / align + 1;
                    (self.rng.below(slots) * align, bs.min(region))
                }
            }
        };
        if !self.ramping && len > remaining && remaining > 0 {
            len = remaining;
        }
        Planned {
            write,
            file,
            offset: f.plan.region_start + offset,
            len: len as usize,
        }
    }

    /// Sleeps until the rate limit lets direction `d` issue; returns false if the job ended
    /// while waiting.
    fn wait_for_rate(&mut self, d: usize, len: u64) -> bool {
        let o = self.o;
        if o.rate[d] == 0 && o.rate_iops[d] == 0 {
            return true;
        }
        let now = self.clock.now_ns();
        let due = match o.rate_process {
            RateProcess::Linear => {
                let issued = self.issued_total[d] - self.rate_anchor_counts[d];
                let by_iops = if o.rate_iops[d] > 0 {
                    issued as u128 * NS_PER_S as u128 / o.rate_iops[d] as u128
                } else {
                    0
                };
                let by_bytes = if o.rate[d] > 0 {
                    // issued counts I/Os; bytes are tracked through the tallies plus ramp.
                    let bytes = self.rate_bytes(d);
                    bytes as u128 * NS_PER_S as u128 / o.rate[d] as u128
                } else {
                    0
                };
                self.rate_anchor_ns + by_iops.max(by_bytes) as u64
            }
            RateProcess::Poisson => {
                let due = self.rate_next_ns[d];
                let mean_gap = if o.rate_iops[d] > 0 {
                    NS_PER_S as f64 / o.rate_iops[d] as f64
                } else {
                    len as f64 * NS_PER_S as f64 / o.rate[d] as f64
                };
                let u = self.rng.unit().max(1e-12);
                self.rate_next_ns[d] =
                    due.max(now.saturating_sub(NS_PER_S)) + (-u.ln() * mean_gap) as u64;
                due
            }
        };
        while self.clock.now_ns() < due {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = self.clock.now_ns();
            if let Some(end) = self.end_ns {
                if now >= end {
                    return false;
                }
            }
            let until = due.min(now + 100_000_000);
            self.clock.sleep_until(until);
        }
        true
    }

    fn rate_bytes(&self, d: usize) -> u64 {
        // Bytes issued since the anchor: measured tally, which begin_measured resets along
        // with the anchor.
        self.tally[d].bytes
    }

    fn think(&mut self) {
        let o = self.o;
        if o.thinktime.is_zero() {
            return;
        }
        self.blocks_since_think += 1;
        if self.blocks_since_think < o.thinktime_blocks {
            return;
        }
        self.blocks_since_think = 0;
        let spin = o.thinktime_spin.min(o.thinktime).as_nanos() as u64;
        if spin > 0 {
            self.clock.spin(spin);
        }
        let rest = o.thinktime.as_nanos() as u64 - spin;
        if rest > 0 {
            let until = self.clock.now_ns() + rest;
            self.clock.sleep_until(until);
        }
    }

    /// Accounts one finished I/O. Returns an error for a failed I/O or a broken max_latency.
    #[inline]
    fn complete(
        &mut self,
        p: &Planned,
        result: i64,
        prep_ns: u64,
        submit_ns: u64,
        done_ns: u64,
    ) -> Result<(), LoopError> {
        if result < 0 {
            let errno = (-result) as i32;
            let what = if p.write { "write" } else { "read" };
            return Err((
                errno,
                format!(
                    "{what} of {} bytes at offset {} of {}: {}",
                    p.len,
                    p.offset,
                    self.files[p.file].plan.path.display(),
                    std::io::Error::from_raw_os_error(errno)
                ),
            ));
        }
        let d = usize::from(p.write);
        let n = result as u64;
        if p.write {
            self.files[p.file].written = true;
        }
        if self.ramping {
            return Ok(());
        }
        let clat = done_ns - submit_ns;
        let lat = done_ns - prep_ns;
        let r = &mut self.results[d];
        r.clat.record(clat);
        r.lat.record(lat);
        if submit_ns > prep_ns {
            r.slat.record(submit_ns - prep_ns);
        }
        let t = &mut self.tally[d];
        t.bytes += n;
        t.ios += 1;
        t.window_bytes += n;
        t.window_ios += 1;
        if n < p.len as u64 {
            t.short += 1;
        }
        if p.write {
            self.progress.write_bytes.store(t.bytes, Ordering::Relaxed);
            self.progress.write_ios.store(t.ios, Ordering::Relaxed);
        } else {
            self.progress.read_bytes.store(t.bytes, Ordering::Relaxed);
            self.progress.read_ios.store(t.ios, Ordering::Relaxed);
        }
        if self.logs.wants_latency() {
            self.log_latency(d, clat, lat, submit_ns.saturating_sub(prep_ns), p, done_ns);
        }
        if self.lt.is_some() {
            self.lt_window.record(clat);
        }
        if let Some(max) = self.o.max_latency {
            if clat > max.as_nanos() as u64 {
                return Err((
                    libc::ETIMEDOUT,
                    format!(
                        "an I/O took {} us, above max_latency={} us",
                        clat / 1000,
                        max.as_micros()
                    ),
                ));
            }
        }
        if done_ns >= self.next_sample_ns {
            self.take_samples(done_ns);
        }
        Ok(())
    }

    fn log_latency(&mut self, d: usize, clat: u64, lat: u64, slat: u64, p: &Planned, now: u64) {
        let t_ms = (now - self.start_ns) / 1_000_000 + self.logs.time_base_ms;
        let write = d == 1;
        if self.logs.avg_msec == 0 {
            if let Some(l) = &mut self.logs.clat {
                l.entry(t_ms, clat, write, p.len as u64, p.offset);
            }
            if let Some(l) = &mut self.logs.lat {
                l.entry(t_ms, lat, write, p.len as u64, p.offset);
            }
            if let Some(l) = &mut self.logs.slat {
                l.entry(t_ms, slat, write, p.len as u64, p.offset);
            }
        } else {
            self.log_window.sum[d] += clat as u128;
            self.log_window.count[d] += 1;
        }
    }

    /// Closes the current sampling interval(s) up to `now`.
    fn take_samples(&mut self, now: u64) {
        let span = now - self.last_sample_ns;
        if span == 0 {
            return;
        }
        for d in 0..2 {
            let t = &mut self.tally[d];
            let active = match d {
                0 => self.o.rw.reads(),
                _ => self.o.rw.writes(),
            };
            if active {
                let bw = t.window_bytes as f64 * 1e9 / span as f64;
                let iops = t.window_ios as f64 * 1e9 / span as f64;
                self.results[d].bw_samples.push(bw);
                self.results[d].iops_samples.push(iops);
                let t_ms = (now - self.start_ns) / 1_000_000 + self.logs.time_base_ms;
                if self.logs.avg_msec == 0 || now >= self.log_window_end {
                    if let Some(l) = &mut self.logs.bw {
                        l.entry(t_ms, (bw / 1024.0) as u64, d == 1, 0, 0);
                    }
                    if let Some(l) = &mut self.logs.iops {
                        l.entry(t_ms, iops as u64, d == 1, 0, 0);
                    }
                }
                if self.logs.avg_msec > 0
                    && now >= self.log_window_end
                    && self.log_window.count[d] > 0
                {
                    let avg = (self.log_window.sum[d] / self.log_window.count[d] as u128) as u64;
                    if let Some(l) = &mut self.logs.clat {
                        l.entry(t_ms, avg, d == 1, 0, 0);
                    }
                    if let Some(l) = &mut self.logs.lat {
                        l.entry(t_ms, avg, d == 1, 0, 0);
                    }
                }
                if d == 0 || !self.o.rw.reads() || self.o.rw.writes() {
                    self.ss_window_value += match self.o.ss.map(|s| s.metric) {
                        Some(SteadyMetric::Bw) => t.window_bytes as f64,
                        _ => t.window_ios as f64,
                    };
                }
            }
            t.window_bytes = 0;
            t.window_ios = 0;
        }
        if self.logs.avg_msec > 0 && now >= self.log_window_end {
            self.log_window = Window::default();
            self.log_window_end = now + self.logs.avg_msec * 1_000_000;
        }
        self.last_sample_ns = now;
        self.next_sample_ns = now + sample_period_ns(self.o);
        if self.o.ss.is_some() && now >= self.ss_next_ns {
            self.steady_state_tick(now);
        }
        if self.lt.is_some() && now >= self.lt_window_end {
            self.latency_target_tick(now);
        }
        self.check_rate_min(now);
    }

    fn check_rate_min(&mut self, now: u64) {
        let o = self.o;
        let elapsed = now - self.start_ns;
        if elapsed < NS_PER_S {
            return;
        }
        for d in 0..2 {
            let active = if d == 0 { o.rw.reads() } else { o.rw.writes() };
            if active && o.rate_min[d] > 0 {
                let rate = self.tally[d].bytes as f64 * 1e9 / elapsed as f64;
                if rate < o.rate_min[d] as f64 && self.error.is_none() {
                    self.error = Some((
                        libc::EIO,
                        format!(
                            "bandwidth {:.0} B/s fell below rate_min={} B/s",
                            rate, o.rate_min[d]
                        ),
                    ));
                }
            }
        }
    }

    fn steady_state_tick(&mut self, now: u64) {
        let Some(ss) = self.o.ss else { return };
        self.ss_next_ns = now + NS_PER_S;
        let elapsed = now - self.start_ns;
        let value = std::mem::take(&mut self.ss_window_value);
        if elapsed <= self.o.ss_ramp.as_nanos() as u64 {
            return;
        }
        let window = self
            .o
            .ss_dur
            .map(|d| d.as_secs().max(1) as usize)
            .unwrap_or(30);
        self.ss_samples.push(value);
        if self.ss_samples.len() > window {
            self.ss_samples.remove(0);
        }
        let mean = self.ss_samples.iter().sum::<f64>() / self.ss_samples.len() as f64;
        let max_dev = self
            .ss_samples
            .iter()
            .map(|v| (v - mean).abs())
            .fold(0.0, f64::max);
        let slope = sinkrate_stats::slope(&self.ss_samples);
        let measure = if ss.slope { slope.abs() } else { max_dev };
        let limit = if ss.percent {
            ss.limit * mean
        } else {
            ss.limit
        };
        let attained = self.ss_samples.len() >= window && mean > 0.0 && measure <= limit;
        self.ss_result = Some(SteadyStateResult {
            attained,
            criterion: steady_state_criterion(&ss),
            max_deviation: max_dev,
            slope,
            samples: self.ss_samples.clone(),
        });
    }

    fn latency_target_tick(&mut self, now: u64) {
        let (Some(target), Some(lt)) = (self.o.latency_target, self.lt.as_mut()) else {
            return;
        };
        self.lt_window_end = now + self.o.latency_window.as_nanos().max(1) as u64;
        if self.lt_window.count() == 0 {
            return;
        }
        let p = self
            .lt_window
            .value_at_percentile(self.o.latency_percentile);
        lt.windows += 1;
        if p <= target.as_nanos() as u64 {
            lt.windows_met += 1;
            self.depth_cap = (self.depth_cap + 1).min(self.o.iodepth.max(1));
        } else {
            self.depth_cap = (self.depth_cap * 3 / 4).max(1);
        }
        self.lt_window.reset();
    }

    fn finish_samples(&mut self, end: u64) {
        if end > self.last_sample_ns + SAMPLE_PERIOD_NS / 2 {
            self.take_samples(end);
        }
    }

    /// After a write: fsync/fdatasync every N writes, as the job asks.
    /// Counts a write toward fsync=/fdatasync=; the sync itself runs before the next I/O
    /// (as fio does, so the last write of a job is not followed by one).
    fn count_write_for_sync(&mut self, p: &Planned) {
        let every = self.o.fsync.max(self.o.fdatasync);
        if !p.write || every == 0 || self.files[p.file].plan.special {
            return;
        }
        self.writes_since_sync += 1;
        if self.writes_since_sync >= every {
            self.writes_since_sync = 0;
            self.sync_due = Some(p.file);
        }
    }

    fn sync_if_due(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        let Some(file) = self.sync_due.take() else {
            return Ok(());
        };
        let t0 = self.clock.now_ns();
        backend
            .sync_file(file, self.files[file].fd, self.o.fdatasync > 0)
            .map_err(|e| (e.raw_os_error().unwrap_or(libc::EIO), format!("fsync: {e}")))?;
        if !self.ramping {
            self.sync.record(self.clock.now_ns() - t0);
        }
        Ok(())
    }

    fn run_sync(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        let max_bs = self.bs[0].max().max(self.bs[1].max()) as usize;
        let mut buf = AlignedBuf::new(max_bs);
        self.contents
            .initial_fill(buf.as_mut_slice(), &mut self.rng);
        let buf_ptr = buf.as_mut_ptr();
        let mut now = self.clock.now_ns();
        loop {
            if self.should_stop(now) {
                break;
            }
            self.sync_if_due(backend)?;
            let p = self.plan_next();
            let d = usize::from(p.write);
            if !self.wait_for_rate(d, p.len as u64) {
                break;
            }
            if p.write {
                self.contents
                    .before_write(buf.as_mut_slice(), p.len, p.offset, &mut self.rng);
            }
            let req = IoRequest {
                fd: self.files[p.file].fd,
                file_index: p.file,
                write: p.write,
                offset: p.offset,
                len: p.len,
                buf: buf_ptr,
                tag: 0,
            };
            let t0 = self.clock.now_ns();
            let result = match backend.submit(&req) {
                Ok(Submitted::Done(n)) => n as i64,
                // An async engine at iodepth=1 (libaio with iodepth=1, as in fsx.fio).
                Ok(Submitted::Queued) => wait_one(backend)?,
                Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
            };
            now = self.clock.now_ns();
            self.issued_total[d] += 1;
            self.pass_issued += p.len as u64;
            if !self.ramping {
                self.depth_hist[0] += 1;
            }
            self.complete(&p, result, t0, t0, now)?;
            self.count_write_for_sync(&p);
            self.think();
        }
        Ok(())
    }

    fn run_queued(&mut self, backend: &mut dyn Backend, depth: u32) -> Result<(), LoopError> {
        let depth = depth as usize;
        let max_bs = self.bs[0].max().max(self.bs[1].max()) as usize;
        let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(max_bs)).collect();
        for b in &mut bufs {
            self.contents.initial_fill(b.as_mut_slice(), &mut self.rng);
        }
        let mut slots: Vec<(Planned, u64, u64)> = vec![
            (
                Planned {
                    write: false,
                    file: 0,
                    offset: 0,
                    len: 0
                },
                0,
                0
            );
            depth
        ];
        let mut free: Vec<usize> = (0..depth).rev().collect();
        let mut batch: Vec<usize> = Vec::with_capacity(depth);
        let mut completions: Vec<Completion> = Vec::with_capacity(depth);
        let batch_submit = (self.o.iodepth_batch_submit.max(1) as usize).min(depth);
        let mut inflight = 0usize;
        let mut issuing = true;
        let rate_limited = self.o.rate.iter().chain(&self.o.rate_iops).any(|r| *r > 0);
        loop {
            let now = self.clock.now_ns();
            if issuing && self.should_stop(now) {
                issuing = false;
            }
            if issuing {
                self.sync_if_due(backend)?;
            }
            while issuing && inflight + batch.len() < depth.min(self.depth_cap as usize) {
                let p = self.plan_next();
                let d = usize::from(p.write);
                if (self.o.rate[d] > 0 || self.o.rate_iops[d] > 0)
                    && !self.wait_for_rate(d, p.len as u64)
                {
                    issuing = false;
                    break;
                }
                let Some(slot) = free.pop() else { break };
                if p.write {
                    self.contents.before_write(
                        bufs[slot].as_mut_slice(),
                        p.len,
                        p.offset,
                        &mut self.rng,
                    );
                }
                let req = IoRequest {
                    fd: self.files[p.file].fd,
                    file_index: p.file,
                    write: p.write,
                    offset: p.offset,
                    len: p.len,
                    buf: bufs[slot].as_mut_ptr(),
                    tag: slot as u64,
                };
                let prep = self.clock.now_ns();
                slots[slot] = (p, prep, prep);
                self.issued_total[d] += 1;
                self.pass_issued += p.len as u64;
                match backend.submit(&req) {
                    Ok(Submitted::Queued) => {
                        batch.push(slot);
                        if self.o.thinktime_blocks_type == ThinktimeBlocksType::Issue {
                            self.think();
                        }
                    }
                    Ok(Submitted::Done(n)) => {
                        let done = self.clock.now_ns();
                        free.push(slot);
                        self.complete(&p, n as i64, prep, prep, done)?;
                    }
                    Err(e) => {
                        return Err((
                            e.raw_os_error().unwrap_or(libc::EIO),
                            format!("submit: {e}"),
                        ))
                    }
                }
                if batch.len() >= batch_submit {
                    self.commit(backend, &mut batch, &mut slots, &mut inflight)?;
                }
                if self.should_stop(self.clock.now_ns()) {
                    issuing = false;
                }
            }
            if !batch.is_empty() {
                self.commit(backend, &mut batch, &mut slots, &mut inflight)?;
            }
            if inflight == 0 {
                if issuing {
                    continue;
                }
                break;
            }
            let full = inflight >= depth.min(self.depth_cap as usize);
            // As fio does: reap only once the queue is full (or no more I/O will be issued),
            // which keeps the device at the requested depth. A rate-limited job also looks
            // for completions without waiting, so its latencies are not held back.
            let min = if !issuing || full {
                (self.o.iodepth_batch_complete_min.max(1) as usize).min(inflight)
            } else if rate_limited {
                0
            } else {
                continue;
            };
            completions.clear();
            backend
                .reap(min, &mut completions)
                .map_err(|e| (e.raw_os_error().unwrap_or(libc::EIO), format!("reap: {e}")))?;
            if completions.is_empty() {
                continue;
            }
            let done = self.clock.now_ns();
            if !self.ramping {
                self.complete_hist[batch_bucket(completions.len() as u32)] += 1;
            }
            for c in completions.drain(..) {
                let slot = c.tag as usize;
                let (p, prep, submit) = slots[slot];
                inflight -= 1;
                free.push(slot);
                self.complete(&p, c.result, prep, submit, done)?;
                self.count_write_for_sync(&p);
                if self.o.thinktime_blocks_type == ThinktimeBlocksType::Complete {
                    self.think();
                }
            }
        }
        Ok(())
    }

    fn commit(
        &mut self,
        backend: &mut dyn Backend,
        batch: &mut Vec<usize>,
        slots: &mut [(Planned, u64, u64)],
        inflight: &mut usize,
    ) -> Result<(), LoopError> {
        backend.commit().map_err(|e| {
            (
                e.raw_os_error().unwrap_or(libc::EIO),
                format!("submit: {e}"),
            )
        })?;
        let now = self.clock.now_ns();
        *inflight += batch.len();
        if !self.ramping {
            self.submit_hist[batch_bucket(batch.len() as u32)] += 1;
            self.depth_hist[iodepth_bucket(*inflight as u32)] += batch.len() as u64;
        }
        for &slot in batch.iter() {
            slots[slot].2 = now;
        }
        batch.clear();
        Ok(())
    }
}

/// filecreate / filestat / filedelete: each "I/O" is one file operation, timed.
fn run_file_operations(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let clock = setup.clock;
    let mut created_here: Vec<std::path::PathBuf> = Vec::new();
    if o.ioengine != Engine::Filecreate {
        // stat and delete need files: create the missing ones first, as fio does.
        for f in &setup.files {
            if f.existing_size.is_none() {
                let fd = sys_open(&f.path, libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC)
                    .map_err(|e| EngineError::io(&f.path, e))?;
                // SAFETY: closing the descriptor just opened.
                unsafe { libc::close(fd) };
                created_here.push(f.path.clone());
            }
        }
    }
    let start = clock.now_ns();
    setup.progress.started_ns.store(start, Ordering::Relaxed);
    setup.progress.set_phase(Phase::Running);
    let cpu_before = thread_rusage();
    let mut rec = DirectionResult::default();
    let write_dir = o.ioengine == Engine::Filecreate || o.ioengine == Engine::Filedelete;
    for (i, f) in setup.files.iter().enumerate() {
        if setup.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(rt) = o.runtime {
            if clock.now_ns() - start >= rt.as_nanos() as u64 {
                break;
            }
        }
        let c = CString::new(f.path.as_os_str().as_bytes())
            .map_err(|_| EngineError::path(&f.path, "NUL in path"))?;
        let t0 = clock.now_ns();
        // SAFETY: syscalls on a valid C string; results checked.
        let r = unsafe {
            match o.ioengine {
                Engine::Filecreate => {
                    let fd = libc::open(
                        c.as_ptr(),
                        libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC,
                        0o644 as libc::c_uint,
                    );
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    fd
                }
                Engine::Filestat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(c.as_ptr(), &mut st)
                }
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
        rec.clat.record(t1 - t0);
        rec.lat.record(t1 - t0);
        rec.total_ios += 1;
        outcome.result.files_done = i as u64 + 1;
        if o.ioengine == Engine::Filecreate && f.existing_size.is_none() {
            created_here.push(f.path.clone());
        }
        if o.ioengine == Engine::Filedelete {
            created_here.retain(|p| p != &f.path);
        }
    }
    let end = clock.now_ns();
    rec.runtime_ns = (end - start).max(1);
    if let (Some(a), Some(b)) = (cpu_before, thread_rusage()) {
        outcome.result.usr_cpu_pct = 100.0 * (b.0 - a.0) as f64 / rec.runtime_ns as f64;
        outcome.result.sys_cpu_pct = 100.0 * (b.1 - a.1) as f64 / rec.runtime_ns as f64;
        outcome.result.ctx_switches = b.2 - a.2;
    }
    outcome.result.iodepth_level = [100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    if write_dir {
        outcome.result.write = rec;
    } else {
        outcome.result.read = rec;
    }
    let remove = o.unlink.unwrap_or(true) && !setup.keep_files;
    if remove {
        for p in created_here {
            if std::fs::remove_file(&p).is_ok() {
                outcome.removed_files.push(p);
            }
        }
    }
    Ok(())
}
