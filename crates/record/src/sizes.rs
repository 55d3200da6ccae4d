//! Sizes from the run: the capture pool that would have ridden out every stall the recording
//! met, and the lowest card class that carries its streams. Pure: the frames' own timings in,
//! figures out.

use std::collections::VecDeque;

use sinkrate_model::record::{CardClass, DeviceLimit, FrameColumns, PoolSize};

/// The smallest pool (in frames, as `--buffers` counts them: from capture until the frame's
/// write returns) with which this stream would have dropped nothing: its frames replayed
/// in order through one writer with an unbounded pool, each written frame taking the time
/// the writer took for it, each dropped one the median of the others. None without frames.
///
/// The writer's time for a frame runs from when it could have begun it (the frame captured
/// and the writer's previous write returned) to its write's return: the write call and the
/// writer's own time around it, which a busy machine lengthens as it does for any recorder
/// there. A run that dropped nothing is so replayed to the very times it had, so the figure
/// is the pool the recorder counted.
pub fn pool_needed(c: &FrameColumns, buffers: usize) -> Option<PoolSize> {
    let n = c.frame.len();
    // Per written frame: the writer's time for it, and its write call alone (what a backlog
    // rests on is named by its longest call, the card's part).
    let mut last_end: Option<u64> = None;
    let (services, calls): (Vec<Option<u64>>, Vec<Option<u64>>) = (0..n)
        .map(|k| {
            let capture = c.capture_us.get(k).copied().unwrap_or(0);
            match (c.write_start_us.get(k), c.write_end_us.get(k)) {
                (Some(Some(s)), Some(Some(e))) => {
                    let could_begin = last_end.unwrap_or(0).max(capture).min(*s);
                    last_end = Some(*e);
                    (
                        Some(e.saturating_sub(could_begin)),
                        Some(e.saturating_sub(*s)),
                    )
                }
                _ => (None, None),
            }
        })
        .unzip();
    let mut written: Vec<u64> = services.iter().flatten().copied().collect();
    if written.is_empty() {
        return None;
    }
    written.sort_unstable();
    let typical = written[written.len() / 2];
    let largest_frame = c.size_bytes.iter().copied().max().unwrap_or(0);
    let mut in_pool: VecDeque<u64> = VecDeque::new();
    let mut finish_prev = 0u64;
    let mut peak = 0usize;
    let mut peak_at_us = 0u64;
    // The longest write since the pool was last empty: what the backlog at its peak rests on.
    let mut episode_longest = (0u64, 0u64);
    let mut peak_rests_on = (0u64, 0u64);
    for (k, &capture) in c.capture_us.iter().enumerate().take(n) {
        while in_pool.front().is_some_and(|f| *f <= capture) {
            in_pool.pop_front();
        }
        if in_pool.is_empty() {
            episode_longest = (0, 0);
        }
        let service = services.get(k).copied().flatten().unwrap_or(typical);
        let call = calls.get(k).copied().flatten().unwrap_or(service);
        let start = capture.max(finish_prev);
        let finish = start + service;
        finish_prev = finish;
        if call > episode_longest.1 {
            episode_longest = (start + service - call, call);
        }
        in_pool.push_back(finish);
        if in_pool.len() > peak {
            peak = in_pool.len();
            peak_at_us = capture;
            peak_rests_on = episode_longest;
        }
    }
    let interval_s = match (c.capture_us.first(), c.capture_us.last()) {
        (Some(a), Some(b)) if n > 1 => b.saturating_sub(*a) as f64 / 1e6 / (n - 1) as f64,
        _ => 0.0,
    };
    Some(PoolSize {
        stream: c.stream.clone(),
        frames: peak,
        bytes: peak as u64 * largest_frame,
        seconds: peak as f64 * interval_s,
        peak_at_s: peak_at_us as f64 / 1e6,
        rests_on_write_at_s: peak_rests_on.0 as f64 / 1e6,
        rests_on_write_ms: peak_rests_on.1 as f64 / 1e3,
        buffers,
        frames_judged: n as u64,
        truncated: c.truncated,
    })
}

/// The lowest video speed class whose guaranteed rate carries `bytes_per_s` with a tenth to
/// spare (the model's one table of SD classes).
pub fn card_class(bytes_per_s: f64) -> Option<CardClass> {
    sinkrate_model::sdclass::SdClass::video_class_for(bytes_per_s).map(|c| CardClass {
        name: c.name.to_string(),
        min_bytes_per_s: c.min_write_bytes_per_s,
    })
}

/// The per-device dirty limit sized from a run: `device_bytes_per_s` (its rate while busy)
/// times the stall the recording rides out, the seconds of stream its smallest capture pool
/// holds (`pool_s`), rounded up to whole MiB (at least one). Pure: the bdi and what is in force
/// are the caller's to fill.
///
/// Why that size: under a strict cap the kernel pauses a writer for at most about an eighth
/// of the time its device takes to write back what the device holds dirty (`wb_max_pause` in
/// mm/page-writeback.c: 0.128 s per second of it at HZ 250 or 1000, 0.21 s at HZ 300, never
/// more than 0.2 s), and one write can take several pauses. A cap the card drains in the
/// pool's time keeps those pauses inside what the pool rides out; a larger one lets them
/// outlast it. bench/device-limit measures it: on a 20 MB/s card, two 6.6 MB/s streams with
/// 4-frame pools dropped nothing under strict caps of 2-4 MiB, and frames under 8-32 MiB.
pub fn device_limit(
    device_bytes_per_s: Option<f64>,
    stream_bytes_per_s: f64,
    pool_s: f64,
) -> DeviceLimit {
    const MIB: f64 = (1u64 << 20) as f64;
    let ride_out_s = if pool_s.is_finite() {
        pool_s.max(0.0)
    } else {
        0.0
    };
    let measured = device_bytes_per_s.filter(|d| d.is_finite() && *d > 0.0);
    DeviceLimit {
        bdi: None,
        max_bytes: measured.map(|d| ((d * ride_out_s / MIB).ceil().max(1.0) * MIB) as u64),
        device_bytes_per_s: measured,
        ride_out_s,
        keeps_up: measured.is_some_and(|d| d >= stream_bytes_per_s * 1.1),
        in_force: false,
        held_bytes: None,
        why_not: measured.is_none().then(|| {
            "the device's rate was not measured (no diskstats for it, or too little written)"
                .to_string()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_limit_is_the_device_rate_times_the_stall_the_pool_rides_out() {
        // 10 MB/s card, 36 frames of 30 fps (1.2 s): 12 MB, 11.44 MiB, rounded up to 12 MiB.
        let l = device_limit(Some(10e6), 4.9e6, 36.0 / 30.0);
        assert_eq!(l.max_bytes, Some(12 << 20));
        assert!((l.ride_out_s - 1.2).abs() < 1e-9);
        assert!(l.keeps_up);
        // A pool of 4 frames (0.13 s): 1.33 MB, two whole MiB; one at the least.
        let l = device_limit(Some(10e6), 4.9e6, 4.0 / 30.0);
        assert!((l.ride_out_s - 4.0 / 30.0).abs() < 1e-9);
        assert_eq!(l.max_bytes, Some(2 << 20));
        assert_eq!(
            device_limit(Some(10e6), 4.9e6, 0.01).max_bytes,
            Some(1 << 20)
        );
        assert_eq!(
            device_limit(Some(10e6), 4.9e6, f64::INFINITY).ride_out_s,
            0.0
        );
        // Its longest pause is an eighth of the pool's time; the 16 MiB cap of a udev rule
        // seen in the wild pauses a writer on that card for 0.2 s, longer than the pool.
        let pause = DeviceLimit::longest_throttle_pause_s(2 << 20, 10e6);
        assert!(pause < 4.0 / 30.0 / 4.0, "{pause}");
        assert_eq!(DeviceLimit::longest_throttle_pause_s(16 << 20, 10e6), 0.2);
        assert_eq!(DeviceLimit::longest_throttle_pause_s(1 << 20, 0.0), 0.2);
        // A card slower than the streams: sized, but said not to keep up.
        assert!(!device_limit(Some(5e6), 4.9e6, 2.0).keeps_up);
        // Nothing measured: no cap, and why.
        let l = device_limit(None, 4.9e6, 2.0);
        assert_eq!(l.max_bytes, None);
        assert!(l.why_not.is_some() && !l.keeps_up);
        assert_eq!(device_limit(Some(f64::NAN), 1.0, 1.0).max_bytes, None);
    }

    /// 30 fps frames of 100 kB, each written in 2 ms, but frame 10's write takes `stall_ms`.
    fn columns(stall_ms: u64, dropped: &[usize]) -> FrameColumns {
        let n = 60;
        let mut c = FrameColumns {
            stream: "s0".into(),
            ..FrameColumns::default()
        };
        let mut free_at = 0;
        for k in 0..n {
            let capture = k as u64 * 33_333;
            c.frame.push(k as u64);
            c.size_bytes.push(100_000);
            c.capture_us.push(capture);
            if dropped.contains(&k) {
                c.write_start_us.push(None);
                c.write_end_us.push(None);
                continue;
            }
            let start = capture.max(free_at);
            let took = if k == 10 { stall_ms * 1000 } else { 2_000 };
            c.write_start_us.push(Some(start));
            c.write_end_us.push(Some(start + took));
            free_at = start + took;
        }
        c
    }

    #[test]
    fn a_stall_needs_the_frames_that_arrive_while_it_lasts() {
        // Without a stall one frame is in the pool at a time.
        let quiet = pool_needed(&columns(2, &[]), 4).expect("pool");
        assert_eq!(quiet.frames, 1);
        // A 250 ms write from 333.3 ms holds its own frame while frames 11 to 17 arrive
        // (every 33.3 ms, the last at 566.7 ms): 8.
        let p = pool_needed(&columns(250, &[]), 16).expect("pool");
        assert_eq!(p.frames, 8);
        assert_eq!(p.bytes, 800_000);
        assert!((p.seconds - 8.0 / 30.0).abs() < 1e-3, "{}", p.seconds);
        assert!((p.rests_on_write_ms - 250.0).abs() < 1e-9);
        assert!((p.rests_on_write_at_s - 10.0 / 30.0).abs() < 1e-3);
        // The same stall with a pool of 4: frames dropped in the run are replayed at the
        // median write time, and the pool that would have held them is the same 8.
        let dropped = pool_needed(&columns(250, &[14, 15, 16, 17]), 4).expect("pool");
        assert_eq!(dropped.frames, 8);
        assert_eq!(dropped.buffers, 4);
        assert!(pool_needed(&FrameColumns::default(), 4).is_none());
    }

    /// A writer that a busy machine leaves 30 ms late before each write: the pool it
    /// needed is the one its frames' own times show (each frame held from its capture to
    /// its write's return), not the one of its write calls alone.
    #[test]
    fn a_late_writer_needs_the_pool_its_frames_times_show() {
        let mut c = FrameColumns {
            stream: "s0".into(),
            ..FrameColumns::default()
        };
        let mut free_at = 0;
        for k in 0..60u64 {
            let capture = k * 33_333;
            let start = capture.max(free_at) + 30_000;
            let end = start + if k == 10 { 250_000 } else { 2_000 };
            c.frame.push(k);
            c.size_bytes.push(100_000);
            c.capture_us.push(capture);
            c.write_start_us.push(Some(start));
            c.write_end_us.push(Some(end));
            free_at = end;
        }
        let held = (0..60)
            .map(|k| {
                (0..=k)
                    .filter(|&j| c.write_end_us[j].unwrap_or(0) > c.capture_us[k])
                    .count()
            })
            .max()
            .unwrap_or(0);
        let p = pool_needed(&c, 64).expect("pool");
        assert_eq!(p.frames, held);
        // More than the write calls alone would need (8 for the 250 ms write).
        assert!(held > 8, "{held}");
        assert!((p.rests_on_write_ms - 250.0).abs() < 1e-9);
    }

    #[test]
    fn the_card_class_carries_the_stream_with_a_tenth_to_spare() {
        assert_eq!(card_class(3e6).map(|c| c.name), Some("V6".into()));
        assert_eq!(card_class(9.5e6).map(|c| c.name), Some("V30".into()));
        assert_eq!(card_class(100e6), None);
    }
}
