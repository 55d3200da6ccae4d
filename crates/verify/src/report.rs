//! A verify run's typed result: what was written and read, how the read avoided the page
//! cache, and every kind of bad block counted, with the first ones described.

use serde::{Deserialize, Serialize};

use sinkrate_formats::verify_block::Finding;

/// A size in binary units, as verify's words print it (blocks and offsets are powers of two).
pub fn size_words(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match n {
        n if n >= GIB => format!("{:.2} GiB", n as f64 / GIB as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n => format!("{:.0} KiB", n as f64 / KIB as f64),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyVerdict {
    /// Every block read back as written.
    Verified,
    /// Some blocks did not.
    BadBlocks,
    /// The run could not finish (an I/O error, the device gone): the counts cover what was
    /// read before.
    Failed,
}

/// How the read got the data from the device rather than from memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMethod {
    /// O_DIRECT reads: the page cache is bypassed.
    ODirect,
    /// The filesystem refused O_DIRECT: after fsync, the file's cached pages were dropped
    /// (POSIX_FADV_DONTNEED) and the reads went through the page cache from the device.
    DroppedPageCache,
}

impl ReadMethod {
    pub fn words(self) -> &'static str {
        match self {
            ReadMethod::ODirect => "O_DIRECT: from the device, not the page cache",
            ReadMethod::DroppedPageCache => {
                "the filesystem refused O_DIRECT: read after fsync and dropping the file's cached pages"
            }
        }
    }
}

/// One phase's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub bytes: u64,
    pub seconds: f64,
    pub bytes_per_s: f64,
}

impl Phase {
    pub fn of(bytes: u64, seconds: f64) -> Phase {
        Phase {
            bytes,
            seconds,
            bytes_per_s: if seconds > 0.0 {
                bytes as f64 / seconds
            } else {
                0.0
            },
        }
    }
}

/// Blocks by what they read back as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub ok: u64,
    pub zeros: u64,
    pub garbage: u64,
    pub stale: u64,
    pub misplaced: u64,
    pub corrupt: u64,
}

impl Counts {
    pub fn add(&mut self, f: &Finding) {
        match f {
            Finding::Ok => self.ok += 1,
            Finding::Zeros => self.zeros += 1,
            Finding::Garbage => self.garbage += 1,
            Finding::Stale { .. } => self.stale += 1,
            Finding::Misplaced { .. } => self.misplaced += 1,
            Finding::Corrupt { .. } => self.corrupt += 1,
        }
    }

    pub fn bad(&self) -> u64 {
        self.zeros + self.garbage + self.stale + self.misplaced + self.corrupt
    }
}

/// One block that did not read back as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadBlock {
    pub block: u64,
    pub offset_bytes: u64,
    pub finding: Finding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// The directory, file or device named on the command line.
    pub target: String,
    /// The file or device the blocks were written to and read from.
    pub data_path: String,
    pub is_device: bool,
    /// Hex, as in each block's header.
    pub run_id: String,
    pub generation: u32,
    pub block_size_bytes: u64,
    pub blocks: u64,
    /// None for `--read-only`.
    pub write: Option<Phase>,
    /// What the write cost the device: the bytes it counted as written from the first
    /// block to the final fsync (diskstats; other writers to it count too). None for
    /// `--read-only`, or where no device was found behind the path.
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
    pub read: Option<Phase>,
    pub read_method: Option<ReadMethod>,
    pub counts: Counts,
    /// The first bad blocks (at most 32), in order.
    pub bad_blocks: Vec<BadBlock>,
    pub verdict: VerifyVerdict,
    pub verdict_text: String,
    /// Whether the data was left for a later `--read-only` pass.
    pub kept: bool,
}
