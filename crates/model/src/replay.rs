//! A captured recorder's calls as `record --replay` runs them: per recorder thread, its
//! calls in bursts (a frame: writes separated from the next by an idle gap, or a declared
//! frame rate's interval), each at its original time, its files mapped under the replay's
//! directory; and what the replay says of how well it kept the original timing.

use serde::{Deserialize, Serialize};

/// One call of a burst, on the replay's files (an index into [`ReplayPlan::files`]). The plan
/// lives in memory only (never written: the trace is its file), hence no serde.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayOp {
    /// Opened for writing; `flags` are the open's own (O_TRUNC, O_APPEND, O_DIRECT, O_DSYNC,
    /// O_SYNC are kept).
    Open {
        file: usize,
        flags: i32,
    },
    Write {
        file: usize,
        offset: u64,
        len: u64,
    },
    Fsync {
        file: usize,
    },
    Fdatasync {
        file: usize,
    },
    SyncFileRange {
        file: usize,
        offset: u64,
        len: u64,
        flags: u32,
    },
    Truncate {
        file: usize,
        len: u64,
    },
    Fallocate {
        file: usize,
        mode: u32,
        offset: u64,
        len: u64,
    },
    Close {
        file: usize,
    },
    Rename {
        from: usize,
        to: usize,
    },
    /// renameat2 with RENAME_EXCHANGE: the two names swap their files.
    Exchange {
        a: usize,
        b: usize,
    },
    /// fcntl(F_SETFL) after the open: O_DIRECT and O_APPEND are kept.
    SetFlags {
        file: usize,
        flags: i32,
    },
    Unlink {
        file: usize,
    },
}

impl ReplayOp {
    /// Whether the op is part of a frame's data (skipped when the frame is dropped), rather
    /// than a change of the files the recorder makes whatever it drops (open, close, rename).
    pub fn is_data(&self) -> bool {
        matches!(
            self,
            ReplayOp::Write { .. }
                | ReplayOp::Fsync { .. }
                | ReplayOp::Fdatasync { .. }
                | ReplayOp::SyncFileRange { .. }
        )
    }
}

/// A burst of one thread's calls: a frame when it writes, else calls between frames (an open,
/// a rename at a segment's end), which are never dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Burst {
    /// When its first call started, ns from the capture's start.
    pub at_ns: u64,
    pub bytes: u64,
    pub ops: Vec<ReplayOp>,
    /// The original calls' time, first call's start to last call's end (the recorder's own
    /// write time for this frame).
    pub original_ns: u64,
}

/// One recorder thread: a stream of the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayStream {
    /// `thread TID` and the file it wrote most.
    pub name: String,
    pub tid: i32,
    pub bursts: Vec<Burst>,
    /// Frames a second, from the median interval between its frames.
    pub fps: f64,
    /// Whether it opened a file with O_DIRECT.
    pub direct: bool,
    /// Judged as a stream: a thread that wrote frames (10 or more, or the most of any
    /// thread when none did). A thread that wrote a few times (an index, a log) runs all the
    /// same, its writes never dropped.
    pub judged: bool,
}

/// The frames a stream needs to be judged as one (as record's own streams: fewer are too
/// short to tell).
pub const FRAMES_TO_JUDGE: usize = 10;

#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPlan {
    /// The trace it came from.
    pub trace: String,
    /// The original files, and where each goes under the replay's directory (relative).
    pub files: Vec<String>,
    pub mapped: Vec<String>,
    pub streams: Vec<ReplayStream>,
    /// The capture's length, ns.
    pub duration_ns: u64,
    /// The most the files held at once: what the replay needs free.
    pub peak_bytes: u64,
    /// How bursts were found: "idle gaps of 1 ms or more", or "--fps 30".
    pub grouping: String,
    /// What the capture said it could not see: the replay judges part of the recorder's
    /// workload, and says so.
    pub unseen: Vec<String>,
}

/// How the replay kept to the original, and the original's own figures beside the replay's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplaySummary {
    pub trace: String,
    pub speed: f64,
    pub grouping: String,
    pub threads: usize,
    pub frames: u64,
    /// How late each frame's first call started against its original time (scaled by the
    /// speed), ms: the replay's fidelity.
    pub lag_p50_ms: Option<f64>,
    pub lag_p99_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
    /// Frame write times (first call to last) in the capture, ms.
    pub original_write_p50_ms: Option<f64>,
    pub original_write_p99_ms: Option<f64>,
    pub original_write_max_ms: Option<f64>,
    /// What the capture said it could not see: the verdict judges the rest of the
    /// recorder's workload.
    #[serde(default)]
    pub unseen: Vec<String>,
}
