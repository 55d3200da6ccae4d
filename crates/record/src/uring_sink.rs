//! io_uring output: O_DIRECT writes queued with a depth, through the engine's io_uring
//! backend (the one wrapper of the ring). Each frame is copied into a free aligned staging
//! slot (after the sub-block tail the previous frame left), its aligned part is queued as one
//! write per `write_size` chunk, and the frame counts as written when the last of its chunks
//! completes. The ring signals an eventfd on every completion, so a writer can sleep on it
//! and on its frame queue together and see completions when they happen.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use sinkrate_engine::backend::{Backend, Completion, IoDir, IoRequest, Uring};
use sinkrate_platform::buf::AlignedBuf;

use crate::sink::{Sink, BLOCK};

/// Ring entries; a frame with more chunks than this is pushed in several submits.
const RING_ENTRIES: u32 = 256;

/// A frame handed to the sink, waiting for its writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingFrame {
    pub index: u64,
    pub size: u64,
    pub capture_ns: u64,
    /// When the writer took the frame from its queue.
    pub accepted_ns: u64,
}

/// A frame whose writes are all done (or failed).
pub(crate) struct DoneFrame {
    pub frame: PendingFrame,
    pub end_ns: u64,
    pub result: io::Result<()>,
}

struct Slot {
    chunks_left: u32,
    submitted_ns: u64,
    frame: Option<PendingFrame>,
    error: Option<io::Error>,
}

pub(crate) struct UringSink {
    ring: Uring,
    completions: OwnedFd,
    /// The O_DIRECT file, its carry buffer, and its close-time tail and truncation.
    pub file: Sink,
    slots: Vec<AlignedBuf>,
    state: Vec<Slot>,
    free: Vec<usize>,
    in_flight: usize,
    busy_since_ns: Option<u64>,
    /// Time with at least one write in flight.
    pub busy_ns: u64,
}

pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Resets an eventfd's counter (nonblocking: nothing to read is fine).
pub(crate) fn drain_eventfd(fd: RawFd) {
    let mut counter = 0u64;
    // SAFETY: reads 8 bytes into a u64 on the stack.
    unsafe { libc::read(fd, (&mut counter as *mut u64).cast(), 8) };
}

impl UringSink {
    pub(crate) fn new(file: Sink, depth: usize, max_frame: usize) -> io::Result<UringSink> {
        let completions = eventfd()?;
        let ring = Uring::with_eventfd(RING_ENTRIES, completions.as_raw_fd())?;
        let depth = depth.max(1);
        Ok(UringSink {
            ring,
            completions,
            file,
            slots: (0..depth)
                .map(|_| AlignedBuf::new(max_frame + 2 * BLOCK))
                .collect(),
            state: (0..depth)
                .map(|_| Slot {
                    chunks_left: 0,
                    submitted_ns: 0,
                    frame: None,
                    error: None,
                })
                .collect(),
            free: (0..depth).rev().collect(),
            in_flight: 0,
            busy_since_ns: None,
            busy_ns: 0,
        })
    }

    pub(crate) fn event_fd(&self) -> RawFd {
        self.completions.as_raw_fd()
    }

    pub(crate) fn has_free_slot(&self) -> bool {
        !self.free.is_empty()
    }

    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight > 0
    }

    /// Copies the frame into a free slot and queues its aligned part. A frame that only
    /// adds to the carried tail completes at once and is returned.
    pub(crate) fn submit(
        &mut self,
        data: &[u8],
        frame: PendingFrame,
        clock: &Instant,
    ) -> io::Result<Option<DoneFrame>> {
        let Some(slot) = self.free.pop() else {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        };
        let Some(carry_buf) = self.file.staging.as_mut() else {
            self.free.push(slot);
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let carry = self.file.carry;
        let buf = self.slots[slot].as_mut_slice();
        buf[..carry].copy_from_slice(&carry_buf.as_slice()[..carry]);
        let total = carry + data.len();
        buf[carry..total].copy_from_slice(data);
        let aligned = total / BLOCK * BLOCK;
        carry_buf.as_mut_slice()[..total - aligned].copy_from_slice(&buf[aligned..total]);
        self.file.carry = total - aligned;
        if aligned == 0 {
            self.free.push(slot);
            return Ok(Some(DoneFrame {
                frame,
                end_ns: clock.elapsed().as_nanos() as u64,
                result: Ok(()),
            }));
        }
        let step = (self.file.write_size / BLOCK * BLOCK).max(BLOCK);
        let now = clock.elapsed().as_nanos() as u64;
        // The slot counts as in flight before its first chunk is queued, so that a failure
        // part-way leaves it to complete (with the error) when the queued chunks do.
        self.state[slot] = Slot {
            chunks_left: 0,
            submitted_ns: now,
            frame: Some(frame),
            error: None,
        };
        if self.in_flight == 0 {
            self.busy_since_ns = Some(now);
        }
        self.in_flight += 1;
        let base = buf.as_mut_ptr();
        let mut failure = None;
        let mut done = 0;
        while done < aligned {
            let n = step.min(aligned - done);
            let request = IoRequest {
                fd: self.file.fd,
                file_index: 0,
                dir: IoDir::Write,
                offset: self.file.offset,
                len: n,
                // SAFETY: done + n <= aligned <= the slot's length; the slot is not reused or
                // freed until every chunk queued from it has completed (reap, Drop).
                buf: unsafe { base.add(done) },
                tag: slot as u64,
                ioprio: 0,
            };
            if let Err(e) = self.ring.submit(&request) {
                failure = Some(e);
                break;
            }
            self.state[slot].chunks_left += 1;
            self.file.offset += n as u64;
            done += n;
        }
        if let Err(e) = self.ring.commit() {
            failure.get_or_insert(e);
        }
        if let Some(e) = failure {
            if self.state[slot].chunks_left > 0 {
                self.state[slot].error = Some(e);
            } else {
                self.in_flight -= 1;
                self.free.push(slot);
                let frame = self.state[slot].frame.take();
                return Ok(frame.map(|frame| DoneFrame {
                    frame,
                    end_ns: clock.elapsed().as_nanos() as u64,
                    result: Err(e),
                }));
            }
        }
        Ok(None)
    }

    /// Collects completed writes, waiting for at least one when `wait` and something is in
    /// flight. Each write call's latency goes to `latencies`, each finished frame to `done`.
    pub(crate) fn reap(
        &mut self,
        wait: bool,
        clock: &Instant,
        latencies: &mut Vec<u64>,
        done: &mut Vec<DoneFrame>,
    ) -> io::Result<()> {
        let mut cqes: Vec<Completion> = Vec::new();
        let min = usize::from(wait && self.in_flight > 0);
        self.ring.reap(min, usize::MAX, &mut cqes)?;
        drain_eventfd(self.completions.as_raw_fd());
        let now = clock.elapsed().as_nanos() as u64;
        for Completion {
            tag, result: res, ..
        } in cqes
        {
            let slot = tag as usize;
            let Some(state) = self.state.get_mut(slot).filter(|s| s.chunks_left > 0) else {
                continue;
            };
            latencies.push(now.saturating_sub(state.submitted_ns));
            if res < 0 {
                state
                    .error
                    .get_or_insert(io::Error::from_raw_os_error(-res as i32));
            } else if res == 0 {
                state
                    .error
                    .get_or_insert(io::Error::new(io::ErrorKind::WriteZero, "short write"));
            }
            state.chunks_left = state.chunks_left.saturating_sub(1);
            if state.chunks_left == 0 {
                if let Some(frame) = state.frame.take() {
                    done.push(DoneFrame {
                        frame,
                        end_ns: now,
                        result: match state.error.take() {
                            Some(e) => Err(e),
                            None => Ok(()),
                        },
                    });
                }
                self.free.push(slot);
                self.in_flight -= 1;
                if self.in_flight == 0 {
                    if let Some(since) = self.busy_since_ns.take() {
                        self.busy_ns += now.saturating_sub(since);
                    }
                }
            }
        }
        Ok(())
    }

    /// Waits until nothing is in flight.
    pub(crate) fn drain(
        &mut self,
        clock: &Instant,
        latencies: &mut Vec<u64>,
        done: &mut Vec<DoneFrame>,
    ) -> io::Result<()> {
        while self.in_flight > 0 {
            self.reap(true, clock, latencies, done)?;
        }
        Ok(())
    }
}

impl Drop for UringSink {
    fn drop(&mut self) {
        // The kernel may still write from the slots: wait for those writes before the slots
        // are freed (only an error path gets here with writes in flight).
        let mut left: usize = self.state.iter().map(|s| s.chunks_left as usize).sum();
        let mut out = Vec::new();
        while left > 0 {
            out.clear();
            if self.ring.reap(1, left, &mut out).is_err() {
                break;
            }
            left = left.saturating_sub(out.len());
        }
    }
}
