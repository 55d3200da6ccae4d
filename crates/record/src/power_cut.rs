//! `--power-cut-at`: the cut, and the count afterwards. The session cuts the power through a
//! [`PowerSwitch`] (an emulated card; the command supplies it), ends the recording, has the
//! power restored and the filesystem mounted again, and then reads every stream's files back:
//! the frames the writer believed written, those a completed sync had acknowledged, and those
//! that are really there, whole.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;

use crate::frame_header::{self, HEADER_LEN};
use crate::stream::StreamResult;

use sinkrate_model::record::StreamSurvival;

/// Frames of this run found whole in `files` (a stream's segments, in order). Reading stops
/// in a file at the first place that does not hold a whole frame: the writer wrote frames
/// back to back, so nothing after a hole can be found by position.
pub fn frames_on_card(files: &[PathBuf], run_tag: u64) -> BTreeSet<u64> {
    let mut found = BTreeSet::new();
    let mut payload = Vec::new();
    for path in files {
        let Ok(file) = std::fs::File::open(path) else {
            continue;
        };
        let mut r = std::io::BufReader::with_capacity(1 << 20, file);
        let mut head = [0u8; HEADER_LEN];
        while r.read_exact(&mut head).is_ok() {
            let Some((h, crc)) = frame_header::read(&head) else {
                break;
            };
            if h.run_tag != run_tag {
                break;
            }
            payload.resize((h.size as usize).saturating_sub(HEADER_LEN), 0);
            if r.read_exact(&mut payload).is_err() || !frame_header::payload_ok(&payload, crc) {
                break;
            }
            found.insert(h.frame);
        }
    }
    found
}

/// What a completed sync makes durable, by write mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCovers {
    /// Every write is durable when it returns (O_DSYNC).
    EveryWrite,
    /// Every frame written before the sync.
    FramesBefore,
    /// Every frame before the last one: O_DIRECT writes whole blocks, and the last frame's
    /// tail waits in memory for the next frame's write.
    FramesBeforeTheLast,
}

impl SyncCovers {
    pub fn of(mode: sinkrate_model::record::WriteMode) -> SyncCovers {
        use sinkrate_model::record::WriteMode;
        match mode {
            WriteMode::Dsync => SyncCovers::EveryWrite,
            WriteMode::Direct | WriteMode::Uring => SyncCovers::FramesBeforeTheLast,
            WriteMode::Buffered | WriteMode::Null => SyncCovers::FramesBefore,
        }
    }
}

/// The longest stretch of the stream's recording that rested on no acknowledgement, in
/// seconds: for each written frame, from its capture to the return of the write (O_DSYNC)
/// or of the first sync that covers it. A power cut at the worst instant loses that much
/// even on a device that keeps every promise. None when the writer never asked the device
/// (no sync, no O_DSYNC): then nothing the recorder saw bounds the loss. Frames after the
/// last periodic sync wait for the sync at the end of the recording, which says nothing of
/// the cadence, and are left out.
pub fn unacknowledged_worst_s(r: &StreamResult, covers: SyncCovers) -> Option<f64> {
    let mut written: Vec<(u64, u64, u64)> = r
        .frames
        .iter()
        .filter_map(|f| Some((f.frame, f.capture_ns, f.write_end_ns?)))
        .collect();
    if covers == SyncCovers::EveryWrite {
        return written
            .iter()
            .map(|(_, capture, end)| end.saturating_sub(*capture))
            .max()
            .map(|ns| ns as f64 / 1e9);
    }
    if r.syncs.is_empty() {
        return None;
    }
    written.sort_unstable();
    // Syncs complete in order and each covers every frame written before it, so one pass
    // over both finds each frame's first covering sync.
    let lag = u64::from(covers == SyncCovers::FramesBeforeTheLast);
    let mut syncs = r.syncs.iter().peekable();
    let mut worst: Option<u64> = None;
    for (frame, capture, _) in written {
        while syncs
            .peek()
            .is_some_and(|s| s.last_frame < frame.saturating_add(lag))
        {
            syncs.next();
        }
        let Some(sync) = syncs.peek() else { break };
        let wait = sync.end_ns.saturating_sub(capture);
        worst = Some(worst.map_or(wait, |w| w.max(wait)));
    }
    worst.map(|ns| ns as f64 / 1e9)
}

/// One stream's account: `r` is what the writer did (its per-frame records and syncs),
/// `on_card` what was read back.
pub fn survival(
    r: &StreamResult,
    fps: f64,
    cut_ns: u64,
    covers: SyncCovers,
    on_card: &BTreeSet<u64>,
) -> StreamSurvival {
    let believed: Vec<u64> = r
        .frames
        .iter()
        .filter(|f| f.write_end_ns.is_some_and(|e| e <= cut_ns))
        .map(|f| f.frame)
        .collect();
    let synced = || {
        r.syncs
            .iter()
            .filter(|s| s.end_ns <= cut_ns)
            .map(|s| s.last_frame)
            .max()
    };
    let durable_up_to = match covers {
        SyncCovers::EveryWrite => believed.iter().max().copied(),
        SyncCovers::FramesBefore => synced(),
        SyncCovers::FramesBeforeTheLast => synced().and_then(|f| f.checked_sub(1)),
    };
    let durable: Vec<u64> = believed
        .iter()
        .copied()
        .filter(|f| durable_up_to.is_some_and(|d| *f <= d))
        .collect();
    let survived = believed.iter().filter(|f| on_card.contains(f)).count() as u64;
    let dropped: BTreeSet<u64> = r
        .frames
        .iter()
        .filter(|f| f.write_start_ns.is_none())
        .map(|f| f.frame)
        .collect();
    // Frame k is captured at k/fps (the camera's schedule); the first one captured before
    // the cut, not dropped by the camera, and not on the card, starts the lost stretch.
    let interval_ns = 1e9 / fps.max(1e-9);
    let first_missing = (0u64..)
        .take_while(|k| (*k as f64 * interval_ns) < cut_ns as f64)
        .find(|k| !dropped.contains(k) && !on_card.contains(k));
    let recording_lost_s = first_missing.map_or(0.0, |k| {
        (cut_ns as f64 - k as f64 * interval_ns).max(0.0) / 1e9
    });
    StreamSurvival {
        stream: r.name.clone(),
        frames_believed_written: believed.len() as u64,
        frames_acknowledged_durable: durable.len() as u64,
        frames_survived: survived,
        frames_lost: believed.len() as u64 - survived,
        frames_durable_lost: durable.iter().filter(|f| !on_card.contains(f)).count() as u64,
        recording_lost_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{FrameRecord, SyncPoint};

    fn written(frame: u64, end_ms: u64) -> FrameRecord {
        FrameRecord {
            frame,
            size: 1000,
            capture_ns: frame * 100_000_000,
            write_start_ns: Some(end_ms * 1_000_000 - 1),
            write_end_ns: Some(end_ms * 1_000_000),
        }
    }

    #[test]
    fn the_longest_unacknowledged_stretch_runs_from_capture_to_the_covering_sync() {
        // 10 fps, frames written 5 ms after capture; syncs after frames 4 (at 0.5 s) and 9
        // (at 1.02 s).
        let mut r = StreamResult {
            frames: (0..10).map(|k| written(k, k * 100 + 5)).collect(),
            ..StreamResult::default()
        };
        let sync = |end_ms: u64, last_frame: u64| SyncPoint {
            end_ns: end_ms * 1_000_000,
            last_frame,
        };
        assert_eq!(unacknowledged_worst_s(&r, SyncCovers::FramesBefore), None);
        r.syncs = vec![sync(500, 4), sync(1020, 9)];
        // Frame 5, captured at 0.5 s, waits for the sync at 1.02 s.
        let worst = unacknowledged_worst_s(&r, SyncCovers::FramesBefore).expect("synced");
        assert!((worst - 0.52).abs() < 1e-9, "{worst}");
        // O_DIRECT: the sync after frame 4 covers frames up to 3; frame 4 (0.4 s) waits for
        // 1.02 s, and frame 9 for a sync that never came (left out).
        let worst = unacknowledged_worst_s(&r, SyncCovers::FramesBeforeTheLast).expect("synced");
        assert!((worst - 0.62).abs() < 1e-9, "{worst}");
        // O_DSYNC: each write's own return.
        let worst = unacknowledged_worst_s(&r, SyncCovers::EveryWrite).expect("written");
        assert!((worst - 0.005).abs() < 1e-9, "{worst}");
    }

    #[test]
    fn counts_believed_durable_and_survived_frames_and_the_lost_stretch() {
        // 10 fps; frames 0-7 written by 0.75 s, a sync after frame 4; cut at 0.8 s.
        let mut r = StreamResult {
            name: "cam0".into(),
            ..StreamResult::default()
        };
        r.frames = (0..8).map(|k| written(k, k * 100 + 5)).collect();
        r.frames.push(written(8, 900)); // finished after the cut
        r.syncs.push(SyncPoint {
            end_ns: 500_000_000,
            last_frame: 4,
        });
        let on_card: BTreeSet<u64> = (0..=5).collect();
        let s = survival(&r, 10.0, 800_000_000, SyncCovers::FramesBefore, &on_card);
        assert_eq!(s.frames_believed_written, 8);
        assert_eq!(s.frames_acknowledged_durable, 5);
        assert_eq!(s.frames_survived, 6);
        assert_eq!(s.frames_lost, 2);
        assert_eq!(s.frames_durable_lost, 0);
        // Frame 6 (captured at 0.6 s) is the first missing: 0.2 s lost.
        assert!((s.recording_lost_s - 0.2).abs() < 1e-9);
        let synced = survival(&r, 10.0, 800_000_000, SyncCovers::EveryWrite, &on_card);
        assert_eq!(synced.frames_acknowledged_durable, 8);
        assert_eq!(synced.frames_durable_lost, 2);
        let direct = survival(
            &r,
            10.0,
            800_000_000,
            SyncCovers::FramesBeforeTheLast,
            &on_card,
        );
        assert_eq!(direct.frames_acknowledged_durable, 4);
    }

    #[test]
    fn reads_back_whole_frames_until_the_first_hole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cam0.bin");
        let mut bytes = Vec::new();
        for k in 0..5u64 {
            let mut frame = vec![k as u8; 300];
            frame_header::stamp(
                &mut frame,
                &frame_header::FrameHeader {
                    run_tag: 7,
                    frame: k,
                    size: 300,
                    capture_ns: 0,
                },
            );
            bytes.extend(frame);
        }
        bytes[3 * 300 + 100] ^= 0xff; // frame 3's payload damaged
        std::fs::write(&path, &bytes).expect("write");
        let found = frames_on_card(std::slice::from_ref(&path), 7);
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(
            frames_on_card(&[path], 8).is_empty(),
            "another run's frames"
        );
    }
}
