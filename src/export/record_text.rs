//! `sinkrate record`'s table: the verdict, one row per stream, stalls, and the page cache.

use anyhow::Result;
use sinkrate_record::config::WriteMode;
use sinkrate_record::report::RecordRun;

use super::{ms, Exporter};

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
        t.push_str("stream   offered  written  dropped     fps   write p50      p99      max  lateness p99  pool\n");
        for s in &r.streams {
            t.push_str(&format!(
                "{:<8} {:>7}  {:>7}  {:>7}  {:>6.2}  {:>9} {:>8} {:>8}  {:>12}  {}/{}\n",
                s.name,
                s.frames_offered,
                s.frames_written,
                s.frames_dropped,
                s.fps_achieved,
                ms(Some(s.write_latency_ns.p50)),
                ms(Some(s.write_latency_ns.p99)),
                ms(Some(s.write_latency_ns.max)),
                ms(Some(s.lateness_ns.p99)),
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
        t.push_str(&format!(
            "\npage cache: peak dirty+writeback {:.0} MB, writers throttled {:.1} s; device wrote {:.1} MB/s on average while recording; the final fsync took {:.2} s\n",
            r.sampler.summary.peak_dirty_writeback_bytes.unwrap_or(0) as f64 / 1e6,
            r.sampler.summary.throttled_seconds,
            r.totals.device_bytes_per_s.unwrap_or(0.0) / 1e6,
            r.totals.final_flush_s
        ));
        for e in &r.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        Ok(t.into_bytes())
    }
}
