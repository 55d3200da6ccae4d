//! fio's `nbd` engine: reads, writes, trims and flushes of an NBD server's export over one
//! connection per job, with up to `iodepth` requests in flight.
//!
//! Replies are read by a thread of the connection's own: a client that stopped reading
//! replies while it wrote a large request could block against a server that is blocked
//! sending it replies (libnbd avoids the same by a non-blocking state machine).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{Backend, Completion, IoDir, IoRequest, Submitted};
use crate::nbd_client::{self as nbd, Command, Export, Stream};

/// The tag of a flush's completion: buffer slots are numbered from 0.
const FLUSH_TAG: u64 = u64::MAX;

/// A request the server has not answered yet.
struct Pending {
    tag: u64,
    /// Where a read's data goes: the worker's buffer, valid until the completion is reaped
    /// (the IoRequest contract).
    buf: *mut u8,
    len: usize,
    read: bool,
}

// SAFETY: the buffer a Pending points at is written only by the reply reader, and only
// until it hands the completion over; the worker does not touch it before reaping that.
unsafe impl Send for Pending {}

#[derive(Default)]
struct InFlight {
    by_cookie: HashMap<u64, Pending>,
    /// Set by the reply reader when the connection ended: no reply will come any more.
    closed: Option<String>,
}

pub struct Nbd {
    stream: Stream,
    export: Export,
    in_flight: Arc<Mutex<InFlight>>,
    completions: mpsc::Receiver<Completion>,
    /// Completions taken off the channel while waiting for a flush.
    ready: VecDeque<Completion>,
    reader: Option<JoinHandle<()>>,
    /// The reply reader's thread id, for its CPU time (0 until it has started).
    reader_tid: Arc<AtomicI32>,
    outgoing: Vec<u8>,
    next_cookie: u64,
}

impl Nbd {
    pub fn connect(uri: &str) -> io::Result<Nbd> {
        let uri = nbd::Uri::parse(uri).map_err(io::Error::other)?;
        let (stream, export) = nbd::connect(&uri)?;
        let in_flight = Arc::new(Mutex::new(InFlight::default()));
        let (tx, completions) = mpsc::channel();
        let mut replies = stream.try_clone()?;
        let shared = Arc::clone(&in_flight);
        let reader_tid = Arc::new(AtomicI32::new(0));
        let tid = Arc::clone(&reader_tid);
        let reader = std::thread::Builder::new()
            .name("nbd-replies".into())
            .spawn(move || {
                // Its CPU time is read from /proc, which only Linux has.
                #[cfg(target_os = "linux")]
                // SAFETY: gettid has no preconditions.
                tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
                #[cfg(not(target_os = "linux"))]
                let _ = &tid;
                read_replies(&mut replies, &shared, &tx)
            })?;
        Ok(Nbd {
            stream,
            export,
            in_flight,
            completions,
            ready: VecDeque::new(),
            reader: Some(reader),
            reader_tid,
            outgoing: Vec::new(),
            next_cookie: 1,
        })
    }

    fn queue(&mut self, command: Command, pending: Pending, offset: u64) -> io::Result<()> {
        let len =
            u32::try_from(pending.len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        let data = (command == Command::Write).then_some((pending.buf, pending.len));
        {
            let mut f = lock(&self.in_flight);
            if let Some(why) = &f.closed {
                return Err(io::Error::new(io::ErrorKind::ConnectionReset, why.clone()));
            }
            f.by_cookie.insert(cookie, pending);
        }
        self.outgoing
            .extend_from_slice(&nbd::request(command, cookie, offset, len));
        if let Some((buf, len)) = data {
            // SAFETY: a write's buffer holds `len` bytes and stays untouched until reaped.
            self.outgoing
                .extend_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        if !self.outgoing.is_empty() {
            let r = self.stream.write_all(&self.outgoing);
            self.outgoing.clear();
            r?;
        }
        Ok(())
    }

    fn next_completion(&mut self) -> io::Result<Completion> {
        self.completions.recv().map_err(|_| {
            let why = lock(&self.in_flight)
                .closed
                .clone()
                .unwrap_or_else(|| "the NBD connection ended".into());
            io::Error::new(io::ErrorKind::ConnectionReset, why)
        })
    }
}

fn lock(m: &Mutex<InFlight>) -> std::sync::MutexGuard<'_, InFlight> {
    // A poisoned lock still holds consistent maps: nothing panics while holding it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads replies until the connection ends, handing each request's completion back; then
/// fails every request still waiting, so that no reap waits for ever.
fn read_replies(
    replies: &mut Stream,
    in_flight: &Mutex<InFlight>,
    done: &mpsc::Sender<Completion>,
) {
    let why = loop {
        let (error, cookie) = match nbd::read_reply(replies) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                break "the NBD server closed the connection".to_string()
            }
            Err(e) => break format!("the NBD connection failed: {e}"),
        };
        let Some(p) = lock(in_flight).by_cookie.remove(&cookie) else {
            break format!("the NBD server answered request {cookie}, which was not asked");
        };
        if p.read && error == 0 {
            // SAFETY: the read's buffer holds `len` bytes and is the worker's to fill
            // until this completion is reaped.
            let into = unsafe { std::slice::from_raw_parts_mut(p.buf, p.len) };
            if let Err(e) = replies.read_exact(into) {
                break format!("the NBD connection failed in a read's data: {e}");
            }
        }
        let result = if error == 0 {
            p.len as i64
        } else {
            // The protocol's error numbers are Linux's errno values.
            -i64::from(error)
        };
        let _ = done.send(Completion {
            tag: p.tag,
            result,
            times: None,
        });
    };
    let mut f = lock(in_flight);
    f.closed = Some(why);
    for (_, p) in f.by_cookie.drain() {
        let _ = done.send(Completion {
            tag: p.tag,
            result: -i64::from(libc::ECONNRESET),
            times: None,
        });
    }
}

impl Backend for Nbd {
    fn name(&self) -> &'static str {
        "nbd"
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        let command = match req.dir {
            IoDir::Read => Command::Read,
            IoDir::Write => Command::Write,
            IoDir::Trim => Command::Trim,
        };
        let pending = Pending {
            tag: req.tag,
            buf: req.buf,
            len: req.len,
            read: req.dir == IoDir::Read,
        };
        self.queue(command, pending, req.offset)?;
        Ok(Submitted::Queued)
    }

    fn commit(&mut self) -> io::Result<usize> {
        let n = usize::from(!self.outgoing.is_empty());
        self.send()?;
        Ok(n)
    }

    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<Completion>) -> io::Result<()> {
        let start = out.len();
        while out.len() - start < max {
            let Some(c) = self.ready.pop_front() else {
                break;
            };
            out.push(c);
        }
        while out.len() - start < min.min(max) {
            let c = self.next_completion()?;
            out.push(c);
        }
        while out.len() - start < max {
            match self.completions.try_recv() {
                Ok(c) => out.push(c),
                Err(_) => break,
            }
        }
        Ok(())
    }

    fn helper_cpu_ns(&self) -> (u64, u64) {
        match self.reader_tid.load(Ordering::Relaxed) {
            0 => (0, 0),
            tid => super::thread_cpu_ns(tid),
        }
    }

    /// An NBD flush: the server makes every write it has answered durable.
    fn sync_file(&mut self, _: usize, _: std::os::fd::RawFd, _: bool) -> io::Result<()> {
        if !self.export.can_flush() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the NBD export does not take flushes",
            ));
        }
        let flush = Pending {
            tag: FLUSH_TAG,
            buf: std::ptr::null_mut(),
            len: 0,
            read: false,
        };
        self.queue(Command::Flush, flush, 0)?;
        self.send()?;
        loop {
            let c = self.next_completion()?;
            if c.tag == FLUSH_TAG {
                return if c.result < 0 {
                    Err(io::Error::from_raw_os_error(-c.result as i32))
                } else {
                    Ok(())
                };
            }
            self.ready.push_back(c);
        }
    }
}

impl Drop for Nbd {
    fn drop(&mut self) {
        // The reply reader then sees the end of the stream and ends.
        self.stream.disconnect();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}
