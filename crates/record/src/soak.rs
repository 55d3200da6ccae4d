//! `--verify-every`: during a long recording, every segment the writers closed is read back
//! from the device at that interval, frame by frame (each frame's header and payload
//! checksum), so that a card returning stale or corrupt data is caught during the soak and
//! not at its end. The reads go to the device: the segment is synced and its cached pages
//! dropped first.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::frame_header::{self, HEADER_LEN};
use crate::stream::ClosedSegment;
use sinkrate_model::record::{SegmentFailure, SoakVerify};

/// The reader of closed segments, on its own thread.
pub struct Verifier {
    handle: Option<std::thread::JoinHandle<SoakVerify>>,
    done: Arc<AtomicBool>,
}

/// What stops the verifier, and what it tells when it finds a bad segment.
pub struct VerifierLinks {
    pub closed: Arc<Mutex<Vec<ClosedSegment>>>,
    /// The recording's clock: the intervals count from its start.
    pub clock: Instant,
    /// Set by the verifier on a bad segment: the recording ends.
    pub halt: Arc<AtomicBool>,
    pub stop: Arc<AtomicBool>,
}

impl Verifier {
    pub fn start(links: VerifierLinks, every: Duration, run_tag: u64) -> Verifier {
        let done = Arc::new(AtomicBool::new(false));
        let finished = done.clone();
        let handle = std::thread::Builder::new()
            .name("sinkrate-verify".into())
            .spawn(move || {
                let mut soak = SoakVerify {
                    every_s: every.as_secs_f64(),
                    ..SoakVerify::default()
                };
                let mut next = links.clock + every;
                loop {
                    let over =
                        finished.load(Ordering::Relaxed) || links.stop.load(Ordering::Relaxed);
                    if !over && Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    next += every;
                    let due: Vec<ClosedSegment> = std::mem::take(
                        &mut *links
                            .closed
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner),
                    );
                    for seg in due {
                        match check_segment(&seg, run_tag) {
                            Checked::Whole => {
                                soak.segments_verified += 1;
                                soak.bytes_verified += seg.bytes;
                            }
                            Checked::Gone => soak.segments_deleted_first += 1,
                            Checked::Bad {
                                offset,
                                frame,
                                holds,
                            } => {
                                soak.failure = Some(SegmentFailure {
                                    stream: seg.stream.clone(),
                                    file: seg.path.display().to_string(),
                                    found_at_s: links.clock.elapsed().as_secs_f64(),
                                    offset,
                                    frame,
                                    holds,
                                });
                                links.halt.store(true, Ordering::Relaxed);
                                return soak;
                            }
                        }
                    }
                    if over {
                        return soak;
                    }
                }
            })
            .ok();
        Verifier { handle, done }
    }

    /// Reads what is still due once more (the segments closed since the last pass), then
    /// returns the account.
    pub fn finish(mut self) -> SoakVerify {
        self.done.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Verifier {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

enum Checked {
    Whole,
    /// Deleted before its turn (loop recording).
    Gone,
    Bad {
        offset: u64,
        frame: Option<u64>,
        holds: String,
    },
}

/// Syncs `file` and drops its cached pages, so that what is read next comes from the
/// device.
fn from_the_device(file: &std::fs::File) {
    let _ = file.sync_data();
    #[cfg(target_os = "linux")]
    // SAFETY: posix_fadvise on a descriptor owned for the call; no memory is passed.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file.as_raw_fd();
}

/// Reads a closed segment back: frame after frame, each with this run's tag, the next
/// frame's number, a header whose checksum holds and a payload that matches its own, up to
/// the bytes the writer put in it.
fn check_segment(seg: &ClosedSegment, run_tag: u64) -> Checked {
    let file = match std::fs::File::open(&seg.path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Checked::Gone,
        Err(e) => {
            return Checked::Bad {
                offset: 0,
                frame: None,
                holds: format!("nothing readable ({e})"),
            }
        }
    };
    from_the_device(&file);
    scan(file, seg.bytes, run_tag)
}

fn scan(file: std::fs::File, bytes: u64, run_tag: u64) -> Checked {
    let mut r = std::io::BufReader::with_capacity(1 << 20, file);
    let mut offset = 0u64;
    // The lowest frame number the next frame may have.
    let mut expected: Option<u64> = None;
    let mut head = [0u8; HEADER_LEN];
    let mut payload = Vec::new();
    while offset < bytes {
        let bad = |holds: String| Checked::Bad {
            offset,
            frame: expected,
            holds,
        };
        if let Err(e) = r.read_exact(&mut head) {
            return bad(if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!("nothing: the file ends before the {} bytes written", bytes)
            } else {
                format!("a read error ({e})")
            });
        }
        let Some((h, crc)) = frame_header::read(&head) else {
            return bad(if head.iter().all(|b| *b == 0) {
                "zeros: the data never reached the card, or the card lost it".into()
            } else {
                "no frame header: stale or corrupt data".into()
            });
        };
        if h.run_tag != run_tag {
            return bad("a frame of another recording: stale data the card returned".into());
        }
        // Frames the camera dropped were never written: numbers may skip forward, never
        // back or repeat.
        if expected.is_some_and(|n| h.frame < n) {
            return bad(format!(
                "frame {} of this recording, out of place: a misdirected write",
                h.frame
            ));
        }
        payload.resize((h.size as usize).saturating_sub(HEADER_LEN), 0);
        if let Err(e) = r.read_exact(&mut payload) {
            return bad(format!("frame {} cut short ({e})", h.frame));
        }
        if !frame_header::payload_ok(&payload, crc) {
            return bad(format!(
                "frame {} with a payload that does not match its checksum: corrupt data",
                h.frame
            ));
        }
        offset += h.size;
        expected = Some(h.frame + 1);
    }
    Checked::Whole
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_header::FrameHeader;
    use std::io::Write;

    fn frame(n: u64, tag: u64) -> Vec<u8> {
        let mut f = vec![0x5a; 4096];
        frame_header::stamp(
            &mut f,
            &FrameHeader {
                run_tag: tag,
                frame: n,
                size: 4096,
                capture_ns: n * 1000,
            },
        );
        f
    }

    fn segment(frames: &[Vec<u8>]) -> (tempfile::NamedTempFile, u64) {
        let mut t = tempfile::NamedTempFile::new().unwrap();
        for f in frames {
            t.write_all(f).unwrap();
        }
        let n = frames.iter().map(|f| f.len() as u64).sum();
        (t, n)
    }

    fn check(t: &tempfile::NamedTempFile, bytes: u64) -> Checked {
        check_segment(
            &ClosedSegment {
                stream: "cam0".into(),
                path: t.path().to_path_buf(),
                bytes,
            },
            7,
        )
    }

    #[test]
    fn a_segment_read_back_whole_passes_and_each_fault_is_named() {
        let (t, n) = segment(&[frame(10, 7), frame(11, 7), frame(12, 7)]);
        assert!(matches!(check(&t, n), Checked::Whole));
        // Frames 12 to 20 dropped by the camera were never written: whole all the same.
        let (t, n) = segment(&[frame(10, 7), frame(11, 7), frame(21, 7)]);
        assert!(matches!(check(&t, n), Checked::Whole));
        // A frame written again further on is out of place.
        let (t, n) = segment(&[frame(10, 7), frame(11, 7), frame(11, 7)]);
        assert!(
            matches!(check(&t, n), Checked::Bad { holds, .. } if holds.contains("out of place"))
        );
        // Stale: the card returned an earlier recording's frame in the middle.
        let (t, n) = segment(&[frame(10, 7), frame(11, 3), frame(12, 7)]);
        match check(&t, n) {
            Checked::Bad {
                offset,
                frame,
                holds,
            } => {
                assert_eq!((offset, frame), (4096, Some(11)));
                assert!(holds.contains("another recording"), "{holds}");
            }
            _ => panic!("stale data passed"),
        }
        // Lost: zeros where the second frame was.
        let (t, n) = segment(&[frame(10, 7), vec![0; 4096], frame(12, 7)]);
        assert!(matches!(check(&t, n), Checked::Bad { holds, .. } if holds.starts_with("zeros")));
        // Corrupt: one payload byte flipped.
        let mut bad = frame(11, 7);
        bad[2000] ^= 1;
        let (t, n) = segment(&[frame(10, 7), bad, frame(12, 7)]);
        assert!(matches!(check(&t, n), Checked::Bad { holds, .. } if holds.contains("checksum")));
        // Short: the writer put more in it than is there.
        let (t, n) = segment(&[frame(10, 7)]);
        assert!(
            matches!(check(&t, n + 4096), Checked::Bad { holds, .. } if holds.contains("file ends"))
        );
        // Deleted by loop recording before its turn.
        let gone = ClosedSegment {
            stream: "cam0".into(),
            path: std::path::PathBuf::from("/nonexistent/sinkrate-seg.bin"),
            bytes: 1,
        };
        assert!(matches!(check_segment(&gone, 7), Checked::Gone));
    }
}
