//! `sinkrate record`'s table: the verdict, one row per stream, stalls, and the page cache.

use anyhow::Result;
use sinkrate_model::record::{PowerCutReport, RecordRun, WriteMode};

use super::Exporter;
use sinkrate_units::product::ms_text;

pub struct RecordText;

fn write_mode(run: &RecordRun) -> String {
    let c = &run.result.config;
    let mode = match c.write_mode {
        WriteMode::Buffered => "buffered",
        WriteMode::Direct => "direct",
        WriteMode::Dsync => "dsync",
        WriteMode::Uring => "uring",
        WriteMode::Null => "null",
    };
    match (c.write_mode, c.shared_writer) {
        (WriteMode::Uring, shared) => format!(
            "io_uring (queue depth {}){}",
            c.queue_depth,
            if shared { ", one shared writer" } else { "" }
        ),
        (_, true) => format!("{mode}, one shared writer"),
        _ => mode.to_string(),
    }
}

impl Exporter<RecordRun> for RecordText {
    fn export(&self, run: &RecordRun) -> Result<Vec<u8>> {
        let r = &run.result;
        let c = &r.config;
        let target = r.target.clone().unwrap_or_default();
        let elapsed_s = r.totals.duration_s;
        let mut t = format!(
            "sinkrate record  {}  ({} on {})\n{}: {:.2} MB/s requested, {} writes, {} buffers per stream, {:.0} s\n\n",
            c.dir.display(),
            target.fs_type.as_deref().unwrap_or("?"),
            target.device.as_deref().unwrap_or("?"),
            r.label,
            r.totals.requested_bytes_per_s / 1e6,
            write_mode(run),
            c.buffers,
            elapsed_s
        );
        t.push_str(&format!(
            "VERDICT  {}{}\n  {}\n\n",
            r.verdict.label(),
            if run.interrupted {
                "  (interrupted)"
            } else {
                ""
            },
            r.verdict_text
        ));
        if let Some(rp) = &r.replay {
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
            t.push_str(&format!(
                "replay: {} frames of {} thread(s); started late by p50 {} / p99 {} / max {} ms against the original times{}\n  the recorder's own frame write times: p50 {} / p99 {} / max {} ms (the replay's are in the table)\n\n",
                rp.frames,
                rp.threads,
                f(rp.lag_p50_ms),
                f(rp.lag_p99_ms),
                f(rp.lag_max_ms),
                if rp.speed != 1.0 { format!(" at {}x", rp.speed) } else { String::new() },
                f(rp.original_write_p50_ms),
                f(rp.original_write_p99_ms),
                f(rp.original_write_max_ms),
            ));
        }
        t.push_str("stream   offered  written  dropped     fps   write p50      p99      max  lateness p99  pool\n");
        for s in &r.streams {
            t.push_str(&format!(
                "{:<8} {:>7}  {:>7}  {:>7}  {:>6.2}  {:>9} {:>8} {:>8}  {:>12}  {}/{}\n",
                s.name,
                s.frames_offered,
                s.frames_written,
                s.frames_dropped,
                s.fps_achieved,
                ms_text(Some(s.write_latency_ns.p50)),
                ms_text(Some(s.write_latency_ns.p99)),
                ms_text(Some(s.write_latency_ns.max)),
                ms_text(Some(s.lateness_ns.p99)),
                s.pool_high_water,
                s.buffers
            ));
        }
        if let Some(worst) = r.worst_stall() {
            t.push_str(&format!(
                "\n{} write calls over {} ms; the longest at {:.1} s took {:.0} ms\n",
                r.stalls.len(),
                c.stall_threshold.as_millis(),
                worst.at_s,
                worst.duration_ms
            ));
        }
        t.push_str(&super::causes_text(r));
        // What to try, in the order of the time each cause cost this recording; a cause
        // under a twentieth of the stall time is left out (its fix would not be felt).
        let causes = r.kernel.causes_by_time();
        let total: f64 = causes.iter().map(|(_, s)| s).sum();
        if !causes.is_empty() {
            t.push_str("what to try, by the stall time each cause cost:\n");
            for (cause, s) in causes.iter().filter(|(_, s)| *s >= 0.05 * total) {
                t.push_str(&format!("  {} ({s:.2} s): {}\n", cause.name(), cause.fix()));
            }
        }
        if let Some(sizes) = &r.sizes {
            t.push_str(&sizes_text(sizes));
        }
        // The kernel's own pauses where its events were read; the sampler's estimate (time
        // with dirty over the machine's limit) misses a per-device limit.
        let throttled = if r.kernel.from_kernel() {
            format!(
                "{:.1} s (the kernel's balance_dirty_pages pauses)",
                r.kernel.throttle_pause_s()
            )
        } else {
            format!("{:.1} s", r.sampler.summary.throttled_seconds)
        };
        t.push_str(&format!(
            "\npage cache: peak dirty+writeback {:.0} MB, writers throttled {throttled}; device wrote {:.1} MB/s on average while recording{}; the final fsync took {:.2} s\n",
            r.sampler.summary.peak_dirty_writeback_bytes.unwrap_or(0) as f64 / 1e6,
            r.totals.device_bytes_per_s.unwrap_or(0.0) / 1e6,
            r.totals
                .device_bytes_written
                .map(|b| format!(
                    ", {} in all with the final flush",
                    sinkrate_units::product::bytes_si(b)
                ))
                .unwrap_or_default(),
            r.totals.final_flush_s
        ));
        t.push_str(&match (r.totals.unacknowledged_worst_s, c.write_mode) {
            (_, WriteMode::Null) => String::new(),
            (Some(s), _) => format!(
                "data at risk on a power cut: at most {s:.2} s of recording had not been acknowledged on the device (capture to the covering {})\n",
                if r.replay.is_some() { "sync of the recorder's own" } else if c.write_mode == WriteMode::Dsync { "O_DSYNC write" } else { "fdatasync" }
            ),
            (None, _) if r.replay.is_some() => "data at risk on a power cut: not bounded by the recorder, which never synced its frames' files: a cut loses what the page cache and the card's cache hold\n".into(),
            (None, _) => "data at risk on a power cut: not bounded by the recorder, which never asked the device to make its writes durable (no --fdatasync-every, not dsync): a cut loses what the page cache and the card's cache hold\n".into(),
        });
        if r.windows.len() > 1 && r.totals.duration_s >= 600.0 {
            t.push_str("\nwindow               rate   worst write   frames\n");
            for w in &r.windows {
                t.push_str(&format!(
                    "{:>8}-{:<8} {:>9}   {:>8.1} ms  {:>7}\n",
                    sinkrate_units::product::h_mm_ss(w.start_s),
                    sinkrate_units::product::h_mm_ss(w.end_s),
                    format!("{:.1} MB/s", w.written_bytes_per_s / 1e6),
                    w.worst_write_ns as f64 / 1e6,
                    w.frames_written
                ));
            }
        }
        if let Some(v) = &r.soak {
            t.push_str(&format!(
                "read back during the recording: {} closed segment(s), {:.1} MB, every {:.0} s{}{}\n",
                v.segments_verified,
                v.bytes_verified as f64 / 1e6,
                v.every_s,
                if v.segments_deleted_first > 0 {
                    format!("; {} deleted by loop recording before their turn", v.segments_deleted_first)
                } else {
                    String::new()
                },
                if v.failure.is_some() { "; one did not read back as written (below)" } else { "" }
            ));
        }
        if let Some(l) = &r.lifetime {
            t.push_str(&format!(
                "card lifetime: {}{}\n",
                l.line(),
                l.write_amplification
                    .map(|wa| format!("; write amplification {wa:.2}x"))
                    .unwrap_or_default()
            ));
        }
        if let Some(cut) = &r.power_cut {
            t.push_str(&power_cut_text(cut));
        }
        for e in &r.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        Ok(t.into_bytes())
    }
}

/// What the cut cost, per stream: believed written, acknowledged durable, found whole.
fn power_cut_text(cut: &PowerCutReport) -> String {
    let cache = cut.cache_lost_bytes.map_or(String::new(), |b| {
        format!(
            "; the card's volatile cache lost {:.2} MiB",
            b as f64 / 1048576.0
        )
    });
    let mut t = format!("\nPOWER CUT at {:.1} s{cache}\n", cut.at_s);
    if !cut.mounted_after {
        t.push_str(&format!(
            "  the filesystem did not mount again: {}\n",
            cut.mount_notes.join("; ")
        ));
    } else if !cut.mount_notes.is_empty() {
        t.push_str(&format!(
            "  mounting again, the kernel said: {}\n",
            cut.mount_notes.join("; ")
        ));
    }
    t.push_str("stream   believed written  acknowledged durable  survived  lost  recording lost\n");
    for s in &cut.streams {
        t.push_str(&format!(
            "{:<8} {:>16}  {:>20}  {:>8}  {:>4}  {:>12.2} s\n",
            s.stream,
            s.frames_believed_written,
            s.frames_acknowledged_durable,
            s.frames_survived,
            s.frames_lost,
            s.recording_lost_s
        ));
        if s.frames_durable_lost > 0 {
            t.push_str(&format!(
                "  {}: {} frame(s) a completed sync had reported on the device are not on it\n",
                s.stream, s.frames_durable_lost
            ));
        }
    }
    t
}

/// What the run says its recording needs: the pool per stream and the card class, each with
/// what it rests on, and whether the run was long enough to meet the first flush of expired
/// data.
pub(crate) fn sizes_text(s: &sinkrate_model::record::Sizes) -> String {
    let mut t = String::from("what this recording needs, from its own frames:\n");
    for p in &s.pools {
        let rests_on = if p.rests_on_write_ms > 0.0 && p.frames > 1 {
            format!(
                "; it rests on the {:.0} ms write at {:.1} s",
                p.rests_on_write_ms, p.rests_on_write_at_s
            )
        } else {
            String::new()
        };
        t.push_str(&format!(
            "  {}: a pool of {} frame(s) ({}, {:.2} s of the stream) would have dropped nothing (this run had {}){rests_on}{}\n",
            p.stream,
            p.frames,
            sinkrate_units::product::bytes_si(p.bytes),
            p.seconds,
            p.buffers,
            if p.truncated { "; only the frames listed were replayed" } else { "" }
        ));
    }
    match &s.card_class {
        Some(c) => t.push_str(&format!(
            "  card: {} or better ({} sustained against the streams' {}), with those pools\n",
            c.name,
            sinkrate_units::product::mb_per_s(c.min_bytes_per_s),
            sinkrate_units::product::mb_per_s(s.streams_bytes_per_s)
        )),
        None => t.push_str(&format!(
            "  card: no SD video class guarantees {} (V90 is 90 MB/s)\n",
            sinkrate_units::product::mb_per_s(s.streams_bytes_per_s)
        )),
    }
    if let Some(l) = &s.device_limit {
        t.push_str(&device_limit_text(l, s.streams_bytes_per_s));
    }
    if let Some(expiry) = s.first_expiry_writeback_s.filter(|e| s.run_s < *e) {
        t.push_str(&format!(
            "  the run lasted {:.0} s: the first writeback of expired data comes at {expiry:.0} s (dirty_expire + dirty_writeback), so its stalls are not in these figures; record at least {:.0} s to include them\n",
            s.run_s,
            expiry + 10.0
        ));
    }
    t
}

/// The per-device dirty limit's line: the cap, what it rests on, and how to set it.
fn device_limit_text(l: &sinkrate_model::record::DeviceLimit, streams: f64) -> String {
    use sinkrate_units::product::{bytes_binary, mb_per_s};
    let (Some(bytes), Some(rate)) = (l.max_bytes, l.device_bytes_per_s) else {
        return format!(
            "  per-device dirty limit: not sized: {}\n",
            l.why_not
                .as_deref()
                .unwrap_or("the device's rate was not measured")
        );
    };
    let bdi = l.bdi.as_deref().unwrap_or("its bdi");
    let rests_on = format!(
        "{:.2} s of its measured {} (while busy), the stall the smallest capture pool rides out",
        l.ride_out_s,
        mb_per_s(rate)
    );
    if !l.keeps_up {
        return format!(
            "  per-device dirty limit: {} ({rests_on}) would bound what the card holds, but the card writes {} against the streams' {}: no limit keeps the recorder out of throttling on it\n",
            bytes_binary(bytes),
            mb_per_s(rate),
            mb_per_s(streams)
        );
    }
    let apply = format!("sinkrate tune apply --path DIR bdi:strict_limit=1 bdi:max_bytes={bytes}");
    match l.held_bytes {
        Some(held) if l.in_force => format!(
            "  per-device dirty limit: bdi {bdi} holds the card to {} (strict_limit=1), within the {} this recording rides out ({rests_on})\n",
            bytes_binary(held),
            bytes_binary(bytes)
        ),
        Some(held) => format!(
            "  per-device dirty limit: bdi {bdi} holds the card to {} (strict_limit=1), more than the {} this recording rides out ({rests_on}): under a strict cap the kernel pauses a writer for up to an eighth of the time the card takes to write the cap back, {:.2} s a pause at {}, and one write can take several; lower it: {apply}\n",
            bytes_binary(held),
            bytes_binary(bytes),
            sinkrate_model::record::DeviceLimit::longest_throttle_pause_s(held, rate),
            bytes_binary(held)
        ),
        None => format!(
            "  per-device dirty limit: at most {} on this card (bdi {bdi}), {rests_on}; the card then holds no more than that of the recording, other writers are not throttled for it, and the kernel's pauses of the recorder (up to {:.2} s each) stay inside its pool: {apply}\n",
            bytes_binary(bytes),
            sinkrate_model::record::DeviceLimit::longest_throttle_pause_s(bytes, rate)
        ),
    }
}

#[cfg(test)]
mod tests {
    use sinkrate_model::record::DeviceLimit;

    #[test]
    fn a_device_limit_is_printed_with_what_it_rests_on_and_how_to_set_it() {
        let mut l = DeviceLimit {
            bdi: Some("43:0".into()),
            max_bytes: Some(12 << 20),
            device_bytes_per_s: Some(9.8e6),
            ride_out_s: 1.2,
            keeps_up: true,
            in_force: false,
            held_bytes: None,
            why_not: None,
        };
        let t = super::device_limit_text(&l, 4.9e6);
        for words in [
            "at most 12.0 MiB on this card (bdi 43:0)",
            "1.20 s of its measured 9.8 MB/s (while busy), the stall the smallest capture pool rides out",
            "(up to 0.16 s each) stay inside its pool",
            "sinkrate tune apply --path DIR bdi:strict_limit=1 bdi:max_bytes=12582912",
        ] {
            assert!(t.contains(words), "{t}");
        }
        (l.in_force, l.held_bytes) = (true, Some(8 << 20));
        assert!(super::device_limit_text(&l, 4.9e6)
            .contains("holds the card to 8.0 MiB (strict_limit=1), within the 12.0 MiB"));
        // A larger strict cap is what throttles the recorder: said, with the pause it allows.
        (l.in_force, l.held_bytes) = (false, Some(16 << 20));
        let t = super::device_limit_text(&l, 4.9e6);
        assert!(
            t.contains("more than the 12.0 MiB")
                && t.contains("0.20 s a pause at 16.0 MiB")
                && t.contains("lower it: sinkrate tune apply"),
            "{t}"
        );
        l.keeps_up = false;
        assert!(super::device_limit_text(&l, 12e6)
            .contains("no limit keeps the recorder out of throttling"));
        l.max_bytes = None;
        l.why_not = Some("the device's rate was not measured".into());
        assert!(super::device_limit_text(&l, 4.9e6)
            .contains("not sized: the device's rate was not measured"));
    }
}
