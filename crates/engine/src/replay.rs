//! fio's `read_iolog`: a job whose I/Os come from a trace (fio's iolog version 2 or 3, such
//! as a `write_iolog` of fio or sinkrate, or a recorder's converted blktrace) instead of
//! from its options. Version 3 lines carry microseconds since the trace began; the replay
//! waits for each unless `replay_no_stall`. `replay_redirect` sends every I/O to one file or
//! device, whatever the trace names.

use std::path::{Path, PathBuf};

use crate::backend::IoDir;

/// What one trace line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Io(IoDir),
    /// fsync (false) or fdatasync (true) of the file.
    Sync {
        data_only: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Microseconds since the trace began (0 for version 2).
    pub at_us: u64,
    /// Index into `Trace::files`.
    pub file: usize,
    pub action: Action,
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The files the I/O goes to, in the order the trace adds them (or the redirect alone).
    pub files: Vec<PathBuf>,
    pub entries: Vec<Entry>,
}

impl Trace {
    /// Reads and parses `path`; errors name the trace's line.
    pub fn load(path: &Path, redirect: Option<&Path>) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("read_iolog={}: {e}", path.display()))?;
        Trace::parse(&text, redirect).map_err(|e| format!("read_iolog={}: {e}", path.display()))
    }

    pub fn parse(text: &str, redirect: Option<&Path>) -> Result<Trace, String> {
        let mut lines = text.lines().enumerate();
        let timed = match lines.next().map(|(_, l)| l.trim()) {
            Some("fio version 2 iolog") => false,
            Some("fio version 3 iolog") => true,
            other => {
                return Err(format!(
                    "line 1: '{}' is not an iolog header (expected 'fio version 2 iolog' or 'fio version 3 iolog')",
                    other.unwrap_or("")
                ))
            }
        };
        let mut trace = Trace {
            files: redirect.map(|r| vec![r.to_path_buf()]).unwrap_or_default(),
            entries: Vec::new(),
        };
        // The trace's own names, for lines that refer to a file added earlier.
        let mut names: Vec<String> = Vec::new();
        for (i, line) in lines {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let at = |what: String| format!("line {}: {what}", i + 1);
            let mut words = line.split_whitespace();
            let at_us = if timed {
                let t = words.next().unwrap_or("");
                t.parse::<u64>()
                    .map_err(|_| at(format!("'{t}' is not a time in microseconds")))?
            } else {
                0
            };
            let name = words.next().ok_or_else(|| at("no file name".into()))?;
            let action = words.next().ok_or_else(|| at("no action".into()))?;
            let known = names.iter().position(|n| n == name);
            let file = match (action, known) {
                ("add", Some(f)) => f,
                ("add", None) => {
                    names.push(name.to_string());
                    if redirect.is_none() {
                        trace.files.push(PathBuf::from(name));
                    }
                    continue;
                }
                (_, Some(f)) => f,
                (_, None) => return Err(at(format!("'{name}' is used before its 'add' line"))),
            };
            let action = match action {
                "open" | "close" => continue,
                "read" => Action::Io(IoDir::Read),
                "write" => Action::Io(IoDir::Write),
                "trim" => Action::Io(IoDir::Trim),
                "sync" => Action::Sync { data_only: false },
                "datasync" => Action::Sync { data_only: true },
                other => {
                    return Err(at(format!(
                        "'{other}' is not an action sinkrate replays (add, open, close, read, write, trim, sync, datasync)"
                    )))
                }
            };
            let mut number = |what: &str| -> Result<u64, String> {
                let w = words.next().unwrap_or("");
                w.parse::<u64>()
                    .map_err(|_| at(format!("'{w}' is not a{what}")))
            };
            let (offset, len) = match action {
                Action::Io(_) => (number("n offset")?, number(" length")?),
                // A sync's offset and length (fio writes the last write's offset, 0) matter
                // not: the whole file is synced.
                Action::Sync { .. } => (0, 0),
            };
            if matches!(action, Action::Io(_)) && len == 0 {
                return Err(at("an I/O of length 0".into()));
            }
            trace.entries.push(Entry {
                at_us,
                file: if redirect.is_some() { 0 } else { file },
                action,
                offset,
                len,
            });
        }
        if trace.entries.is_empty() {
            return Err("the trace holds no I/O".into());
        }
        Ok(trace)
    }

    /// The bytes each file must hold: the end of the furthest I/O.
    pub fn extent(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.offset + e.len)
            .max()
            .unwrap_or(0)
    }

    pub fn has(&self, dir: IoDir) -> bool {
        self.entries.iter().any(|e| e.action == Action::Io(dir))
    }

    /// The largest I/O, for the job's buffers.
    pub fn largest(&self) -> u64 {
        self.entries.iter().map(|e| e.len).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_two_and_three_and_a_redirect() {
        let v3 = "fio version 3 iolog\n0 a add\n1 b add\n2 a open\n10 a write 0 4096\n20 b read 8192 512\n30 a sync 0 0\n40 a trim 4096 4096\n50 a close\n";
        let t = Trace::parse(v3, None).expect("v3");
        assert_eq!(t.files, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(t.entries.len(), 4);
        assert_eq!(
            t.entries[1],
            Entry {
                at_us: 20,
                file: 1,
                action: Action::Io(IoDir::Read),
                offset: 8192,
                len: 512
            }
        );
        assert_eq!(t.extent(), 8704);
        assert!(t.has(IoDir::Trim) && t.has(IoDir::Write) && t.has(IoDir::Read));
        let v2 = "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 65536\n";
        let t = Trace::parse(v2, Some(Path::new("/dev/card"))).expect("v2");
        assert_eq!(t.files, [PathBuf::from("/dev/card")]);
        assert_eq!((t.entries[0].at_us, t.entries[0].file), (0, 0));
        for (bad, why) in [
            ("fio version 9 iolog\n", "line 1"),
            (
                "fio version 3 iolog\n0 a write 0 4096\n",
                "before its 'add'",
            ),
            ("fio version 3 iolog\n0 a add\nx a write 0 1\n", "line 3"),
            ("fio version 3 iolog\n0 a add\n1 a punch 0 1\n", "'punch'"),
            ("fio version 3 iolog\n0 a add\n1 a read 0 zero\n", "length"),
            ("fio version 3 iolog\n0 a add\n", "no I/O"),
        ] {
            let e = Trace::parse(bad, None).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
