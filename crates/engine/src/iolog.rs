//! fio's `write_iolog`, version 3: the I/O a job issued, one line each, in the format fio's
//! `read_iolog` replays (`fio version 3 iolog`, then `USEC FILE add|open|close` and
//! `USEC FILE read|write|trim|sync|datasync|sync_file_range OFFSET LENGTH`, microseconds since
//! the log was opened). The file is appended to, as fio's is.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::EngineError;

pub struct IoTrace {
    path: PathBuf,
    out: BufWriter<File>,
    /// Run-clock ns of the trace's first event, from which its times count.
    start_ns: Option<u64>,
    /// A failed write, reported at the end rather than stopping the measurement.
    failed: Option<std::io::Error>,
}

/// A file's name as a job names it: the path without a leading `./`.
fn shown(file: &Path) -> String {
    let text = file.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

impl IoTrace {
    pub fn open(path: &Path) -> Result<IoTrace, EngineError> {
        let f = sinkrate_sys::output::append(path).map_err(|e| EngineError::io(path, e))?;
        let mut trace = IoTrace {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(256 * 1024, f),
            start_ns: None,
            failed: None,
        };
        trace.line(format_args!("fio version 3 iolog"));
        Ok(trace)
    }

    fn line(&mut self, args: std::fmt::Arguments) {
        if self.failed.is_none() {
            if let Err(e) = writeln!(self.out, "{args}") {
                self.failed = Some(e);
            }
        }
    }

    fn usec(&mut self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(*self.start_ns.get_or_insert(now_ns)) / 1000
    }

    /// `add`, `open` or `close` of a file.
    pub fn file_event(&mut self, now_ns: u64, file: &Path, what: &str) {
        let t = self.usec(now_ns);
        self.line(format_args!("{t} {} {what}", shown(file)));
    }

    /// One I/O as issued: `what` is fio's name for its direction (read, write, trim, sync,
    /// datasync, sync_file_range).
    pub fn io(&mut self, now_ns: u64, file: &Path, what: &str, offset: u64, len: u64) {
        let t = self.usec(now_ns);
        self.line(format_args!("{t} {} {what} {offset} {len}", shown(file)));
    }

    pub fn finish(mut self) -> Result<PathBuf, EngineError> {
        if let Some(e) = self.failed.take() {
            return Err(EngineError::io(&self.path, e));
        }
        self.out
            .flush()
            .map_err(|e| EngineError::io(&self.path, e))?;
        Ok(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_fio_writes_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("trace");
        for _ in 0..2 {
            let mut t = IoTrace::open(&path).expect("open");
            t.file_event(1_000_000, Path::new("./rec"), "add");
            t.file_event(1_016_000, Path::new("./rec"), "open");
            t.io(1_147_500, Path::new("./rec"), "write", 65536, 65536);
            t.io(1_193_000, Path::new("rec"), "sync", 65536, 0);
            t.file_event(1_716_000, Path::new("rec"), "close");
            t.finish().expect("finish");
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let once = "fio version 3 iolog\n0 rec add\n16 rec open\n147 rec write 65536 65536\n193 rec sync 65536 0\n716 rec close\n";
        assert_eq!(text, once.repeat(2), "appended, as fio's");
    }
}
