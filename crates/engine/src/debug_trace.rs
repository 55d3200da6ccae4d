//! fio's `--debug=io,file,mem`: a line per event on standard output, in fio's shape
//! (`io       4242  queue: io_u 0x7f..: off=0x1000,len=0x1000,ddir=1,file=data`): the kind,
//! the job's thread id (fio's job process id), and the event. `io` tells each I/O as it is
//! filled in, prepared, queued and completed; `file` tells the files set up, opened and
//! closed; `mem` tells the memory and descriptors the set was planned to need, the figure
//! the run is refused by when it does not fit.

use std::fmt::Display;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DebugTrace {
    pub io: bool,
    pub file: bool,
    pub mem: bool,
}

impl DebugTrace {
    /// fio's `--debug=` list; sinkrate has its `io`, `file` and `mem` kinds.
    pub fn parse(list: &str) -> Result<DebugTrace, String> {
        let mut t = DebugTrace::default();
        for kind in list.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            match kind {
                "io" => t.io = true,
                "file" => t.file = true,
                "mem" => t.mem = true,
                other => {
                    return Err(format!(
                        "--debug={other}: sinkrate has fio's io, file and mem debug output (use --debug=io, --debug=file, --debug=mem or a list such as --debug=io,file)"
                    ))
                }
            }
        }
        Ok(t)
    }

    #[inline]
    pub fn file(&self, text: impl Display) {
        if self.file {
            emit("file", text);
        }
    }

    /// One stage of one I/O (`fill`, `prep`, `queue`, `complete`), with its buffer as
    /// fio's io_u address.
    #[inline]
    pub fn io(
        &self,
        stage: &str,
        buf: *const u8,
        offset: u64,
        len: usize,
        ddir: usize,
        file: &Path,
    ) {
        if self.io {
            emit(
                "io",
                format_args!(
                    "{stage}: io_u {buf:p}: off=0x{offset:x},len=0x{len:x},ddir={ddir},file={}",
                    shown(file)
                ),
            );
        }
    }

    #[inline]
    pub fn mem(&self, text: impl Display) {
        if self.mem {
            emit("mem", text);
        }
    }

    #[inline]
    pub fn io_event(&self, text: impl Display) {
        if self.io {
            emit("io", text);
        }
    }
}

/// A file as the job named it (without the `./` of a relative name).
pub fn shown(path: &Path) -> std::path::Display<'_> {
    path.strip_prefix(".").unwrap_or(path).display()
}

fn emit(kind: &str, text: impl Display) {
    let line = format!(
        "{kind:<8} {:<5} {text}\n",
        sinkrate_platform::cpu::thread_id()
    );
    // One write per line: lines of jobs running at once do not interleave.
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}
