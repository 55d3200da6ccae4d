//! A verify run's typed result (`sinkrate verify`): what was written and read, how the read
//! avoided the page cache, and every kind of bad block counted, with the first ones
//! described; and `verify --capacity`'s (is the capacity real?). Written by the verify
//! crate, read back by compare and report.

use serde::{Deserialize, Serialize};

/// What a block read back as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    Ok,
    /// Every byte zero: never written, or trimmed.
    Zeros,
    /// Not a sinkrate block at all: another program's data, or what the card invents.
    Garbage,
    /// A sinkrate block from another run, or from an earlier generation of this one: the
    /// write never reached the medium, and the old data is still there.
    Stale {
        run_id: u64,
        generation: u32,
        written_unix_s: u32,
    },
    /// A block of this run that belongs at another offset: the device wrapped around (a fake
    /// capacity) or put a write in the wrong place.
    Misplaced {
        from_block: u64,
        from_offset: u64,
    },
    /// The header or the payload does not match its checksum: bit errors.
    Corrupt {
        header: bool,
    },
}

impl Finding {
    pub fn is_ok(&self) -> bool {
        matches!(self, Finding::Ok)
    }

    /// What a bad block holds, in words (`run_id` and `generation`: the run's own).
    pub fn words(&self, run_id: u64, generation: u32) -> String {
        match self {
        Finding::Ok => "as written".into(),
        Finding::Zeros => "zeros (never written, or discarded)".into(),
        Finding::Garbage => "no verify header: other data, or what the device made up".into(),
        Finding::Stale {
            run_id: other,
            generation: g,
            ..
        } if *other == run_id => format!(
            "stale: generation {g} of this run where {generation} was written last: that write did not reach the medium"
        ),
        Finding::Stale {
            run_id: other,
            written_unix_s,
            ..
        } => format!(
            "stale: a block of an earlier run ({other:016x}, written {}): this run's write did not reach the medium",
            crate::envelope::rfc3339(u64::from(*written_unix_s) * 1000)
        ),
        Finding::Misplaced {
            from_block,
            from_offset,
        } => format!(
            "the block written for offset {} (block {from_block}): a wrap-around or a misdirected write",
            sinkrate_units::product::bytes_binary(*from_offset)
        ),
        Finding::Corrupt { header: true } => "a damaged header (bit errors)".into(),
        Finding::Corrupt { header: false } => {
            "a payload that does not match its checksum (bit errors)".into()
        }
    }
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

impl VerifyVerdict {
    /// The verdict as the text shows it, and the exit code it gives.
    pub fn word_and_exit_code(self) -> (&'static str, u8) {
        match self {
            VerifyVerdict::Verified => ("VERIFIED", 0),
            VerifyVerdict::BadBlocks => ("BAD BLOCKS", 1),
            VerifyVerdict::Failed => ("FAILED", 2),
        }
    }
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

/// What the capacity probe found the device to do with writes past its real end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// Every probe kept its data.
    Genuine,
    /// Writes past the real end land at the start again.
    Wraps,
    /// Writes past the real end are lost: zeros or old data come back.
    Drops,
    /// Data within what it holds does not come back as written.
    Damages,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// It holds what it reports.
    Genuine,
    /// It holds less than it reports, or loses data.
    Fake,
    /// The probe could not finish.
    Failed,
}

impl CapacityVerdict {
    /// The verdict as the text shows it, and the exit code it gives.
    pub fn word_and_exit_code(self) -> (&'static str, u8) {
        match self {
            CapacityVerdict::Genuine => ("GENUINE", 0),
            CapacityVerdict::Fake => ("FAKE CAPACITY", 1),
            CapacityVerdict::Failed => ("FAILED", 2),
        }
    }
}

/// Where a wrapped write turned up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrapEvidence {
    pub written_at_bytes: u64,
    pub found_at_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityReport {
    pub target: String,
    pub reported_bytes: u64,
    /// Bytes from the start that keep their data (the reported size when genuine).
    pub real_bytes: u64,
    /// None when the probe could not finish.
    pub behaviour: Option<Behaviour>,
    pub verdict: CapacityVerdict,
    pub verdict_text: String,
    pub wrap_evidence: Option<WrapEvidence>,
    /// Written in full at the start; single 4 KiB units every this many bytes above it.
    pub low_region_bytes: u64,
    pub units_written: u64,
    pub bytes_written: u64,
    /// O_DIRECT on the device, flushed (fdatasync) between writing and reading.
    pub read_method: String,
    /// "restored" (every place put back from the undo journal), "destructive" (nothing
    /// saved), or what went wrong putting them back.
    pub restore: String,
    pub seconds: f64,
    pub error: Option<String>,
}
