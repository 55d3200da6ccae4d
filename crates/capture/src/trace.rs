//! The trace a capture writes: fio's iolog v3 (what `fio --read_iolog` replays) and, beside
//! it, a sidecar of every call in JSON lines with what iolog cannot say (renames, unlinks,
//! each call's duration, the thread, the open flags, sync_file_range). Each line is written
//! whole as it happens, so a trace cut short (Ctrl-C, the recorder killed) is readable up to
//! its last call.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

/// The first line of fio's iolog version 3.
pub const IOLOG_HEADER: &str = "fio version 3 iolog";
/// The sidecar's format version; a newer one is refused when read. Version 2 added the
/// `unseen` lines, the write and rename `flags` and `set_flags`: a reader of version 1 would
/// take an unseen line for a bad call, so it is told the trace is newer instead.
pub const SIDECAR_VERSION: u32 = 2;

/// The sidecar's name for an iolog: `TRACE.calls.jsonl`.
pub fn sidecar_path(iolog: &std::path::Path) -> std::path::PathBuf {
    let mut name = iolog.as_os_str().to_owned();
    name.push(".calls.jsonl");
    std::path::PathBuf::from(name)
}

/// What a call did to a file. Paths are absolute, as the recorder's process saw them.
///
/// Written by serde, read by [`Op::from_value`]: serde's reader of an internally tagged
/// enum buffers each value into a generic tree and replays it per variant, 28 KB of the
/// board builds' 5 MB budget for thirteen variants of a few fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    Open {
        file: String,
        fd: i32,
        /// O_WRONLY|O_CREAT|..., as given to the call (openat2: as the file was opened).
        flags: String,
    },
    Write {
        file: String,
        fd: i32,
        offset: u64,
        /// Bytes written (the call's result).
        len: u64,
        /// write, pwrite64, writev, pwritev, pwritev2, sendfile, copy_file_range, splice.
        call: String,
        /// pwritev2's RWF_* flags (RWF_DSYNC 2, RWF_SYNC 4): such a write is synced as it
        /// returns.
        #[serde(default, skip_serializing_if = "is_zero")]
        flags: u32,
    },
    Fsync {
        file: String,
        fd: i32,
    },
    Fdatasync {
        file: String,
        fd: i32,
    },
    SyncFileRange {
        file: String,
        fd: i32,
        offset: u64,
        len: u64,
        flags: u32,
    },
    Ftruncate {
        file: String,
        fd: i32,
        len: u64,
    },
    Fallocate {
        file: String,
        fd: i32,
        mode: u32,
        offset: u64,
        len: u64,
    },
    Close {
        file: String,
        fd: i32,
    },
    Rename {
        from: String,
        to: String,
        /// renameat2's flags (RENAME_NOREPLACE 1, RENAME_EXCHANGE 2, RENAME_WHITEOUT 4).
        #[serde(default, skip_serializing_if = "is_zero")]
        flags: u32,
    },
    /// fcntl(F_SETFL) on a file the recorder writes: O_DIRECT, O_APPEND... set after the open.
    SetFlags {
        file: String,
        fd: i32,
        flags: String,
    },
    Unlink {
        file: String,
    },
    /// A file mapped shared and writable: what is written through the mapping is not seen.
    MappedForWrite {
        file: String,
        len: u64,
    },
    /// io_uring set up: what goes through its rings is not seen.
    IoUring,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// renameat2's flag that swaps two names.
pub const RENAME_EXCHANGE: u32 = 2;
/// pwritev2's flags that sync the write as it returns.
pub const RWF_DSYNC: u32 = 2;
pub const RWF_SYNC: u32 = 4;

impl Op {
    /// The op of a call's line (`{"op":"write","file":..,..}`): its kind and that kind's
    /// fields, as serde writes them (`flags` of a write or rename may be left out: 0).
    pub fn from_value(v: &serde_json::Value) -> Result<Op, String> {
        let field = |k: &str| v.get(k).ok_or_else(|| format!("missing field `{k}`"));
        let text = |k: &str| {
            field(k)?
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("field `{k}`: not a string"))
        };
        let unsigned = |k: &str| {
            field(k)?
                .as_u64()
                .ok_or_else(|| format!("field `{k}`: not an unsigned integer"))
        };
        let small =
            |k: &str| u32::try_from(unsigned(k)?).map_err(|_| format!("field `{k}`: out of range"));
        let flags_or_none = |k: &str| match v.get(k) {
            None => Ok(0),
            Some(_) => small(k),
        };
        let fd = || {
            field("fd")?
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| "field `fd`: not a descriptor".to_string())
        };
        let file = || text("file");
        Ok(match text("op")?.as_str() {
            "open" => Op::Open {
                file: file()?,
                fd: fd()?,
                flags: text("flags")?,
            },
            "write" => Op::Write {
                file: file()?,
                fd: fd()?,
                offset: unsigned("offset")?,
                len: unsigned("len")?,
                call: text("call")?,
                flags: flags_or_none("flags")?,
            },
            "fsync" => Op::Fsync {
                file: file()?,
                fd: fd()?,
            },
            "fdatasync" => Op::Fdatasync {
                file: file()?,
                fd: fd()?,
            },
            "sync_file_range" => Op::SyncFileRange {
                file: file()?,
                fd: fd()?,
                offset: unsigned("offset")?,
                len: unsigned("len")?,
                flags: small("flags")?,
            },
            "ftruncate" => Op::Ftruncate {
                file: file()?,
                fd: fd()?,
                len: unsigned("len")?,
            },
            "fallocate" => Op::Fallocate {
                file: file()?,
                fd: fd()?,
                mode: small("mode")?,
                offset: unsigned("offset")?,
                len: unsigned("len")?,
            },
            "close" => Op::Close {
                file: file()?,
                fd: fd()?,
            },
            "rename" => Op::Rename {
                from: text("from")?,
                to: text("to")?,
                flags: flags_or_none("flags")?,
            },
            "set_flags" => Op::SetFlags {
                file: file()?,
                fd: fd()?,
                flags: text("flags")?,
            },
            "unlink" => Op::Unlink { file: file()? },
            "mapped_for_write" => Op::MappedForWrite {
                file: file()?,
                len: unsigned("len")?,
            },
            "io_uring" => Op::IoUring,
            other => return Err(format!("unknown op `{other}`")),
        })
    }

    /// The file the call was on (a rename's new name).
    pub fn file(&self) -> Option<&str> {
        match self {
            Op::Open { file, .. }
            | Op::Write { file, .. }
            | Op::Fsync { file, .. }
            | Op::Fdatasync { file, .. }
            | Op::SyncFileRange { file, .. }
            | Op::Ftruncate { file, .. }
            | Op::Fallocate { file, .. }
            | Op::Close { file, .. }
            | Op::Unlink { file }
            | Op::SetFlags { file, .. }
            | Op::MappedForWrite { file, .. } => Some(file),
            Op::Rename { to, .. } => Some(to),
            Op::IoUring => None,
        }
    }
}

/// What the tracer hands on as it happens: a call, or something it found it cannot see.
pub enum Seen<'a> {
    Call(&'a Call),
    Unseen(&'a str),
}

/// One call: when it started (ns since the capture started), how long it took, which
/// thread made it, what it did; `errno` when it failed. One JSON object a line, the call's
/// keys then the op's (`{"t_ns":..,"dur_ns":..,"tid":..,"op":"write","file":..}`), put
/// together and taken apart by hand ([`Call::to_line`], [`Call::from_value`]): serde's
/// `flatten` would do it with a buffering deserializer the 5 MB board build has no room for.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub t_ns: u64,
    pub dur_ns: u64,
    pub tid: i32,
    pub op: Op,
    pub errno: Option<i32>,
}

impl Call {
    /// The call as one JSON line (without its newline).
    pub fn to_line(&self) -> io::Result<String> {
        let mut map = serde_json::Map::new();
        map.insert("t_ns".into(), self.t_ns.into());
        map.insert("dur_ns".into(), self.dur_ns.into());
        map.insert("tid".into(), self.tid.into());
        match serde_json::to_value(&self.op).map_err(io::Error::other)? {
            serde_json::Value::Object(op) => map.extend(op),
            other => {
                return Err(io::Error::other(format!(
                    "an op that is not an object: {other}"
                )))
            }
        }
        if let Some(e) = self.errno {
            map.insert("errno".into(), e.into());
        }
        serde_json::to_string(&map).map_err(io::Error::other)
    }

    /// A call from its line's JSON.
    pub fn from_value(v: &serde_json::Value) -> Result<Call, String> {
        let int = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| format!("missing field `{k}`"))
        };
        Ok(Call {
            t_ns: int("t_ns")? as u64,
            dur_ns: int("dur_ns")? as u64,
            tid: int("tid")? as i32,
            op: Op::from_value(v)?,
            errno: v
                .get("errno")
                .and_then(serde_json::Value::as_i64)
                .map(|e| e as i32),
        })
    }
}

/// The sidecar's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The sidecar's format version ([`SIDECAR_VERSION`]).
    pub sinkrate_trace: u32,
    pub command: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub arch: String,
    pub kernel: Option<String>,
    pub tool_version: String,
}

/// The sidecar's last line, when the capture ended in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    pub end_ns: u64,
    /// The recorder's exit code, or the signal that ended it (as 128 + signal).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub interrupted: bool,
}

/// The sidecar's last line: `{"end": {...}}`.
#[derive(Serialize)]
struct EndLine<'a> {
    end: &'a End,
}

/// An iolog file name: fio reads names with `%256s` (no white space, at most 256 bytes).
/// Others are written with their white space and '%' as %XX (the sidecar keeps the name).
pub fn iolog_name(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_whitespace() || c == '%' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes the two files as calls come: the iolog's lines (add, open, write, sync, datasync,
/// close) and the sidecar's (every call). Each line goes out whole in one write.
pub struct TraceWriter<W: Write> {
    iolog: W,
    sidecar: W,
    /// Files the iolog has `add`ed, and whether each is open in it.
    added: std::collections::HashMap<String, bool>,
    pub calls: u64,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut iolog: W, mut sidecar: W, header: &Header) -> io::Result<TraceWriter<W>> {
        iolog.write_all(format!("{IOLOG_HEADER}\n").as_bytes())?;
        let mut line = serde_json::to_string(header).map_err(io::Error::other)?;
        line.push('\n');
        sidecar.write_all(line.as_bytes())?;
        Ok(TraceWriter {
            iolog,
            sidecar,
            added: Default::default(),
            calls: 0,
        })
    }

    /// Something the capture could not see, said in the sidecar as it is found, so that
    /// every replay of the trace says it too (even of a trace cut short).
    pub fn unseen(&mut self, what: &str) -> io::Result<()> {
        let mut line = serde_json::to_string(&serde_json::json!({ "unseen": what }))
            .map_err(io::Error::other)?;
        line.push('\n');
        self.sidecar.write_all(line.as_bytes())
    }

    pub fn call(&mut self, c: &Call) -> io::Result<()> {
        let mut line = c.to_line()?;
        line.push('\n');
        self.sidecar.write_all(line.as_bytes())?;
        self.calls += 1;
        if c.errno.is_none() {
            self.iolog_lines(c)?;
        }
        Ok(())
    }

    /// The iolog's name for `file`, with an `add` (first sight) and an `open` (when it is not
    /// open in the iolog) put in `out` first.
    fn opened(&mut self, out: &mut String, us: u64, file: &str) -> String {
        let name = iolog_name(file);
        match self.added.get(file) {
            None => out.push_str(&format!("{us} {name} add\n{us} {name} open\n")),
            Some(false) => out.push_str(&format!("{us} {name} open\n")),
            Some(true) => return name,
        }
        self.added.insert(file.to_string(), true);
        name
    }

    fn iolog_lines(&mut self, c: &Call) -> io::Result<()> {
        let us = c.t_ns / 1000;
        let mut out = String::new();
        match &c.op {
            // A second open of a file open in the iolog is the same file to fio.
            Op::Open { file, .. } => {
                self.opened(&mut out, us, file);
            }
            Op::Write {
                file,
                offset,
                len,
                flags,
                ..
            } if *len > 0 => {
                let name = self.opened(&mut out, us, file);
                out.push_str(&format!("{us} {name} write {offset} {len}\n"));
                // A write synced as it returned: the iolog's nearest is a sync after it.
                if flags & RWF_SYNC != 0 {
                    out.push_str(&format!("{us} {name} sync 0 0\n"));
                } else if flags & RWF_DSYNC != 0 {
                    out.push_str(&format!("{us} {name} datasync 0 0\n"));
                }
            }
            Op::Fsync { file, .. } => {
                let name = self.opened(&mut out, us, file);
                out.push_str(&format!("{us} {name} sync 0 0\n"));
            }
            Op::Fdatasync { file, .. } => {
                let name = self.opened(&mut out, us, file);
                out.push_str(&format!("{us} {name} datasync 0 0\n"));
            }
            Op::Close { file, .. } if self.added.get(file.as_str()) == Some(&true) => {
                out.push_str(&format!("{us} {} close\n", iolog_name(file)));
                self.added.insert(file.clone(), false);
            }
            _ => {}
        }
        if !out.is_empty() {
            self.iolog.write_all(out.as_bytes())?;
        }
        Ok(())
    }

    /// The last line; the files open in the iolog are closed there (fio closes them anyway).
    pub fn end(mut self, end: End) -> io::Result<()> {
        let us = end.end_ns / 1000;
        let mut out = String::new();
        let mut open: Vec<&String> = self
            .added
            .iter()
            .filter(|(_, o)| **o)
            .map(|(f, _)| f)
            .collect();
        open.sort();
        for f in open {
            out.push_str(&format!("{us} {} close\n", iolog_name(f)));
        }
        self.iolog.write_all(out.as_bytes())?;
        let mut line = serde_json::to_string(&EndLine { end: &end }).map_err(io::Error::other)?;
        line.push('\n');
        self.sidecar.write_all(line.as_bytes())?;
        self.iolog.flush()?;
        self.sidecar.flush()
    }
}

/// A sidecar read back: its header, calls, and end (None when the capture was cut short).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub header: Header,
    pub calls: Vec<Call>,
    /// What the capture said it could not see.
    pub unseen: Vec<String>,
    pub end: Option<End>,
}

/// Why a trace cannot be read: one line, with the line number where it applies.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReadError {
    #[error("empty trace: no header line")]
    Empty,
    #[error("line 1: not a sinkrate trace header ({0})")]
    NoHeader(String),
    #[error("line 1: trace format {found}, newer than this sinkrate reads ({SIDECAR_VERSION}): use a newer sinkrate")]
    Newer { found: u32 },
    #[error("line {line}: {what}")]
    Bad { line: usize, what: String },
    #[error("line {line}: longer than {} KiB: not a line of a sinkrate trace", MAX_LINE_BYTES >> 10)]
    LineTooLong { line: usize },
    #[error("more than {} calls (or {} GiB): a replay holds about 65 bytes of memory a call; cut the trace (a day of a two-stream 30 fps recorder is about 16 million calls)", MAX_CALLS, MAX_SIDECAR_BYTES >> 30)]
    TooLarge,
    #[error("cannot read it: {0}")]
    Io(String),
}

/// The longest line a sidecar holds: a call names at most two paths of PATH_MAX (4 KiB).
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// The most calls a sidecar is read for: memory stays bounded whatever the file holds.
pub const MAX_CALLS: u64 = 20_000_000;
/// The most bytes of a sidecar read.
pub const MAX_SIDECAR_BYTES: u64 = 4 << 30;

/// What a sidecar holds besides its calls: the header, what the capture could not see, and
/// the end line (None when the capture was cut short).
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarFacts {
    pub header: Header,
    pub unseen: Vec<String>,
    pub end: Option<End>,
}

/// Reads a sidecar line by line, handing each call to `each` as it is read: nothing but
/// the line at hand is held, each line is read with a bound ([`MAX_LINE_BYTES`]) and the
/// whole with another ([`MAX_SIDECAR_BYTES`], [`MAX_CALLS`]), so a file that is not a
/// sidecar (a device, an endless stream) ends in an error, not in memory exhausted. A last
/// line cut short (a capture killed mid-write) is dropped; any other malformed line is an
/// error naming it. Returns the header and the end line (None when the capture was cut
/// short).
pub fn read_sidecar_stream<R: io::BufRead>(
    mut r: R,
    each: &mut dyn FnMut(Call) -> Result<(), String>,
) -> Result<SidecarFacts, ReadError> {
    use io::BufRead as _;
    let mut unseen: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let mut bytes = 0u64;
    let mut calls = 0u64;
    let mut header: Option<Header> = None;
    let mut end = None;
    loop {
        buf.clear();
        let n = io::Read::take(&mut r, MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ReadError::Io(e.to_string()))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        bytes += n as u64;
        let whole = buf.last() == Some(&b'\n');
        if !whole && buf.len() > MAX_LINE_BYTES {
            return Err(ReadError::LineTooLong { line: line_no });
        }
        if bytes > MAX_SIDECAR_BYTES {
            return Err(ReadError::TooLarge);
        }
        let text = String::from_utf8_lossy(&buf);
        let l = text.trim();
        if l.is_empty() {
            continue;
        }
        let Some(_) = header.as_ref() else {
            let value: serde_json::Value =
                serde_json::from_str(l).map_err(|e| ReadError::NoHeader(e.to_string()))?;
            if let Some(v) = value.get("sinkrate_trace").and_then(|v| v.as_u64()) {
                if v > SIDECAR_VERSION as u64 {
                    return Err(ReadError::Newer { found: v as u32 });
                }
            }
            header = Some(
                serde_json::from_value(value).map_err(|e| ReadError::NoHeader(e.to_string()))?,
            );
            continue;
        };
        let bad = |what: String| ReadError::Bad {
            line: line_no,
            what,
        };
        let value: serde_json::Value = match serde_json::from_str(l) {
            Ok(v) => v,
            // A line cut short at the end (no newline: nothing follows it) is a capture
            // killed while writing it.
            Err(_) if !whole => break,
            Err(e) => return Err(bad(format!("not JSON: {e}"))),
        };
        if value.get("sinkrate_trace").is_some() {
            return Err(bad("a second header".into()));
        }
        if let Some(e) = value.get("end") {
            end = Some(End::deserialize(e).map_err(|e| bad(e.to_string()))?);
            continue;
        }
        if let Some(u) = value.get("unseen") {
            let what = u
                .as_str()
                .ok_or_else(|| bad("an unseen line that is not text".into()))?;
            // Bounded as the calls are: each said once.
            if !unseen.iter().any(|x| x == what) && unseen.len() < 64 {
                unseen.push(what.to_string());
            }
            continue;
        }
        calls += 1;
        if calls > MAX_CALLS {
            return Err(ReadError::TooLarge);
        }
        each(Call::from_value(&value).map_err(bad)?).map_err(bad)?;
    }
    let header = header.ok_or(ReadError::Empty)?;
    Ok(SidecarFacts {
        header,
        unseen,
        end,
    })
}

/// Reads a sidecar held in memory ([`read_sidecar_stream`]'s rules).
pub fn read_sidecar(text: &str) -> Result<Trace, ReadError> {
    let mut calls = Vec::new();
    let facts = read_sidecar_stream(text.as_bytes(), &mut |c| {
        calls.push(c);
        Ok(())
    })?;
    Ok(Trace {
        header: facts.header,
        calls,
        unseen: facts.unseen,
        end: facts.end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"{"sinkrate_trace":1,"command":["rec"],"started_at":"2026-01-01T00:00:00Z","arch":"x86_64","kernel":null,"tool_version":"0.2.0"}"#;

    #[test]
    fn a_sidecar_reads_back_and_a_bad_one_is_named_by_its_line() {
        let call = r#"{"t_ns":5,"dur_ns":7,"tid":9,"op":"fsync","file":"/r/a","fd":3}"#;
        let end = r#"{"end":{"end_ns":10,"exit_code":0,"signal":null,"interrupted":false}}"#;
        let t = read_sidecar(&format!("{HEAD}\n{call}\n{end}\n")).expect("reads");
        assert_eq!(t.calls.len(), 1);
        assert_eq!(t.end.map(|e| e.exit_code), Some(Some(0)));
        // Cut short by a kill in the middle of its last line: read up to the line before.
        let t = read_sidecar(&format!("{HEAD}\n{call}\n{{\"t_ns\":6,\"du")).expect("cut short");
        assert_eq!((t.calls.len(), t.end), (1, None));
        assert_eq!(read_sidecar(""), Err(ReadError::Empty));
        let e = read_sidecar(&format!("{HEAD}\n{call}\nnot json\n{end}\n")).expect_err("bad");
        assert!(e.to_string().starts_with("line 3: not JSON"), "{e}");
        let e = read_sidecar(&format!(
            "{HEAD}\n{{\"t_ns\":1,\"dur_ns\":1,\"tid\":1,\"op\":\"teleport\"}}\n"
        ))
        .expect_err("unknown op");
        assert!(
            e.to_string().starts_with("line 2: unknown op `teleport`"),
            "{e}"
        );
        let newer = HEAD.replace("\"sinkrate_trace\":1", "\"sinkrate_trace\":7");
        let e = read_sidecar(&newer).expect_err("newer");
        assert!(e.to_string().contains("trace format 7, newer"), "{e}");
    }

    #[test]
    fn every_op_reads_back_as_written_and_a_missing_field_is_named() {
        let file = || "/r/seg 1.mp4".to_string();
        let ops = [
            Op::Open {
                file: file(),
                fd: 3,
                flags: "O_WRONLY|O_CREAT".into(),
            },
            Op::Write {
                file: file(),
                fd: 3,
                offset: 1 << 40,
                len: 4096,
                call: "pwritev2".into(),
                flags: RWF_DSYNC,
            },
            Op::Write {
                file: file(),
                fd: 3,
                offset: 0,
                len: 1,
                call: "write".into(),
                flags: 0,
            },
            Op::Fsync {
                file: file(),
                fd: 3,
            },
            Op::Fdatasync {
                file: file(),
                fd: 3,
            },
            Op::SyncFileRange {
                file: file(),
                fd: 3,
                offset: 8,
                len: 9,
                flags: 7,
            },
            Op::Ftruncate {
                file: file(),
                fd: 3,
                len: 10,
            },
            Op::Fallocate {
                file: file(),
                fd: 3,
                mode: 1,
                offset: 2,
                len: 3,
            },
            Op::Close {
                file: file(),
                fd: -1,
            },
            Op::Rename {
                from: file(),
                to: "/r/b".into(),
                flags: RENAME_EXCHANGE,
            },
            Op::Rename {
                from: file(),
                to: "/r/b".into(),
                flags: 0,
            },
            Op::SetFlags {
                file: file(),
                fd: 3,
                flags: "O_DIRECT".into(),
            },
            Op::Unlink { file: file() },
            Op::MappedForWrite {
                file: file(),
                len: 4096,
            },
            Op::IoUring,
        ];
        for op in ops {
            let call = Call {
                t_ns: 1,
                dur_ns: 2,
                tid: 3,
                op,
                errno: Some(5),
            };
            let line = call.to_line().expect("line");
            let v: serde_json::Value = serde_json::from_str(&line).expect("json");
            assert_eq!(Call::from_value(&v).as_ref(), Ok(&call), "{line}");
        }
        let v = serde_json::json!({"t_ns": 1, "dur_ns": 1, "tid": 1, "op": "write", "file": "/a", "fd": 3, "offset": 0, "call": "write"});
        assert_eq!(Call::from_value(&v), Err("missing field `len`".to_string()));
        let v = serde_json::json!({"t_ns": 1, "dur_ns": 1, "tid": 1, "op": "close", "file": "/a", "fd": "3"});
        assert_eq!(
            Call::from_value(&v),
            Err("field `fd`: not a descriptor".to_string())
        );
    }

    #[test]
    fn an_endless_line_is_refused_at_its_bound() {
        // /dev/zero as a sidecar: a line that never ends.
        let zeros = std::io::BufReader::new(std::io::Read::take(std::io::repeat(0), 1 << 30));
        let e = read_sidecar_stream(zeros, &mut |_| Ok(())).expect_err("refused");
        assert_eq!(e, ReadError::LineTooLong { line: 1 });
        let long = format!("{HEAD}\n{}\n", "x".repeat(MAX_LINE_BYTES + 10));
        let e = read_sidecar(&long).expect_err("refused");
        assert_eq!(e, ReadError::LineTooLong { line: 2 });
    }

    #[test]
    fn iolog_names_keep_fio_s_one_word() {
        assert_eq!(
            iolog_name("/media/sd/seg 1%.mp4"),
            "/media/sd/seg%201%25.mp4"
        );
        assert_eq!(iolog_name("/a/b"), "/a/b");
    }
}
