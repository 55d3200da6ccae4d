//! A trace made into what `record --replay` runs ([`ReplayPlan`]): each recorder thread's
//! calls in bursts at their original times, the files mapped under the replay's directory,
//! and the most the files held at once.

use std::collections::BTreeMap;

use sinkrate_model::replay::{Burst, ReplayOp, ReplayPlan, ReplayStream, FRAMES_TO_JUDGE};

use std::collections::HashMap;

use crate::trace::{Call, End, Op, Trace};

/// Two calls of a thread this far apart or more are two bursts (frames), when no frame rate
/// is given: a frame's writes follow each other within microseconds, a 30 fps recorder's
/// frames are 33 ms apart.
pub const GAP_NS: u64 = 1_000_000;

/// Open flags kept from the trace's words: those that change how data reaches the disk.
fn open_flags(words: &str) -> i32 {
    words
        .split('|')
        .map(|w| match w {
            "O_TRUNC" => libc::O_TRUNC,
            "O_APPEND" => libc::O_APPEND,
            "O_DIRECT" => libc::O_DIRECT,
            "O_DSYNC" => libc::O_DSYNC,
            "O_SYNC" => libc::O_SYNC,
            _ => 0,
        })
        .fold(0, |a, f| a | f)
}

/// The trace's files under one root: the deepest directory holding them all. A name with
/// `.` or `..` in it (a trace edited by hand) would land outside the replay's directory.
fn map_files(files: &[String]) -> Result<Vec<String>, String> {
    for f in files {
        let ok = f.starts_with('/')
            && f.split('/')
                .skip(1)
                .all(|c| !c.is_empty() && c != "." && c != "..");
        if !ok {
            return Err(format!(
                "{f}: not an absolute path without '.' and '..' (a trace whose files would land outside the replay's directory is refused)"
            ));
        }
    }
    let dirs: Vec<Vec<&str>> = files
        .iter()
        .map(|f| {
            let mut parts: Vec<&str> = f.split('/').skip(1).collect();
            parts.pop();
            parts
        })
        .collect();
    let mut root = dirs.first().cloned().unwrap_or_default();
    for d in &dirs {
        let common = root.iter().zip(d).take_while(|(a, b)| a == b).count();
        root.truncate(common);
    }
    Ok(files
        .iter()
        .map(|f| {
            f.split('/')
                .skip(1 + root.len())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect())
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

/// The plan of `trace` (read from `name`); `fps` groups each thread's calls by that frame
/// rate's intervals instead of by idle gaps.
pub fn build(trace: &Trace, name: &str, fps: Option<f64>) -> Result<ReplayPlan, String> {
    let mut builder = Builder::new(name);
    for c in &trace.calls {
        builder.add(c)?;
    }
    builder.finish(trace.end.as_ref(), &trace.unseen, fps)
}

/// A plan made as a trace is read, one call at a time: a long trace is never held whole,
/// only what the replay runs (about 65 bytes a call, measured in bench/README.md).
pub struct Builder {
    name: String,
    files: Vec<String>,
    file_index: HashMap<String, usize>,
    /// Each thread's calls, with their files as indexes; a failed call is not replayed.
    threads: BTreeMap<i32, Vec<(u64, u64, ReplayOp)>>,
    direct: BTreeMap<i32, bool>,
    /// When the last call ended: the trace's length when it has no end line.
    last_end_ns: u64,
}

impl Builder {
    /// A plan for the trace read from `name`.
    pub fn new(name: &str) -> Builder {
        Builder {
            name: name.to_string(),
            files: Vec::new(),
            file_index: HashMap::new(),
            threads: BTreeMap::new(),
            direct: BTreeMap::new(),
            last_end_ns: 0,
        }
    }

    fn index(&mut self, f: &str) -> usize {
        if let Some(i) = self.file_index.get(f) {
            return *i;
        }
        self.files.push(f.to_string());
        self.file_index.insert(f.to_string(), self.files.len() - 1);
        self.files.len() - 1
    }

    /// One call of the trace, in the trace's order.
    pub fn add(&mut self, c: &Call) -> Result<(), String> {
        self.last_end_ns = self.last_end_ns.max(c.t_ns.saturating_add(c.dur_ns));
        if c.errno.is_some() {
            return Ok(());
        }
        // A range that ends past the largest file offset (offset + length wrapping, or over
        // 2^63 - 1) is no call a kernel took: refused before anything is written.
        let range = |file: &str, what: &str, offset: u64, len: u64| {
            match offset.checked_add(len) {
                Some(end) if end <= i64::MAX as u64 => Ok(()),
                _ => Err(format!(
                    "{}: a {what} at offset {offset} of {len} bytes to {file} ends past the largest file offset (2^63 - 1): not a call the recorder could have made", self.name
                )),
            }
        };
        match &c.op {
            Op::Write {
                file, offset, len, ..
            } => range(file, "write", *offset, *len)?,
            Op::Fallocate {
                file, offset, len, ..
            } => range(file, "fallocate", *offset, *len)?,
            Op::Ftruncate { file, len, .. } => range(file, "truncate", 0, *len)?,
            _ => {}
        }
        let op = match &c.op {
            Op::Open { file, flags, .. } => {
                if flags.split('|').any(|w| w == "O_DIRECT") {
                    self.direct.insert(c.tid, true);
                }
                ReplayOp::Open {
                    file: self.index(file),
                    flags: open_flags(flags),
                }
            }
            Op::Write {
                file,
                offset,
                len,
                flags,
                ..
            } => {
                if *len == 0 {
                    return Ok(());
                }
                let file = self.index(file);
                // pwritev2 with RWF_SYNC or RWF_DSYNC: the write is synced as it returns,
                // replayed as the write and its sync.
                let synced = if flags & crate::trace::RWF_SYNC != 0 {
                    Some(ReplayOp::Fsync { file })
                } else if flags & crate::trace::RWF_DSYNC != 0 {
                    Some(ReplayOp::Fdatasync { file })
                } else {
                    None
                };
                if let Some(sync) = synced {
                    let write = ReplayOp::Write {
                        file,
                        offset: *offset,
                        len: *len,
                    };
                    let end = c.t_ns.saturating_add(c.dur_ns);
                    let calls = self.threads.entry(c.tid).or_default();
                    calls.push((c.t_ns, end, write));
                    calls.push((c.t_ns, end, sync));
                    return Ok(());
                }
                ReplayOp::Write {
                    file,
                    offset: *offset,
                    len: *len,
                }
            }
            Op::SetFlags { file, flags, .. } => {
                if flags.split('|').any(|w| w == "O_DIRECT") {
                    self.direct.insert(c.tid, true);
                }
                ReplayOp::SetFlags {
                    file: self.index(file),
                    flags: open_flags(flags),
                }
            }
            Op::Fsync { file, .. } => ReplayOp::Fsync {
                file: self.index(file),
            },
            Op::Fdatasync { file, .. } => ReplayOp::Fdatasync {
                file: self.index(file),
            },
            Op::SyncFileRange {
                file,
                offset,
                len,
                flags,
                ..
            } => ReplayOp::SyncFileRange {
                file: self.index(file),
                offset: *offset,
                len: *len,
                flags: *flags,
            },
            Op::Ftruncate { file, len, .. } => ReplayOp::Truncate {
                file: self.index(file),
                len: *len,
            },
            Op::Fallocate {
                file,
                mode,
                offset,
                len,
                ..
            } => ReplayOp::Fallocate {
                file: self.index(file),
                mode: *mode,
                offset: *offset,
                len: *len,
            },
            Op::Close { file, .. } => ReplayOp::Close {
                file: self.index(file),
            },
            Op::Rename { from, to, flags } if flags & crate::trace::RENAME_EXCHANGE != 0 => {
                ReplayOp::Exchange {
                    a: self.index(from),
                    b: self.index(to),
                }
            }
            Op::Rename { from, to, .. } => ReplayOp::Rename {
                from: self.index(from),
                to: self.index(to),
            },
            Op::Unlink { file } => ReplayOp::Unlink {
                file: self.index(file),
            },
            Op::MappedForWrite { .. } | Op::IoUring => return Ok(()),
        };
        self.threads
            .entry(c.tid)
            .or_default()
            .push((c.t_ns, c.t_ns.saturating_add(c.dur_ns), op));

        Ok(())
    }

    /// The plan, once every call is in; `end` is the trace's end line, `fps` groups each
    /// thread's calls by that frame rate's intervals instead of by idle gaps.
    /// `unseen` is what the capture said it could not see.
    pub fn finish(
        self,
        end: Option<&End>,
        unseen: &[String],
        fps: Option<f64>,
    ) -> Result<ReplayPlan, String> {
        let Builder {
            name,
            files,
            threads,
            direct,
            last_end_ns,
            ..
        } = self;
        let name = name.as_str();
        if files.is_empty() {
            return Err(format!(
                "{name}: the trace holds no file written (the recorder wrote nothing the capture saw{})",
                if unseen.is_empty() {
                    String::new()
                } else {
                    format!("; the capture said: {}", unseen.join("; "))
                }
            ));
        }
        let mapped = map_files(&files)?;
        if let Some(f) = fps.filter(|f| !(f.is_finite() && *f > 0.0)) {
            return Err(format!("--fps {f}: must be above 0"));
        }
        let mut streams = Vec::new();
        for (tid, mut calls) in threads {
            calls.sort_by_key(|c| c.0);
            let mut bursts: Vec<Burst> = Vec::new();
            let mut last_end = 0u64;
            let mut last_slot = u64::MAX;
            for (start, end, op) in calls {
                let new = match fps {
                    Some(f) => {
                        let slot = (start as f64 * f / 1e9) as u64;
                        let new = slot != last_slot;
                        last_slot = slot;
                        new
                    }
                    None => bursts.is_empty() || start.saturating_sub(last_end) >= GAP_NS,
                };
                if new || bursts.is_empty() {
                    bursts.push(Burst {
                        at_ns: start,
                        bytes: 0,
                        ops: Vec::new(),
                        original_ns: 0,
                    });
                }
                let b = bursts.last_mut().expect("a burst was just pushed");
                if let ReplayOp::Write { len, .. } = op {
                    b.bytes = b.bytes.saturating_add(len);
                }
                b.original_ns = end.saturating_sub(b.at_ns).max(b.original_ns);
                b.ops.push(op);
                last_end = last_end.max(end);
            }
            let frames: Vec<u64> = bursts
                .iter()
                .filter(|b| b.bytes > 0)
                .map(|b| b.at_ns)
                .collect();
            let fps = fps.unwrap_or_else(|| {
                median(frames.windows(2).map(|w| w[1] - w[0]).collect())
                    .filter(|m| *m > 0)
                    .map_or(0.0, |m| 1e9 / m as f64)
            });
            // Named by the file it wrote most.
            let mut written: BTreeMap<usize, u64> = BTreeMap::new();
            for b in &bursts {
                for op in &b.ops {
                    if let ReplayOp::Write { file, len, .. } = op {
                        let w = written.entry(*file).or_default();
                        *w = w.saturating_add(*len);
                    }
                }
            }
            let main = written
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(f, _)| files[*f].rsplit('/').next().unwrap_or("").to_string());
            streams.push(ReplayStream {
                name: match main {
                    Some(f) => format!("thread {tid} ({})", sinkrate_units::escaped(&f)),
                    None => format!("thread {tid}"),
                },
                tid,
                bursts,
                fps,
                direct: direct.get(&tid).copied().unwrap_or(false),
                judged: false,
            });
        }
        let frames_of = |s: &ReplayStream| s.bursts.iter().filter(|b| b.bytes > 0).count();
        let most = streams.iter().map(frames_of).max().unwrap_or(0);
        for s in streams.iter_mut() {
            let n = frames_of(s);
            s.judged = n >= FRAMES_TO_JUDGE || (n > 0 && n == most && most < FRAMES_TO_JUDGE);
        }
        let duration_ns = end.map_or(last_end_ns, |e| e.end_ns);
        Ok(ReplayPlan {
            trace: name.to_string(),
            peak_bytes: peak_bytes(&streams, files.len()),
            files,
            mapped,
            streams,
            duration_ns,
            grouping: match fps {
                Some(f) => format!("--fps {f}"),
                None => format!("idle gaps of {} ms or more", GAP_NS / 1_000_000),
            },
            unseen: unseen.to_vec(),
        })
    }
}

/// The most the files hold at once, the calls taken in their original order.
fn peak_bytes(streams: &[ReplayStream], n: usize) -> u64 {
    let mut ops: Vec<(u64, &ReplayOp)> = streams
        .iter()
        .flat_map(|s| {
            s.bursts
                .iter()
                .flat_map(|b| b.ops.iter().map(move |o| (b.at_ns, o)))
        })
        .collect();
    ops.sort_by_key(|o| o.0);
    let mut size = vec![0u64; n];
    let (mut total, mut peak) = (0u64, 0u64);
    fn set(size: &mut [u64], total: &mut u64, f: usize, v: u64) {
        *total = total.saturating_sub(size[f]).saturating_add(v);
        size[f] = v;
    }
    for (_, op) in ops {
        match *op {
            ReplayOp::Write { file, offset, len }
            | ReplayOp::Fallocate {
                file, offset, len, ..
            } => {
                let v = size[file].max(offset.saturating_add(len));
                set(&mut size, &mut total, file, v);
            }
            ReplayOp::Truncate { file, len } => set(&mut size, &mut total, file, len),
            ReplayOp::Open { file, flags } if flags & libc::O_TRUNC != 0 => {
                set(&mut size, &mut total, file, 0)
            }
            ReplayOp::Unlink { file } => set(&mut size, &mut total, file, 0),
            ReplayOp::Rename { from, to } if from != to => {
                let moved = size[from];
                set(&mut size, &mut total, from, 0);
                set(&mut size, &mut total, to, moved);
            }
            ReplayOp::Exchange { a, b } => size.swap(a, b),
            _ => {}
        }
        peak = peak.max(total);
    }
    peak
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Call, Header};

    fn call(t_ms: u64, tid: i32, op: Op) -> Call {
        Call {
            t_ns: t_ms * 1_000_000,
            dur_ns: 100_000,
            tid,
            op,
            errno: None,
        }
    }

    fn write(file: &str, offset: u64, len: u64) -> Op {
        Op::Write {
            file: file.into(),
            fd: 3,
            offset,
            len,
            call: "write".into(),
            flags: 0,
        }
    }

    fn trace(calls: Vec<Call>) -> Trace {
        Trace {
            header: Header {
                sinkrate_trace: 1,
                command: vec![],
                started_at: String::new(),
                arch: String::new(),
                kernel: None,
                tool_version: String::new(),
            },
            calls,
            unseen: Vec::new(),
            end: None,
        }
    }

    #[test]
    fn bursts_are_frames_files_land_under_one_root_and_the_peak_counts_renames() {
        let t = trace(vec![
            call(
                0,
                7,
                Op::Open {
                    file: "/media/sd/rec/a.tmp".into(),
                    fd: 3,
                    flags: "O_WRONLY|O_CREAT|O_TRUNC".into(),
                },
            ),
            // Two writes of one frame, then the next frame 33 ms later.
            call(1, 7, write("/media/sd/rec/a.tmp", 0, 100)),
            call(1, 7, write("/media/sd/rec/a.tmp", 100, 50)),
            call(34, 7, write("/media/sd/rec/a.tmp", 150, 150)),
            call(67, 7, write("/media/sd/rec/a.tmp", 300, 150)),
            call(
                68,
                9,
                Op::Rename {
                    from: "/media/sd/rec/a.tmp".into(),
                    to: "/media/sd/rec/old/a.mp4".into(),
                    flags: 0,
                },
            ),
            call(69, 9, write("/media/sd/rec/idx", 0, 10)),
        ]);
        let p = build(&t, "t.iolog", None).expect("plan");
        assert_eq!(p.mapped, ["a.tmp", "old/a.mp4", "idx"]);
        let s = &p.streams[0];
        assert_eq!(s.bursts.len(), 3, "{:?}", s.bursts);
        assert_eq!(s.bursts[0].bytes, 150);
        assert!((29.0..31.0).contains(&s.fps), "{}", s.fps);
        assert_eq!(p.peak_bytes, 460);
        // By a declared rate instead: the same frames.
        let p = build(&t, "t.iolog", Some(30.0)).expect("plan");
        assert_eq!(p.streams[0].bursts.len(), 3);
        // A name that would land outside the directory.
        let bad = trace(vec![call(0, 1, write("/a/../../etc/passwd", 0, 1))]);
        assert!(build(&bad, "t", None)
            .expect_err("refused")
            .contains("'..'"));
        assert!(build(&trace(vec![]), "t", None)
            .expect_err("empty")
            .contains("no file written"));
    }

    #[test]
    fn a_name_with_control_characters_is_shown_escaped() {
        let t = trace(vec![call(0, 1, write("/r/a\nb\u{0}c", 0, 10))]);
        let p = build(&t, "t", None).expect("plan");
        assert_eq!(p.streams[0].name, "thread 1 (a\\x0ab\\x00c)");
    }

    #[test]
    fn a_range_past_the_largest_offset_is_refused_not_wrapped() {
        for (offset, len) in [
            (u64::MAX, 1),
            (u64::MAX - 10, 100),
            (1 << 63, 0),
            (0, 1 << 63),
        ] {
            let t = trace(vec![call(0, 1, write("/r/a", offset, len.max(1)))]);
            let e = build(&t, "t", None).expect_err("refused");
            assert!(e.contains("largest file offset"), "{e}");
        }
        let edge = trace(vec![call(0, 1, write("/r/a", (1 << 63) - 2, 1))]);
        assert!(build(&edge, "t", None).is_ok());
    }
}
