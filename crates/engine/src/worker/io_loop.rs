//! The measured I/O loop: synchronous (one I/O at a time) and queued (io_uring, or null
//! with iodepth > 1), with the accounting of every completion.

use std::sync::atomic::Ordering;

use sinkrate_jobspec::error_policy::ErrorKind;
use sinkrate_jobspec::JobOptions;
use sinkrate_model::{
    batch_bucket, iodepth_bucket, DirectionResult, LatencyTargetResult, SteadyStateResult,
};
use sinkrate_stats::LatencyRecorder;

use super::choose::BlockSizes;
use super::monitors::sample_period_ns;
use super::open::OpenFile;
use crate::backend::{Backend, Completion, IoDir, IoRequest, Submitted};
use crate::buffers::Contents;
use crate::clock::Clock;
use crate::logs::{JobLogs, Window};
use crate::progress::{JobProgress, Phase};
use crate::rng::Rng;
use sinkrate_platform::buf::AlignedBuf;
use std::sync::atomic::AtomicBool;

/// The queued loop's I/Os in flight: a buffer per slot, what each slot holds (the I/O,
/// when it was prepared, when submitted), the free slots, the batch not yet committed.
pub(super) struct Queue {
    bufs: Vec<AlignedBuf>,
    slots: Vec<(Planned, u64, u64)>,
    free: Vec<usize>,
    batch: Vec<usize>,
    completions: Vec<Completion>,
    inflight: usize,
}

impl Queue {
    /// Whether an I/O in flight (submitted or batched) overlaps `p` where either writes:
    /// serialize_overlap holds `p` back until it completes, as fio's.
    fn overlaps_in_flight(&self, p: &Planned) -> bool {
        let end = p.offset + p.len as u64;
        (0..self.slots.len())
            .filter(|slot| !self.free.contains(slot))
            .map(|slot| &self.slots[slot].0)
            .any(|x| {
                x.file == p.file
                    && (x.dir.is_write() || p.dir.is_write())
                    && x.offset < end
                    && p.offset < x.offset + x.len as u64
            })
    }

    /// After an engine error the ring's state is unknown: the buffers must outlive any
    /// I/O the kernel may still do, so they are leaked rather than freed.
    fn abandon(self) {
        std::mem::forget(self.bufs);
    }
}

/// Counters of the measured phase for one direction, kept locally in the hot loop.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) bytes: u64,
    pub(super) ios: u64,
    pub(super) short: u64,
    pub(super) window_bytes: u64,
    pub(super) window_ios: u64,
}

pub(super) struct Loop<'a> {
    pub(super) o: &'a JobOptions,
    pub(super) clock: Clock,
    pub(super) rng: Rng,
    /// Block sizes are drawn from one generator per direction, as fio's: with verify the
    /// read's and the write's are seeded alike (a later read job draws the sizes the
    /// writing job drew, block for block), and trimwrite's trim is seeded as its write.
    pub(super) bs_rngs: [Rng; 3],
    /// The job's seed (randseed and the job's number with randrepeat, the clock without):
    /// the random map's order starts from it, so clones and runs differ as fio's do.
    pub(super) random_seed: u64,
    /// Random-mode I/Os planned so far: `rw=randread:N` draws a random offset on every Nth.
    pub(super) sequencer_ios: u64,
    pub(super) contents: Contents,
    pub(super) verify: Option<crate::fio_verify::VerifyState>,
    pub(super) bs: [BlockSizes; 3],
    pub(super) files: Vec<OpenFile>,
    pub(super) next_file: usize,
    /// I/Os and bytes to the current file since it was chosen (file_service_type).
    pub(super) file_ios: u64,
    pub(super) file_bytes: u64,
    /// Bytes per pass (io_size, or the sum of the files' regions).
    pub(super) pass_bytes: u64,
    pub(super) pass_issued: u64,
    /// The pass ends before its bytes are done: a sequential job with holes whose next
    /// block would cross the end of its file (fio's does not wrap then, it ends the pass).
    pub(super) pass_cut_short: bool,
    pub(super) passes_done: u32,
    /// Measured-phase start (after ramp), run-clock ns.
    pub(super) start_ns: u64,
    pub(super) ramp_end_ns: u64,
    pub(super) end_ns: Option<u64>,
    pub(super) ramping: bool,
    pub(super) results: [DirectionResult; 3],
    pub(super) tally: [Tally; 3],
    /// Where each direction's rate_min / rate_iops_min window began.
    pub(super) rate_floor_marks: [Option<super::monitors::RateMark>; 3],
    pub(super) issued_total: [u64; 3],
    pub(super) issued_bytes: [u64; 3],
    pub(super) rate_next_ns: [u64; 3],
    pub(super) rate_anchor_ns: u64,
    /// `issued_total` at the anchor (the job's start, then the end of ramp_time): rate
    /// pacing and number_ios count I/Os issued from there, so I/Os in flight at a queue
    /// depth do not carry number_ios past its limit.
    pub(super) rate_anchor_counts: [u64; 3],
    pub(super) rate_anchor_bytes: [u64; 3],
    pub(super) writes_since_sync: u64,
    pub(super) sync_due: Option<usize>,
    pub(super) range_sync: Option<super::range_sync::RangeSync>,
    /// sync_file_range calls made (their latency is in `sync`, as fio counts it).
    pub(super) sync_file_ranges: u64,
    pub(super) sync: LatencyRecorder,
    pub(super) think: super::pacing::ThinkCounts,
    pub(super) next_sample_ns: u64,
    pub(super) last_sample_ns: u64,
    pub(super) ss_samples: Vec<f64>,
    pub(super) ss_next_ns: u64,
    pub(super) ss_window_value: f64,
    /// Sum and count of the latencies of the current steady-state interval (ss=lat).
    pub(super) ss_lat: (u128, u64),
    pub(super) ss_on_lat: bool,
    pub(super) ss_result: Option<SteadyStateResult>,
    pub(super) lt_window: LatencyRecorder,
    pub(super) lt_window_end: u64,
    pub(super) lt: Option<LatencyTargetResult>,
    pub(super) depth_cap: u32,
    pub(super) logs: JobLogs,
    pub(super) log_window: Window,
    pub(super) log_window_end: u64,
    pub(super) progress: &'a JobProgress,
    /// --debug=io: each I/O's stages on standard output.
    pub(super) debug: crate::debug_trace::DebugTrace,
    pub(super) stop: &'a AtomicBool,
    pub(super) error: Option<(i32, String)>,
    pub(super) depth_hist: [u64; 7],
    pub(super) submit_hist: [u64; 7],
    pub(super) complete_hist: [u64; 7],
    /// fio's flow control: the job's place among the jobs of its flow_id.
    pub(super) flow: Option<crate::flow::FlowMember>,
    /// zonemode=strided's zones, read once from the options.
    pub(super) strided: Option<sinkrate_jobspec::zones::Strided>,
    /// Whether submission latency is a figure of its own: not for a synchronous engine,
    /// even offloaded (fio then counts the wait for a submitter in lat only).
    pub(super) records_slat: bool,
    /// I/O errors gone on past (continue_on_error): how many, and the first one's errno.
    pub(super) ignored_errors: (u64, i32),
    /// fill_device: the write that found the storage full (its errno and offset).
    pub(super) filled: Option<(i32, u64)>,
    /// A read-only verify without verify_fatal: bad blocks found, and the first one's
    /// description (the job reads on, as fio's, and fails at its end).
    pub(super) bad_blocks: (u64, Option<String>),
    /// read_iolog: where the job is in its trace.
    pub(super) replay: Option<super::replaying::ReplayCursor>,
    /// cmdprio: which I/Os are issued with a priority of their own.
    pub(super) command_prio: Option<super::priority::CommandPriority>,
    /// The priority of the job's other I/Os (prio/prioclass; 0: none).
    pub(super) job_ioprio: u16,
    /// With cmdprio: latencies per priority (fio's `prios`).
    pub(super) prio_latency: Option<super::priority::PriorityLatency>,
    /// A job that reads and writes: the direction of each I/O, as fio's.
    pub(super) rwmix: Option<super::rwmix::RwMix>,
    /// verify_state_load: how far the writing job got; the reads stop there.
    pub(super) saved_writes: Option<sinkrate_formats::fio_verify_state::JobWriteState>,
}

pub(super) type LoopError = (i32, String);

/// Submits the one queued I/O of an async backend and waits for it.
/// Submits the one queued I/O and waits for it: its result, and when the kernel had it (the
/// end of its submission latency, as fio's slat).
pub(super) fn wait_one(backend: &mut dyn Backend, clock: &Clock) -> Result<(i64, u64), LoopError> {
    let os = |e: std::io::Error| {
        (
            e.raw_os_error().unwrap_or(libc::EIO),
            format!("submit: {e}"),
        )
    };
    backend.commit().map_err(os)?;
    let submitted = clock.now_ns();
    let mut out = Vec::with_capacity(1);
    while out.is_empty() {
        backend.reap(1, 1, &mut out).map_err(os)?;
    }
    Ok((
        out[0].result,
        out[0].times.map_or(submitted, |(issued, _)| issued),
    ))
}

/// One planned I/O.
#[derive(Clone, Copy)]
pub(super) struct Planned {
    pub(super) dir: IoDir,
    pub(super) file: usize,
    pub(super) offset: u64,
    pub(super) len: usize,
    /// The I/O's priority (the kernel's ioprio; 0: none of its own).
    pub(super) ioprio: u16,
}

impl Loop<'_> {
    pub(super) fn begin_measured(&mut self, now: u64) {
        self.ramping = false;
        self.start_ns = now;
        // Rate limits count from here, as the byte tallies do: no catching up the ramp.
        self.rate_anchor_ns = now;
        self.rate_anchor_counts = self.issued_total;
        self.rate_anchor_bytes = self.issued_bytes;
        self.rate_next_ns = [now; 3];
        self.end_ns = self.o.runtime.map(|r| now + r.as_nanos() as u64);
        self.results = Default::default();
        self.tally = Default::default();
        self.rate_floor_marks = [None; 3];
        self.sync.reset();
        if let Some(p) = &mut self.prio_latency {
            p.reset();
        }
        self.next_sample_ns = now + sample_period_ns(self.o);
        self.last_sample_ns = now;
        self.ss_next_ns = now + self.o.ss_interval.as_nanos().max(1) as u64;
        self.ss_lat = (0, 0);
        self.log_window = crate::logs::Window {
            start_ns: now,
            ..Default::default()
        };
        self.log_window_end = now + self.logs.avg_msec.max(1) * 1_000_000;
        self.depth_hist = [0; 7];
        self.submit_hist = [0; 7];
        self.complete_hist = [0; 7];
        self.progress.started_ns.store(now, Ordering::Relaxed);
        self.progress.set_phase(Phase::Running);
    }

    /// Whether the job should stop issuing: interrupted, out of time, out of passes, or
    /// out of I/Os.
    #[inline]
    pub(super) fn should_stop(&mut self, now: u64) -> bool {
        self.snapshot_if_wanted(now);
        if self.stop.load(Ordering::Relaxed)
            || self.error.is_some()
            || self.replay.as_ref().is_some_and(|r| r.done())
            || self.filled.is_some()
            || self.ss_result.as_ref().is_some_and(|s| s.attained)
        {
            return true;
        }
        if let Some(limit) = self.o.number_ios {
            let issued: u64 = self
                .issued_total
                .iter()
                .zip(&self.rate_anchor_counts)
                .map(|(total, anchor)| total - anchor)
                .sum();
            if !self.ramping && issued >= limit {
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
        if self.pass_issued >= self.pass_bytes || self.pass_cut_short {
            self.passes_done += 1;
            self.pass_issued = 0;
            self.pass_cut_short = false;
            for f in &mut self.files {
                f.seq_pos = [0; 3];
                if let Some(p) = &mut f.perm {
                    p.restart();
                }
                if let Some(m) = &mut f.random_map {
                    m.restart();
                }
            }
            let time_based = self.o.time_based && self.end_ns.is_some();
            if !time_based && self.passes_done >= self.o.loops {
                return true;
            }
        }
        false
    }

    /// --debug=io: one stage of an I/O, its buffer as fio's io_u.
    #[inline]
    fn trace_stages(&self, stages: &[&str], p: &Planned, buf: *const u8) {
        if self.debug.io {
            let path = &self.files[p.file].plan.path;
            for stage in stages {
                self.debug
                    .io(stage, buf, p.offset, p.len, p.dir.index(), path);
                // fio's queued engines have a prep step of their own, and say how it went.
                if *stage == "prep" && self.o.submits_apart() {
                    self.debug
                        .io_event(format_args!("prep: io_u {buf:p}: ret=0"));
                }
            }
        }
    }

    /// A planned I/O's request, its buffer filled first when it writes (the job's data,
    /// then a verify header): one way for the loop that waits on each I/O and the queue.
    #[inline]
    fn prepare(&mut self, p: &Planned, buf: &mut AlignedBuf, tag: u64) -> IoRequest {
        if p.dir.is_write() {
            self.contents
                .before_write(buf.as_mut_slice(), p.len, p.offset, &mut self.rng);
            if let Some(v) = &mut self.verify {
                v.stamp(&mut buf.as_mut_slice()[..p.len], p.file, p.offset);
            }
        }
        IoRequest {
            fd: self.files[p.file].fd,
            file_index: p.file,
            dir: p.dir,
            offset: p.offset,
            len: p.len,
            buf: buf.as_mut_ptr(),
            tag,
            ioprio: self.sqe_ioprio(p),
        }
    }

    /// The priority an I/O carries to the kernel: its own with cmdprio; otherwise none, and
    /// the thread's (prio/prioclass) applies.
    #[inline]
    fn sqe_ioprio(&self, p: &Planned) -> u16 {
        if self.command_prio.is_some() {
            p.ioprio
        } else {
            0
        }
    }

    /// verify_state_load: whether the read `p` goes past what the writing job completed
    /// (fio's verify_state_should_stop); the job's reads end there.
    fn past_saved_writes(&self, p: &Planned) -> bool {
        self.saved_writes.as_ref().is_some_and(|s| {
            p.dir == IoDir::Read
                && s.read_goes_past(
                    self.issued_total[IoDir::Read.index()],
                    p.file as u64,
                    p.offset,
                )
        })
    }

    /// Accounts one finished I/O. Returns an error for a failed I/O or a broken max_latency.
    #[inline]
    pub(super) fn complete(
        &mut self,
        p: &Planned,
        result: i64,
        prep_ns: u64,
        submit_ns: u64,
        done_ns: u64,
    ) -> Result<(), LoopError> {
        if result < 0 {
            let errno = (-result) as i32;
            if self.o.fill_device
                && p.dir == IoDir::Write
                && (errno == libc::ENOSPC || errno == libc::EDQUOT)
            {
                // As fio: the full storage ends the job, and the write that found it counts
                // as issued, without bytes.
                if !self.ramping {
                    let t = &mut self.tally[p.dir.index()];
                    t.ios += 1;
                    t.window_ios += 1;
                }
                self.filled.get_or_insert((errno, p.offset));
                return Ok(());
            }
            let kind = ErrorKind::of(p.dir == IoDir::Read, errno);
            if self.o.error_policy.non_fatal(kind, errno) {
                // As fio: the I/O counts as issued (total_ios, IOPS) but moves no bytes and
                // has no latency; the job goes on.
                if !self.ramping {
                    self.count_ignored_error(errno);
                    let t = &mut self.tally[p.dir.index()];
                    t.ios += 1;
                    t.window_ios += 1;
                }
                return Ok(());
            }
            let what = p.dir.name();
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
        let d = p.dir.index();
        let n = result as u64;
        if p.dir != IoDir::Read {
            self.files[p.file].written = true;
        }
        if p.dir == IoDir::Write {
            if let Some(v) = &mut self.verify {
                v.write_completed(p.file, p.offset);
            }
        }
        if self.ramping {
            return Ok(());
        }
        let clat = done_ns - submit_ns;
        let lat = done_ns - prep_ns;
        let r = &mut self.results[d];
        let b = &self.o.behaviour;
        if !b.disable_clat {
            r.clat.record(clat);
        }
        if !b.disable_lat {
            r.lat.record(lat);
        }
        if self.ss_on_lat {
            self.ss_lat.0 += lat as u128;
            self.ss_lat.1 += 1;
        }
        if submit_ns > prep_ns && self.records_slat {
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
        match p.dir {
            IoDir::Write => {
                self.progress.write_bytes.store(t.bytes, Ordering::Relaxed);
                self.progress.write_ios.store(t.ios, Ordering::Relaxed);
            }
            IoDir::Read => {
                self.progress.read_bytes.store(t.bytes, Ordering::Relaxed);
                self.progress.read_ios.store(t.ios, Ordering::Relaxed);
            }
            IoDir::Trim => {
                self.progress.trim_bytes.store(t.bytes, Ordering::Relaxed);
                self.progress.trim_ios.store(t.ios, Ordering::Relaxed);
            }
        }
        if let Some(prios) = &mut self.prio_latency {
            prios.record(d, p.ioprio, clat, lat);
        }
        if self.logs.per_io() {
            let slat = submit_ns.saturating_sub(prep_ns);
            self.log_io(d, [clat, lat, slat], n, p, done_ns);
        }
        if self.lt.is_some() {
            self.lt_window.record(clat);
            if done_ns >= self.lt_window_end {
                self.latency_target_tick(done_ns);
            }
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
            self.take_samples(done_ns, true);
        }
        Ok(())
    }

    /// write_iolog: the I/O as issued.
    #[inline]
    pub(super) fn trace_io(&mut self, p: &Planned, now: u64) {
        if let Some(t) = &mut self.logs.iolog {
            let path = &self.files[p.file].plan.path;
            t.io(now, path, p.dir.name(), p.offset, p.len as u64);
        }
    }

    pub(super) fn count_ignored_error(&mut self, errno: i32) {
        if self.ignored_errors.0 == 0 {
            self.ignored_errors.1 = errno;
        }
        self.ignored_errors.0 += 1;
    }

    /// Counts an issued I/O toward the pass: as fio, a trimwrite job's pass is its writes
    /// (each block is trimmed and then written).
    #[inline]
    pub(super) fn count_toward_pass(&mut self, p: &Planned) {
        if !(p.dir == IoDir::Trim && self.o.rw.writes()) {
            self.pass_issued += p.len as u64;
        }
    }

    /// Counts a write toward fsync=/fdatasync=; the sync itself runs before the next I/O
    /// (as fio does, so the last write of a job is not followed by one).
    pub(super) fn count_write_for_sync(&mut self, p: &Planned) {
        if !p.dir.is_write() || !self.files[p.file].plan.takes_syncs {
            return;
        }
        if let Some(r) = &mut self.range_sync {
            r.count_write(p.file, p.offset, p.len as u64);
        }
        let every = self.o.fsync.max(self.o.fdatasync);
        if every == 0 {
            return;
        }
        self.writes_since_sync += 1;
        if self.writes_since_sync >= every {
            self.writes_since_sync = 0;
            self.sync_due = Some(p.file);
        }
    }

    pub(super) fn sync_if_due(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        self.replay_syncs(backend)?;
        if let Some((file, offset, len)) = self.range_sync.as_mut().and_then(|r| r.take_due()) {
            let t0 = self.clock.now_ns();
            if let Some(t) = &mut self.logs.iolog {
                t.io(
                    t0,
                    &self.files[file].plan.path,
                    "sync_file_range",
                    offset,
                    len,
                );
            }
            if let Some(r) = &self.range_sync {
                r.sync(self.files[file].fd, offset, len).map_err(|e| {
                    (
                        e.raw_os_error().unwrap_or(libc::EIO),
                        format!("sync_file_range: {e}"),
                    )
                })?;
            }
            if !self.ramping {
                self.sync.record(self.clock.now_ns() - t0);
                self.sync_file_ranges += 1;
            }
        }
        let Some(file) = self.sync_due.take() else {
            return Ok(());
        };
        let t0 = self.clock.now_ns();
        if let Some(t) = &mut self.logs.iolog {
            // As fio's: a sync carries the offset of the file's last write, and no length.
            let last = self.files[file].last_start[IoDir::Write.index()];
            let what = if self.o.fdatasync > 0 {
                "datasync"
            } else {
                "sync"
            };
            let offset = if last == super::open::NO_START {
                0
            } else {
                last
            };
            t.io(t0, &self.files[file].plan.path, what, offset, 0);
        }
        backend
            .sync_file(file, self.files[file].fd, self.o.fdatasync > 0)
            .map_err(|e| (e.raw_os_error().unwrap_or(libc::EIO), format!("fsync: {e}")))?;
        if !self.ramping {
            self.sync.record(self.clock.now_ns() - t0);
        }
        Ok(())
    }

    /// Reads `blocks` back and checks them (fio's verify), counting the reads as the job's
    /// reads. The first bad block ends the job with EILSEQ, as in fio, unless
    /// continue_on_error goes on past verify errors (then each bad block is counted).
    pub(super) fn verify_blocks(
        &mut self,
        blocks: Vec<((usize, u64), crate::fio_verify::Written)>,
        buf: &mut AlignedBuf,
        backend: &mut dyn Backend,
    ) -> Result<(), LoopError> {
        for ((file, offset), w) in blocks {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            // A status report asked for while the job reads back answers with the reads
            // so far, as fio's counts its verify reads.
            self.snapshot_if_wanted(self.clock.now_ns());
            let len = w.len as usize;
            let fd = self.files[file].fd;
            let t0 = self.clock.now_ns();
            let result = if fd < 0 {
                // No descriptor (an NBD export, page_fault's memory): read through the
                // backend, which holds what the job wrote.
                read_one(backend, file, offset, len, buf)
            } else {
                // SAFETY: buf holds at least the largest block size, len of which is read
                // into it.
                let n =
                    unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), len, offset as libc::off_t) };
                if n < 0 {
                    -(std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO) as i64)
                } else {
                    n as i64
                }
            };
            let p = Planned {
                dir: IoDir::Read,
                file,
                offset,
                len,
                ioprio: self.job_ioprio,
            };
            self.complete(&p, result, t0, t0, self.clock.now_ns())?;
            let Some(v) = self.verify.as_ref() else {
                return Ok(());
            };
            let data = &buf.as_slice()[..result as usize];
            if let Some(why) = v.check(data, offset, w) {
                let why = self.dump_if_asked(file, offset, data, why);
                self.bad_block(file, offset, len, &why)?;
            }
        }
        Ok(())
    }

    /// verify_dump: the bad block's bytes as read go to `NAME.OFFSET.received` in the
    /// current directory, as fio's, under a name of their own (`NAME.OFFSET-2.received`
    /// when that is taken: a file already there is never written); what is wrong with the
    /// block then names the file.
    fn dump_if_asked(&self, file: usize, offset: u64, data: &[u8], why: String) -> String {
        if !self.o.verify_dump {
            return why;
        }
        let path = &self.files[file].plan.path;
        let name = path
            .file_name()
            .map_or_else(|| "block".into(), |n| n.to_string_lossy().into_owned());
        let dumped = sinkrate_sys::output::new_file(
            std::path::Path::new("."),
            &format!("{name}.{offset}"),
            "received",
            |_| Ok(data.to_vec()),
        );
        match dumped {
            Ok(at) => format!("{why}; the bytes read are in {}", at.display()),
            Err(e) => format!("{why}; the bytes read could not be kept: {e}"),
        }
    }

    /// A bad block ends the job with EILSEQ, as in fio, unless continue_on_error goes on
    /// past verify errors (then it is counted).
    fn bad_block(
        &mut self,
        file: usize,
        offset: u64,
        len: usize,
        why: &str,
    ) -> Result<(), LoopError> {
        if self
            .o
            .error_policy
            .non_fatal(ErrorKind::Verify, libc::EILSEQ)
        {
            self.count_ignored_error(libc::EILSEQ);
            return Ok(());
        }
        Err((
            libc::EILSEQ,
            format!(
                "verify={}: bad block at offset {offset} of {} (length {len}): {why}",
                self.o.verify.map_or("", |m| m.fio_name()),
                self.files[file].plan.path.display(),
            ),
        ))
    }

    /// A job that only reads, with verify: the block just read is checked as it arrives,
    /// as fio's verify of data written earlier.
    #[inline]
    pub(super) fn check_read(
        &mut self,
        p: &Planned,
        result: i64,
        data: &[u8],
    ) -> Result<(), LoopError> {
        let Some(v) = self.verify.as_ref().filter(|v| v.reads_only) else {
            return Ok(());
        };
        if result <= 0 || p.dir != IoDir::Read {
            return Ok(());
        }
        let Some(why) = v.check_read(&data[..result as usize], p.offset) else {
            return Ok(());
        };
        let why = self.dump_if_asked(p.file, p.offset, &data[..result as usize], why);
        let non_fatal = self
            .o
            .error_policy
            .non_fatal(ErrorKind::Verify, libc::EILSEQ);
        if self.o.verify_fatal || non_fatal {
            return self.bad_block(p.file, p.offset, p.len, &why);
        }
        // As fio: each bad block is told and the job reads on; unlike fio 3.33, the job
        // then fails (error 84) rather than reporting success over bad data.
        let (count, first) = &mut self.bad_blocks;
        *count += 1;
        if first.is_none() {
            *first = Some(format!(
                "bad block at offset {} of {} (length {}): {why}",
                p.offset,
                self.files[p.file].plan.path.display(),
                p.len
            ));
        }
        Ok(())
    }

    /// fio's verify phase after the writing: every block still unchecked.
    pub(super) fn verify_at_end(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        let blocks = if v.backlog > 0 {
            v.backlog_rest()
        } else if v.at_end {
            v.all()
        } else {
            Vec::new()
        };
        if blocks.is_empty() {
            return Ok(());
        }
        self.progress.set_phase(Phase::Verifying);
        let max_bs = self.bs.iter().map(BlockSizes::max).max().unwrap_or(4096) as usize;
        let mut buf = AlignedBuf::new(max_bs);
        self.verify_blocks(blocks, &mut buf, backend)
    }

    pub(super) fn run_sync(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        let max_bs = self.bs.iter().map(BlockSizes::max).max().unwrap_or(4096) as usize;
        let mut buf = AlignedBuf::new(max_bs);
        self.contents
            .initial_fill(buf.as_mut_slice(), &mut self.rng);
        let buf_ptr = buf.as_mut_ptr();
        // Reads of verify_backlog land apart from the write buffer, whose contents (a
        // pattern, zeros) the next writes still need.
        let mut check_buf = self
            .verify
            .as_ref()
            .filter(|v| v.backlog > 0)
            .map(|_| AlignedBuf::new(max_bs));
        let floors = self.has_rate_floor();
        let mut now = self.clock.now_ns();
        loop {
            if floors {
                self.check_rate_floor(now);
            }
            if self.should_stop(now) {
                break;
            }
            if self.flow.as_mut().is_some_and(|f| f.held_back()) {
                if let Some(f) = &self.flow {
                    f.pause();
                }
                now = self.clock.now_ns();
                continue;
            }
            self.sync_if_due(backend)?;
            let p = self.plan_next();
            if self.past_saved_writes(&p) {
                break;
            }
            let d = p.dir.index();
            if !self.wait_for_rate(d, p.len as u64) {
                break;
            }
            // As fio's: total latency from when the I/O is being made ready (its buffer's
            // scramble, the request), completion latency from its issue; a sync engine's
            // `lat` is that much above its `clat`.
            let started = self.clock.now_ns();
            let req = self.prepare(&p, &mut buf, 0);
            let t0 = self.clock.now_ns();
            self.trace_io(&p, t0);
            self.trace_stages(&["fill", "prep", "queue"], &p, buf_ptr);
            let mut submitted = t0;
            let result = match backend.submit(&req) {
                Ok(Submitted::Done(n)) => n as i64,
                // An async engine at iodepth=1 (libaio with iodepth=1, as in fsx.fio).
                Ok(Submitted::Queued) => match wait_one(backend, &self.clock) {
                    Ok((r, at)) => {
                        submitted = at;
                        r
                    }
                    Err(e) => {
                        // The I/O may still be in flight: its buffer must outlive it.
                        std::mem::forget(buf);
                        return Err(e);
                    }
                },
                Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
            };
            now = self.clock.now_ns();
            self.issued_total[d] += 1;
            self.issued_bytes[d] += p.len as u64;
            self.count_toward_pass(&p);
            if !self.ramping {
                self.depth_hist[0] += 1;
            }
            self.trace_stages(&["complete"], &p, buf_ptr);
            self.complete(&p, result, started, submitted, now)?;
            self.check_read(&p, result, buf.as_slice())?;
            self.count_write_for_sync(&p);
            if p.dir.is_write() {
                let due = self
                    .verify
                    .as_mut()
                    .map(|v| v.backlog_due())
                    .unwrap_or_default();
                if let (false, Some(check)) = (due.is_empty(), check_buf.as_mut()) {
                    self.verify_blocks(due, check, backend)?;
                    now = self.clock.now_ns();
                }
            }
            // The pause took time: the next turn asks whether the runtime is over at its
            // end, as fio's loop does, not at the I/O before it.
            if self.think_after_sync_io() {
                now = self.clock.now_ns();
            }
        }
        Ok(())
    }

    pub(super) fn run_queued(
        &mut self,
        backend: &mut dyn Backend,
        depth: u32,
    ) -> Result<(), LoopError> {
        let depth = depth as usize;
        let mut q = self.new_queue(depth);
        // fio's iodepth_batch_complete_max: not given (or below the minimum), it is
        // iodepth_batch_complete_min, so by default one completion is taken per reap and
        // the queue is refilled one I/O at a time, as fio's.
        let reap_max = self
            .o
            .iodepth_batch_complete_max
            .max(self.o.iodepth_batch_complete_min)
            .max(1) as usize;
        let batch_submit = (self.o.iodepth_batch_submit.max(1) as usize).min(depth);
        let mut issuing = true;
        // The first error stops issuing; the I/Os already in flight are still reaped before
        // returning, because the kernel writes into their buffers until they complete.
        let mut failure: Option<LoopError> = None;
        let rate_limited = self.o.rate.iter().chain(&self.o.rate_iops).any(|r| *r > 0);
        // An I/O planned and waiting for its rate slot while the queue drains, and whether
        // the queue is draining for it.
        let mut paced: Option<(Planned, Option<u64>)> = None;
        let mut quiesce = false;
        // A thinktime pause due (the count it was due at): the queue drains, then it pauses.
        let mut think_due: Option<u64> = None;

        // verify_backlog: when that many writes were issued, the queue drains and the job
        // reads them back before it issues more, as fio's verify_backlog at any depth.
        let mut check_buf = self.verify.as_ref().filter(|v| v.backlog > 0).map(|_| {
            AlignedBuf::new(self.bs.iter().map(BlockSizes::max).max().unwrap_or(4096) as usize)
        });
        let mut backlog_due = false;
        // serialize_overlap: the planned I/O (held in `paced`) waits for a completion.
        let mut overlapped = false;

        let floors = self.has_rate_floor();
        loop {
            if q.inflight == 0 {
                if let Some(count) = think_due.take() {
                    self.think_pause(count);
                }
                if std::mem::take(&mut backlog_due) && failure.is_none() {
                    let due = self
                        .verify
                        .as_mut()
                        .map(|v| v.backlog_due())
                        .unwrap_or_default();
                    if let Some(check) = check_buf.as_mut() {
                        if let Err(e) = self.verify_blocks(due, check, backend) {
                            failure.get_or_insert(e);
                            issuing = false;
                        }
                    }
                }
            }
            let now = self.clock.now_ns();
            if issuing && floors {
                self.check_rate_floor(now);
            }
            if issuing && self.should_stop(now) {
                issuing = false;
            }
            // Held back by the flow: as fio, let every I/O in flight complete, then pause.
            let mut held = false;
            if issuing {
                if let Err(e) = self.sync_if_due(backend) {
                    failure.get_or_insert(e);
                    issuing = false;
                }
            }
            while issuing
                && think_due.is_none()
                && !backlog_due
                && q.inflight + q.batch.len() < depth.min(self.depth_cap as usize)
            {
                if self.flow.as_mut().is_some_and(|f| f.held_back()) {
                    held = true;
                    break;
                }
                let (p, due) = match paced.take() {
                    Some(planned) => planned,
                    None => {
                        let p = self.plan_next();
                        if self.past_saved_writes(&p) {
                            issuing = false;
                            break;
                        }
                        (p, self.rate_due(p.dir.index(), p.len as u64))
                    }
                };
                if let Some(due) = due {
                    // As fio's rate limiting (io_u_quiesce): the I/Os in flight complete
                    // before the job sleeps until its next slot, so their completion is
                    // seen when it happens, not when the sleep ends.
                    if q.inflight + q.batch.len() > 0 && self.clock.now_ns() < due {
                        paced = Some((p, Some(due)));
                        quiesce = true;
                        break;
                    }
                    if !self.sleep_until_due(due) {
                        issuing = false;
                        break;
                    }
                }
                if self.o.serialize_overlap && q.overlaps_in_flight(&p) {
                    paced = Some((p, None));
                    overlapped = true;
                    break;
                }
                let Some(slot) = q.free.pop() else { break };
                match self.submit_queued(backend, &mut q, slot, p) {
                    Ok(None) => {}
                    Ok(Some(e)) => {
                        failure.get_or_insert(e);
                        issuing = false;
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                        issuing = false;
                        break;
                    }
                }
                if q.batch.len() >= batch_submit {
                    if let Err(e) = self.commit(backend, &mut q) {
                        q.abandon();
                        return Err(e);
                    }
                }
                if self.should_stop(self.clock.now_ns()) {
                    issuing = false;
                }
                // As fio's loop: one I/O per turn, then the thinktime check.
                think_due = self.think_due();
                backlog_due = self.verify.as_ref().is_some_and(|v| v.backlog_is_due());
            }
            if !q.batch.is_empty() {
                if let Err(e) = self.commit(backend, &mut q) {
                    q.abandon();
                    return Err(e);
                }
            }
            if q.inflight == 0 {
                if issuing || backlog_due {
                    if let (true, Some(f)) = (held, &self.flow) {
                        f.pause();
                    }
                    continue;
                }
                break;
            }
            let full = q.inflight >= depth.min(self.depth_cap as usize);

            // As fio does: reap only once the queue is full (or no more I/O will be issued),
            // which keeps the device at the requested depth. A rate-limited job also looks
            // for completions without waiting, so its latencies are not held back.
            let min = if held || quiesce || think_due.is_some() || backlog_due {
                q.inflight
            } else if !issuing || full || overlapped {
                (self.o.iodepth_batch_complete_min.max(1) as usize).min(q.inflight)
            } else if rate_limited {
                0
            } else {
                continue;
            };
            quiesce = false;
            overlapped = false;
            match self.reap_queued(backend, &mut q, min, reap_max) {
                Err(e) => {
                    q.abandon();
                    return Err(e);
                }
                Ok((0, _)) => continue,
                Ok((_, Some(e))) => {
                    failure.get_or_insert(e);
                    issuing = false;
                }
                Ok((_, None)) => {}
            }
            if think_due.is_none() {
                think_due = self.think_due();
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One I/O into a free slot of the queue: its buffer filled, submitted, and completed
    /// at once when the engine did it inline. `Err` when it could not be submitted (stop
    /// issuing); `Ok(Some)` when an inline completion failed its checks.
    #[inline]
    fn submit_queued(
        &mut self,
        backend: &mut dyn Backend,
        q: &mut Queue,
        slot: usize,
        p: Planned,
    ) -> Result<Option<LoopError>, LoopError> {
        let d = p.dir.index();
        let req = self.prepare(&p, &mut q.bufs[slot], slot as u64);
        let prep = self.clock.now_ns();
        self.trace_io(&p, prep);
        self.trace_stages(
            &["fill", "prep", "queue"],
            &p,
            q.bufs[slot].as_slice().as_ptr(),
        );
        q.slots[slot] = (p, prep, prep);
        self.issued_total[d] += 1;
        self.issued_bytes[d] += p.len as u64;
        self.count_toward_pass(&p);
        match backend.submit(&req) {
            Ok(Submitted::Queued) => {
                q.batch.push(slot);
                self.think_issued();
                Ok(None)
            }
            Ok(Submitted::Done(n)) => {
                self.think_issued();
                self.think_completed();
                let done = self.clock.now_ns();
                q.free.push(slot);
                self.trace_stages(&["complete"], &p, q.bufs[slot].as_slice().as_ptr());
                let checked = self
                    .complete(&p, n as i64, prep, prep, done)
                    .and_then(|()| self.check_read(&p, n as i64, q.bufs[slot].as_slice()));
                Ok(checked.err())
            }
            Err(e) => {
                q.free.push(slot);
                Err((
                    e.raw_os_error().unwrap_or(libc::EIO),
                    format!("submit: {e}"),
                ))
            }
        }
    }

    /// Reaps at least `min` completions (at most `max`) and accounts for each: the count
    /// reaped and the first completion that failed its checks. `Err` when the engine could
    /// not reap (the queue's state is then unknown).
    #[inline]
    fn reap_queued(
        &mut self,
        backend: &mut dyn Backend,
        q: &mut Queue,
        min: usize,
        reap_max: usize,
    ) -> Result<(usize, Option<LoopError>), LoopError> {
        q.completions.clear();
        if let Err(e) = backend.reap(min, reap_max, &mut q.completions) {
            return Err((e.raw_os_error().unwrap_or(libc::EIO), format!("reap: {e}")));
        }
        let reaped = q.completions.len();
        if reaped == 0 {
            return Ok((0, None));
        }
        let mut failure = None;
        let done = self.clock.now_ns();
        if !self.ramping {
            self.complete_hist[batch_bucket(q.completions.len() as u32)] += 1;
        }
        for c in q.completions.drain(..) {
            let slot = c.tag as usize;
            let (p, prep, submit) = q.slots[slot];
            let (submit, done) = c.times.unwrap_or((submit, done));
            q.inflight -= 1;
            q.free.push(slot);
            self.trace_stages(&["complete"], &p, q.bufs[slot].as_slice().as_ptr());
            let checked = self
                .complete(&p, c.result, prep, submit, done)
                .and_then(|()| self.check_read(&p, c.result, q.bufs[slot].as_slice()));
            if let Err(e) = checked {
                failure.get_or_insert(e);
            }
            self.count_write_for_sync(&p);
            self.think_completed();
        }
        Ok((reaped, failure))
    }

    /// The queue's slots, one aligned buffer each, filled as the job's first buffers are.
    fn new_queue(&mut self, depth: usize) -> Queue {
        let max_bs = self.bs.iter().map(BlockSizes::max).max().unwrap_or(4096) as usize;
        let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(max_bs)).collect();
        for b in &mut bufs {
            self.contents.initial_fill(b.as_mut_slice(), &mut self.rng);
        }
        let empty = Planned {
            dir: IoDir::Read,
            file: 0,
            offset: 0,
            len: 0,
            ioprio: 0,
        };
        Queue {
            bufs,
            slots: vec![(empty, 0, 0); depth],
            free: (0..depth).rev().collect(),
            batch: Vec::with_capacity(depth),
            completions: Vec::with_capacity(depth),
            inflight: 0,
        }
    }

    pub(super) fn commit(
        &mut self,
        backend: &mut dyn Backend,
        q: &mut Queue,
    ) -> Result<(), LoopError> {
        backend.commit().map_err(|e| {
            (
                e.raw_os_error().unwrap_or(libc::EIO),
                format!("submit: {e}"),
            )
        })?;
        let now = self.clock.now_ns();
        q.inflight += q.batch.len();
        if !self.ramping {
            self.submit_hist[batch_bucket(q.batch.len() as u32)] += 1;
            self.depth_hist[iodepth_bucket(q.inflight as u32)] += q.batch.len() as u64;
        }
        for &slot in q.batch.iter() {
            q.slots[slot].2 = now;
        }
        q.batch.clear();
        Ok(())
    }
}

/// One read through `backend` while nothing else is in flight (a verify read of an engine
/// without a descriptor): bytes read, or a negative errno.
fn read_one(
    backend: &mut dyn Backend,
    file: usize,
    offset: u64,
    len: usize,
    buf: &mut AlignedBuf,
) -> i64 {
    const VERIFY_TAG: u64 = u64::MAX - 1;
    let req = IoRequest {
        fd: -1,
        file_index: file,
        dir: IoDir::Read,
        offset,
        len,
        buf: buf.as_mut_ptr(),
        tag: VERIFY_TAG,
        ioprio: 0,
    };
    let errno = |e: std::io::Error| -i64::from(e.raw_os_error().unwrap_or(libc::EIO));
    match backend.submit(&req) {
        Ok(Submitted::Done(n)) => return n as i64,
        Ok(Submitted::Queued) => {}
        Err(e) => return errno(e),
    }
    if let Err(e) = backend.commit() {
        return errno(e);
    }
    let mut out: Vec<Completion> = Vec::with_capacity(1);
    loop {
        if let Err(e) = backend.reap(1, 1, &mut out) {
            return errno(e);
        }
        if let Some(c) = out.drain(..).find(|c| c.tag == VERIFY_TAG) {
            return c.result;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(dir: IoDir, offset: u64, len: usize) -> Planned {
        Planned {
            dir,
            file: 0,
            offset,
            len,
            ioprio: 0,
        }
    }

    #[test]
    fn an_overlap_counts_only_in_flight_and_only_with_a_write() {
        let q = Queue {
            bufs: Vec::new(),
            // Slot 0 in flight (a write of 4k at 8k), slot 1 free (a write at 0), slot 2
            // in flight (a read of 4k at 64k).
            slots: vec![
                (io(IoDir::Write, 8192, 4096), 0, 0),
                (io(IoDir::Write, 0, 4096), 0, 0),
                (io(IoDir::Read, 65536, 4096), 0, 0),
            ],
            free: vec![1],
            batch: Vec::new(),
            completions: Vec::new(),
            inflight: 2,
        };
        assert!(q.overlaps_in_flight(&io(IoDir::Read, 10240, 512)));
        assert!(q.overlaps_in_flight(&io(IoDir::Write, 4096, 8192)));
        assert!(
            !q.overlaps_in_flight(&io(IoDir::Read, 4096, 4096)),
            "ends where it starts"
        );
        assert!(
            !q.overlaps_in_flight(&io(IoDir::Write, 0, 4096)),
            "slot 1 is free"
        );
        assert!(
            !q.overlaps_in_flight(&io(IoDir::Read, 65536, 4096)),
            "two reads"
        );
        // As fio's check: a trim is not a write.
        assert!(!q.overlaps_in_flight(&io(IoDir::Trim, 65536, 4096)));
    }
}
