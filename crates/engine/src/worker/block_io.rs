//! A block-I/O job from start to end: open, run the loop, final syncs, the honest flush of
//! buffered writes, and the results.

use sinkrate_jobspec::options::{Engine, SteadyMetric, SyncMode};
use sinkrate_model::{FlushResult, LatencyTargetResult, SteadyStateResult};
use sinkrate_stats::LatencyRecorder;

use super::choose::BlockSizes;
use super::io_loop::Loop;
use super::monitors::sample_period_ns;
use super::monitors::steady_state_criterion;
use super::open::cleanup;
use super::open::open_files;
use super::shares;
use super::thread_rusage;
use super::WorkerOutcome;
use super::WorkerSetup;
use super::SAMPLE_PERIOD_NS;
use crate::backend;
use crate::buffers::Contents;
use crate::error::EngineError;
use crate::logs::{JobLogs, Window};
use crate::progress::Phase;
use crate::rng::Rng;

pub(super) fn run_block_io(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let seed = job_seed(setup);
    // As fio's job threads: prio/prioclass is the thread's own priority, which the kernel
    // gives every I/O issued without one of its own.
    if let Some(ioprio) = o.priorities.job_ioprio() {
        super::priority::set_thread_ioprio(ioprio).map_err(|e| {
            EngineError::job(
                &o.name,
                format!("cannot set the I/O priority (prioclass/prio, ioprio 0x{ioprio:04x}): {e}"),
            )
        })?;
    }
    // Joined before the files are laid out, as fio's jobs join at their start: a job of the
    // flow that is still laying out holds the others back instead of leaving them alone.
    let flow = setup.flow.clone().map(|group| {
        crate::flow::FlowMember::join(group, o.coordination.flow, o.coordination.flow_sleep)
    });
    let depth = if o.ioengine.is_async() || o.ioengine == Engine::Null {
        o.iodepth.max(1)
    } else {
        1
    };
    let mut backend = start_backend(setup, depth)?;
    let replay = replay_cursor(o)?;
    let mut rng = Rng::new(seed);
    let mut files = Vec::with_capacity(setup.files.len());
    let opened = open_files(setup, outcome, &mut rng, backend.as_mut(), &mut files)
        .and_then(|()| JobLogs::open(o, setup.job_number, setup.unix_start_ms));
    let mut logs = match opened {
        Ok(logs) => logs,
        Err(e) => {
            for i in 0..files.len() {
                backend.detach_file(i);
            }
            cleanup(setup, &mut files, outcome);
            return Err(e);
        }
    };
    if let Some(t) = &mut logs.iolog {
        let now = setup.clock.now_ns();
        for f in &files {
            t.file_event(now, &f.plan.path, "add");
            t.file_event(now, &f.plan.path, "open");
        }
    }
    if let Some(ticket) = &setup.start_gate {
        ticket.ready_and_wait(&setup.stop);
    }
    let now = setup.clock.now_ns();
    let mut lp = new_loop(
        setup,
        Started {
            files,
            logs,
            rng,
            seed,
            depth,
            flow,
            replay,
            now,
        },
    );
    if !lp.ramping {
        lp.begin_measured(now);
    } else {
        setup.progress.set_phase(Phase::Ramping);
    }
    let cpu_before = thread_rusage();
    let helpers_before = backend.helper_cpu_ns();
    let loop_result = if depth > 1 {
        lp.run_queued(backend.as_mut(), depth)
    } else {
        lp.run_sync(backend.as_mut())
    };
    if let Err((errno, text)) = loop_result {
        lp.error = Some((errno, text));
    }
    end_of_job(&mut lp, backend.as_mut());
    save_verify_state(setup, &mut lp, seed, outcome);
    let end = lp.clock.now_ns();
    let cpu_after = thread_rusage();
    let helpers_after = backend.helper_cpu_ns();
    let runtime = end.saturating_sub(lp.start_ns).max(1);
    lp.finish_samples(end);
    outcome.result.flush = flush_buffered_writes(setup, &mut lp, backend.as_mut(), runtime);
    store_results(&mut lp, outcome, runtime);
    let res = &mut outcome.result;
    if let (Some(a), Some(b)) = (cpu_before, cpu_after) {
        let used = b.since(&a);
        let usr = used.user_ns + helpers_after.0.saturating_sub(helpers_before.0);
        let sys = used.system_ns + helpers_after.1.saturating_sub(helpers_before.1);
        res.usr_cpu_pct = 100.0 * usr as f64 / runtime as f64;
        res.sys_cpu_pct = 100.0 * sys as f64 / runtime as f64;
        res.ctx_switches = used.context_switches;
        res.minor_faults = used.minor_faults;
        res.major_faults = used.major_faults;
    }
    let mut logs = std::mem::take(&mut lp.logs);
    if let Some(t) = &mut logs.iolog {
        let now = lp.clock.now_ns();
        for f in &lp.files {
            t.file_event(now, &f.plan.path, "close");
        }
    }
    let finished_logs = logs.finish();
    for i in 0..lp.files.len() {
        backend.detach_file(i);
    }
    setup
        .debug
        .io_event(format_args!("close ioengine {}", o.ioengine.fio_name()));
    drop(backend);
    cleanup(setup, &mut lp.files, outcome);
    outcome.log_files = finished_logs?;
    Ok(())
}

/// verify_state_save: the job's write state, saved as it ends (after its verify phase, as
/// fio's). A state that cannot be saved fails the job: a later verify_state_load would
/// otherwise check against an older run's.
fn save_verify_state(setup: &WorkerSetup, lp: &mut Loop, seed: u64, outcome: &mut WorkerOutcome) {
    let (Some(path), Some(v)) = (&setup.verify_state.save_to, &lp.verify) else {
        return;
    };
    let o = &setup.job.options;
    let state = v.write_state(&o.name, setup.verify_state.index, lp.files.len(), seed);
    match crate::verify_state::save(path, &state) {
        Ok(note) => outcome.notices.push(note),
        Err(why) => {
            lp.error.get_or_insert((libc::EIO, why));
        }
    }
}

/// The seed of the job's generators.
fn job_seed(setup: &WorkerSetup) -> u64 {
    let o = &setup.job.options;
    // fio: randrepeat makes every generator repeat; allrandrepeat does so even without it.
    if o.randrepeat || o.behaviour.allrandrepeat {
        o.randseed.wrapping_add(setup.job_number as u64 * 7919)
    } else {
        setup.clock.now_ns() ^ std::process::id() as u64
    }
}

/// The engine's backend: offload's submitter threads, an NBD connection or the engine's own.
fn start_backend(
    setup: &WorkerSetup,
    depth: u32,
) -> Result<Box<dyn backend::Backend>, EngineError> {
    let o = &setup.job.options;
    let made = if o.coordination.offload {
        backend::Offload::new(depth, setup.clock, o.ioengine == Engine::Null)
            .map(|b| Box::new(b) as Box<dyn backend::Backend>)
    } else if let (Engine::Nbd, Some(uri)) = (o.ioengine, &o.uri) {
        backend::Nbd::connect(uri).map(|b| Box::new(b) as Box<dyn backend::Backend>)
    } else {
        backend::for_engine(o.ioengine, depth)
    };
    made.map_err(|e| {
        EngineError::job(
            &o.name,
            format!("cannot start ioengine={}: {e}", o.ioengine.fio_name()),
        )
    })
}

/// A read_iolog job's trace, ready to replay.
fn replay_cursor(
    o: &sinkrate_jobspec::JobOptions,
) -> Result<Option<super::replaying::ReplayCursor>, EngineError> {
    // The trace was read and checked when the run was prepared; read again here, where the
    // job's I/Os are made.
    Ok(match &o.read_iolog {
        Some(path) => {
            let redirect = o.replay_redirect.as_deref().map(std::path::Path::new);
            let trace = crate::replay::Trace::load(std::path::Path::new(path), redirect)
                .map_err(|e| EngineError::job(&o.name, e))?;
            Some(super::replaying::ReplayCursor::new(
                trace,
                !o.replay_no_stall,
            ))
        }
        None => None,
    })
}

/// What the job has when its loop starts.
struct Started {
    files: Vec<super::open::OpenFile>,
    logs: JobLogs,
    rng: Rng,
    seed: u64,
    depth: u32,
    flow: Option<crate::flow::FlowMember>,
    replay: Option<super::replaying::ReplayCursor>,
    now: u64,
}

/// The job's loop, every counter at zero and every clock at `now`.
fn new_loop(setup: &WorkerSetup, started: Started) -> Loop<'_> {
    let o = &setup.job.options;
    let Started {
        files,
        logs,
        rng,
        seed,
        depth,
        flow,
        replay,
        now,
    } = started;
    // A replay ends with its trace, not with a pass over the files.
    let pass_bytes = match replay {
        Some(_) => u64::MAX,
        None => o
            .io_size
            .unwrap_or_else(|| files.iter().map(|f| f.plan.region_len).sum()),
    };
    let ramp_ns = o.ramp_time.as_nanos() as u64;
    Loop {
        o,
        clock: setup.clock,
        contents: {
            let blocks = pass_bytes / o.bs[1].max(1);
            // dedupe_global: one working set for every job of the run.
            let set_seed = if o.buffer_shape.dedupe_global {
                o.randseed
            } else {
                seed ^ 0x5eed
            };
            Contents::from_options(o, blocks, set_seed)
        },
        verify: crate::fio_verify::VerifyState::from_options(o),
        bs: [
            BlockSizes::for_direction(o, 0),
            BlockSizes::for_direction(o, 1),
            BlockSizes::for_direction(o, 2),
        ],
        files,
        next_file: 0,
        file_ios: 0,
        file_bytes: 0,
        pass_bytes,
        pass_issued: 0,
        pass_cut_short: false,
        passes_done: 0,
        start_ns: now,
        ramp_end_ns: now + ramp_ns,
        end_ns: None,
        ramping: ramp_ns > 0,
        results: Default::default(),
        tally: Default::default(),
        rate_floor_marks: [None; 3],
        issued_total: [0; 3],
        issued_bytes: [0; 3],
        rate_next_ns: [now; 3],
        rate_anchor_ns: now,
        rate_anchor_counts: [0; 3],
        rate_anchor_bytes: [0; 3],
        writes_since_sync: 0,
        sync_due: None,
        range_sync: o
            .sync_file_range
            .map(|c| super::range_sync::RangeSync::new(c, setup.files.len())),
        sync_file_ranges: 0,
        sync: LatencyRecorder::new(),
        think: super::pacing::ThinkCounts::new(o, now),
        next_sample_ns: now + sample_period_ns(o),
        last_sample_ns: now,
        ss_samples: Vec::new(),
        ss_next_ns: now + o.ss_interval.as_nanos().max(1) as u64,
        ss_window_value: 0.0,
        ss_lat: (0, 0),
        ss_on_lat: o.ss.is_some_and(|s| s.metric == SteadyMetric::Lat),
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
        debug: setup.debug,
        stop: &setup.stop,
        error: None,
        depth_hist: [0; 7],
        submit_hist: [0; 7],
        complete_hist: [0; 7],
        rng,
        bs_rngs: block_size_generators(o, seed),
        random_seed: seed,
        sequencer_ios: 0,
        flow,
        strided: o.zones.strided(),
        ignored_errors: (0, 0),
        filled: None,
        bad_blocks: (0, None),
        replay,
        command_prio: super::priority::CommandPriority::new(&o.priorities, seed),
        job_ioprio: o.priorities.job_ioprio().unwrap_or(0),
        prio_latency: super::priority::PriorityLatency::new(&o.priorities, o.lat_percentiles),
        records_slat: o.submits_apart() && !o.behaviour.disable_slat,
        saved_writes: setup.verify_state.loaded.clone(),
        rwmix: (o.rw.direction == sinkrate_jobspec::options::Direction::Mixed)
            .then(|| super::rwmix::RwMix::new(o, setup.job_number, seed)),
    }
}

/// The per-direction block-size generators (see `Loop::bs_rngs`).
fn block_size_generators(o: &sinkrate_jobspec::JobOptions, seed: u64) -> [Rng; 3] {
    let read = seed ^ 0x6273_5f72_6561_6400;
    let write = if o.verify.is_some() {
        read
    } else {
        seed ^ 0x6273_5f77_7269_7400
    };
    let trim = if o.rw.direction == sinkrate_jobspec::options::Direction::TrimWrite {
        write
    } else {
        seed ^ 0x6273_5f74_7269_6d00
    };
    [Rng::new(read), Rng::new(write), Rng::new(trim)]
}

/// End-of-job syncs (they count in the job's runtime, as in fio), then verify's read-back.
fn end_of_job(lp: &mut Loop, backend: &mut dyn backend::Backend) {
    let o = lp.o;
    if lp.error.is_none() && (o.end_fsync || o.fsync_on_close) && o.rw.writes() {
        for i in (0..lp.files.len()).filter(|&i| lp.files[i].plan.takes_syncs) {
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
    if lp.error.is_none() {
        if let Err(e) = lp.verify_at_end(backend) {
            lp.error = Some(e);
        }
    }
}

/// Buffered writes still in the page cache at the end: flushed and timed, so that the
/// job's rate can be set beside what the device took (sinkrate's honest flush).
fn flush_buffered_writes(
    setup: &WorkerSetup,
    lp: &mut Loop,
    backend: &mut dyn backend::Backend,
    runtime: u64,
) -> Option<FlushResult> {
    let o = lp.o;
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
    if !buffered_writes || lp.error.is_some() {
        return None;
    }
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
    Some(FlushResult {
        footprint_bytes: lp.tally[1].bytes.min(written_regions),
        unwritten_at_end_bytes: unwritten,
        flush_ns,
        device_bytes_per_s: lp.tally[1].bytes as f64 * 1e9 / (runtime + flush_ns) as f64,
    })
}

/// The loop's tallies, histograms and states into the job's result.
fn store_results(lp: &mut Loop, outcome: &mut WorkerOutcome, runtime: u64) {
    let o = lp.o;
    for (d, tally) in lp.tally.iter().enumerate() {
        let r = &mut lp.results[d];
        r.io_bytes = tally.bytes;
        r.total_ios = tally.ios;
        r.short_ios = tally.short;
        r.runtime_ns = if tally.ios > 0 { runtime } else { 0 };
    }
    if let Some(p) = lp.prio_latency.take() {
        for (ioprio, per_dir) in p.by_prio {
            for (d, latency) in per_dir.into_iter().enumerate() {
                lp.results[d]
                    .prios
                    .push(sinkrate_model::PriorityLatency { ioprio, latency });
            }
        }
    }
    let [read, write, trim] = std::mem::take(&mut lp.results);
    let res = &mut outcome.result;
    res.read = read;
    res.write = write;
    res.trim = trim;
    (res.total_err, res.first_error) = lp.ignored_errors;
    if let Some((errno, offset)) = lp.filled {
        outcome.notices.push(format!(
            "job '{}': the storage is full: {} at offset {offset} after {} written (fill_device)",
            o.name,
            sinkrate_jobspec::error_policy::errno_name(errno).unwrap_or("ENOSPC"),
            sinkrate_units::fio::bytes_iec(lp.tally[backend::IoDir::Write.index()].bytes as f64)
        ));
    }
    res.sync = std::mem::take(&mut lp.sync);
    res.sync_file_ranges = lp.sync_file_ranges;
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
    if let Some(first) = lp.bad_blocks.1.take() {
        let n = lp.bad_blocks.0;
        let method = o.verify.map_or("", |m| m.fio_name());
        lp.error.get_or_insert((
            libc::EILSEQ,
            format!("verify={method}: {n} bad block(s) read; the first: {first}"),
        ));
    }
    if let Some((errno, text)) = lp.error.take() {
        res.error = errno;
        res.error_text = Some(text);
    }
}
