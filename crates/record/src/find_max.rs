//! `--find-max streams|bitrate|fps`: the largest value that still keeps up. Every probe is a
//! whole recording session run in this process and judged by the same verdict; the search
//! brackets (halving until a value passes, doubling until one fails), bisects to 5% (or to
//! adjacent integers), and confirms the result with a second run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sinkrate_model::Verdict;

use crate::session::{run, Session, SessionError};
use sinkrate_model::record::{FindMaxReport, FrameSizes, Probe, Searched, StreamSpec};

/// The most streams a recording runs.
pub const MAX_STREAMS: u32 = 64;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("a probe failed: {0}")]
    ProbeFailed(String),
    #[error("nothing to search for: {0}")]
    NotStorage(String),
    #[error("the search was interrupted")]
    Interrupted,
    #[error("--find-max {0} needs a custom stream: --fps with --frame-size or --bitrate")]
    NeedsCustomStream(&'static str),
    #[error("--find-max bitrate needs a --bitrate stream to scale (e.g. --fps 30 --bitrate 12M)")]
    NeedsBitrate,
    #[error("--find-max speed scales a replay: give --replay TRACE")]
    NeedsReplay,
}

/// The session with the searched quantity set to `value`.
pub fn with_value(base: &Session, what: Searched, value: f64) -> Session {
    let mut s = base.clone();
    if what == Searched::Speed {
        // The same calls at another pace: each stream's rate and the run's length with it.
        let ratio = value / base.record.replay_speed;
        s.record.replay_speed = value;
        // The same frames, more of them a second: a bitrate stream's frames keep their size.
        for st in s.record.streams.iter_mut() {
            st.fps *= ratio;
            if let FrameSizes::Bitrate { bits_per_s, .. } = &mut st.sizes {
                *bits_per_s = (*bits_per_s as f64 * ratio).round().max(1.0) as u64;
            }
        }
        s.record.duration = base.record.duration.div_f64(ratio);
        s.label = format!("{} (probe at {value:.2}x)", base.label);
        return s;
    }
    let streams = &mut s.record.streams;
    match what {
        Searched::Streams => {
            let template = streams[0].clone();
            *streams = (0..value.round().max(1.0) as usize)
                .map(|i| StreamSpec {
                    name: format!("cam{i}"),
                    ..template.clone()
                })
                .collect();
        }
        Searched::Fps => {
            for st in streams.iter_mut() {
                st.fps = value;
            }
        }
        Searched::Speed => {}
        Searched::Bitrate => {
            for st in streams.iter_mut() {
                if let FrameSizes::Bitrate { bits_per_s, .. } = &mut st.sizes {
                    *bits_per_s = value.round().max(1.0) as u64;
                }
            }
        }
    }
    s.label = sinkrate_model::record::streams_label(&s.record.streams);
    s
}

/// Where the search starts: the session's own value of the searched quantity.
pub fn start_value(base: &Session, what: Searched) -> Result<f64, SearchError> {
    let first = base.record.streams.first();
    match what {
        Searched::Streams => Ok(base.record.streams.len().max(1) as f64),
        Searched::Fps => Ok(first.map_or(30.0, |s| s.fps)),
        Searched::Speed if base.record.replay.is_some() => Ok(base.record.replay_speed),
        Searched::Speed => Err(SearchError::NeedsReplay),
        Searched::Bitrate => match first.map(|s| &s.sizes) {
            Some(FrameSizes::Bitrate { bits_per_s, .. }) => Ok(*bits_per_s as f64),
            _ => Err(SearchError::NeedsBitrate),
        },
    }
}

/// Runs the search; `raw` is the device's raw rate, printed beside the answer; `progress`
/// hears of every probe.
pub fn search(
    base: &Session,
    what: Searched,
    raw_direct_write_bytes_per_s: f64,
    stop: Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Probe),
) -> Result<FindMaxReport, SearchError> {
    let integer = what.integer();
    let mut probes: Vec<Probe> = Vec::new();
    let mut probe = |value: f64, probes: &mut Vec<Probe>| -> Result<bool, SearchError> {
        let session = with_value(base, what, value);
        let result = run(&session, stop.clone(), None)?;
        if stop.load(Ordering::Relaxed) || result.interrupted {
            return Err(SearchError::Interrupted);
        }
        let r = &result.result;
        match r.verdict {
            // A probe too short to judge says nothing either way about the rate.
            Verdict::Failed | Verdict::TooShort => {
                return Err(SearchError::ProbeFailed(r.verdict_text.clone()))
            }
            Verdict::NotStorage => return Err(SearchError::NotStorage(r.verdict_text.clone())),
            _ => {}
        }
        let p = Probe {
            value,
            verdict: r.verdict,
            requested_bytes_per_s: r.totals.requested_bytes_per_s,
        };
        progress(&p);
        probes.push(p);
        Ok(r.verdict == Verdict::KeepsUp)
    };
    let nothing_kept_up = |probes: Vec<Probe>| {
        report(
            what,
            None,
            false,
            raw_direct_write_bytes_per_s,
            base,
            probes,
        )
    };
    let start = start_value(base, what)?;
    let limit = if integer {
        f64::from(MAX_STREAMS)
    } else {
        f64::INFINITY
    };
    // Bracket: halve until a value passes, double until one fails (or the limit passes).
    let mut low = start.min(limit);
    let mut tries = 0;
    let mut at_limit = false;
    while !probe(low, &mut probes)? {
        low /= 2.0;
        tries += 1;
        if (integer && low < 1.0) || tries > 12 {
            return Ok(nothing_kept_up(probes));
        }
    }
    let mut high = (low * 2.0).min(limit);
    loop {
        if high <= low {
            at_limit = true;
            break;
        }
        if !probe(high, &mut probes)? {
            break;
        }
        low = high;
        if low >= limit {
            at_limit = true;
            break;
        }
        high = (high * 2.0).min(limit);
        if probes.len() > 40 {
            break;
        }
    }
    if !at_limit {
        while (high - low) / low > 0.05 && !(integer && high - low <= 1.0) {
            let mid = if integer {
                ((low + high) / 2.0).floor()
            } else {
                (low + high) / 2.0
            };
            if mid <= low {
                break;
            }
            if probe(mid, &mut probes)? {
                low = mid;
            } else {
                high = mid;
            }
        }
    }
    // Confirm; step down once if the machine was lucky the first time.
    let mut best = low;
    if !probe(best, &mut probes)? {
        best = if integer {
            (best - 1.0).max(1.0)
        } else {
            best * 0.95
        };
        if !probe(best, &mut probes)? {
            return Ok(nothing_kept_up(probes));
        }
    }
    Ok(report(
        what,
        Some(best),
        at_limit,
        raw_direct_write_bytes_per_s,
        base,
        probes,
    ))
}

fn report(
    what: Searched,
    max: Option<f64>,
    at_limit: bool,
    raw: f64,
    base: &Session,
    probes: Vec<Probe>,
) -> FindMaxReport {
    let rate = max.and_then(|m| {
        probes
            .iter()
            .rev()
            .find(|p| p.value == m)
            .map(|p| p.requested_bytes_per_s)
    });
    FindMaxReport {
        target: None,
        what,
        max,
        max_requested_bytes_per_s: rate,
        at_limit,
        raw_direct_write_bytes_per_s: raw,
        probe_duration: base.record.duration,
        probes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_model::record::{PreallocMode, RecordConfig, WriteMode};
    use std::time::Duration;

    fn base() -> Session {
        Session {
            record: RecordConfig {
                dir: std::env::temp_dir(),
                streams: vec![StreamSpec {
                    name: "cam0".into(),
                    fps: 30.0,
                    sizes: FrameSizes::Bitrate {
                        bits_per_s: 12_000_000,
                        gop: 30,
                        i_to_p: 8.0,
                        jitter: 0.2,
                    },
                }],
                buffers: 4,
                write_mode: WriteMode::Null,
                queue_depth: 4,
                shared_writer: false,
                write_size: None,
                fdatasync_every_frames: None,
                fdatasync_every: None,
                preallocate: None,
                prealloc_mode: PreallocMode::Fallocate,
                // 12 frames a probe: under 10 a stream is too short to judge.
                duration: Duration::from_millis(400),
                stall_threshold: Duration::from_millis(100),
                seed: 1,
                keep: false,
                frame_records: false,
                segments: sinkrate_model::record::SegmentPolicy {
                    every: None,
                    bytes: None,
                    loop_fill_pct: None,
                },
                power_cut_at: None,
                verify_every: None,
                run_tag: 0,
                replay: None,
                replay_speed: 1.0,
            },
            label: "test".into(),
            dirty_limits: None,
            board_ram_bytes: None,
            sustained_bytes_per_s: None,
            power_switch: None,
            endurance: crate::session::EnduranceFrom::Known(None),
            hours_per_day: crate::session::DEFAULT_HOURS_PER_DAY,
            kernel_events_off: None,
        }
    }

    /// One frame rate per stream, so each searched quantity moves the rate the way it
    /// says: a faster replay keeps each frame's size (the rate grows with it), a higher fps
    /// spreads the same bitrate over more frames.
    #[test]
    fn a_probe_moves_the_rate_as_its_quantity_says() {
        let b = base();
        let rate = |s: &Session| s.record.requested_bytes_per_s();
        let frame = |s: &Session| s.record.streams[0].mean_frame_bytes();
        let faster = with_value(&b, Searched::Speed, 2.0);
        assert!((rate(&faster) - 2.0 * rate(&b)).abs() < 1.0);
        assert!((frame(&faster) - frame(&b)).abs() < 1e-6);
        assert_eq!(faster.record.duration, b.record.duration / 2);
        let more_fps = with_value(&b, Searched::Fps, 60.0);
        assert!((rate(&more_fps) - rate(&b)).abs() < 1e-6);
        assert!((frame(&more_fps) - frame(&b) / 2.0).abs() < 1e-6);
        let more_bits = with_value(&b, Searched::Bitrate, 24e6);
        assert!((rate(&more_bits) - 2.0 * rate(&b)).abs() < 1e-6);
    }

    #[test]
    fn values_reshape_the_streams() {
        let b = base();
        assert_eq!(
            with_value(&b, Searched::Streams, 3.0).record.streams.len(),
            3
        );
        let fps = with_value(&b, Searched::Fps, 15.0);
        assert_eq!(fps.record.streams[0].fps, 15.0);
        assert!((fps.record.requested_bytes_per_s() - 1.5e6).abs() < 1.0);
        let br = with_value(&b, Searched::Bitrate, 24e6);
        assert!((br.record.requested_bytes_per_s() - 3e6).abs() < 1.0);
        assert_eq!(start_value(&b, Searched::Bitrate).ok(), Some(12e6));
    }

    #[test]
    fn streams_stop_at_the_most_this_tool_runs() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut seen = Vec::new();
        // Small frames and a deep pool: a busy 2-core machine's scheduling stall cannot drop
        // a frame of 64 null-writing streams, so the search reaches its limit.
        let mut b = base();
        b.record.buffers = 64;
        b.record.streams[0].sizes = FrameSizes::Fixed { bytes: 4096 };
        let r = search(&b, Searched::Streams, 1e9, stop, &mut |p| {
            seen.push(p.value)
        })
        .expect("null writes keep up");
        assert_eq!(r.max, Some(64.0));
        assert!(r.at_limit);
        assert!(seen.iter().all(|v| *v <= 64.0), "{seen:?}");
    }
}
