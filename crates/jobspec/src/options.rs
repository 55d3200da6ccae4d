//! The option table: every fio option sinkrate understands, its type and default, and how a
//! raw `key=value` turns into a field of [`JobOptions`].

use crate::engines::flag as engine_flag;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::behaviour::Behaviour;
use crate::buffer_shape::BufferShape;
use crate::coordination::Coordination;
use crate::distribution::{OffsetModifier, RandomDistribution, RwSequencer};
use crate::fio_numbers::parse_size;
use crate::table::Part;
use crate::zones::Zones;
use sinkrate_units::fio::{parse_bool, parse_int, parse_percent, parse_time, KbBase, TimeUnit};

/// Data direction index used for per-direction pairs (`bs=4k,8k`): read, write.
pub const READ: usize = 0;
pub const WRITE: usize = 1;
/// fio's third direction: discards (BLKDISCARD on a block device, a punched hole with
/// ioengine=falloc).
pub const TRIM: usize = 2;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    #[default]
    Sequential,
    Random,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Read,
    Write,
    Mixed,
    /// rw=trim, rw=randtrim.
    Trim,
    /// rw=trimwrite, rw=randtrimwrite: each block trimmed, then written.
    TrimWrite,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadWrite {
    pub pattern: Pattern,
    pub direction: Direction,
}

impl ReadWrite {
    pub fn fio_name(&self) -> &'static str {
        match (self.pattern, self.direction) {
            (Pattern::Sequential, Direction::Read) => "read",
            (Pattern::Sequential, Direction::Write) => "write",
            (Pattern::Sequential, Direction::Mixed) => "rw",
            (Pattern::Random, Direction::Read) => "randread",
            (Pattern::Random, Direction::Write) => "randwrite",
            (Pattern::Random, Direction::Mixed) => "randrw",
            (Pattern::Sequential, Direction::Trim) => "trim",
            (Pattern::Random, Direction::Trim) => "randtrim",
            (Pattern::Sequential, Direction::TrimWrite) => "trimwrite",
            (Pattern::Random, Direction::TrimWrite) => "randtrimwrite",
        }
    }
    pub fn reads(&self) -> bool {
        matches!(self.direction, Direction::Read | Direction::Mixed)
    }
    /// Whether the job writes data (not counting trims).
    pub fn writes(&self) -> bool {
        matches!(
            self.direction,
            Direction::Write | Direction::Mixed | Direction::TrimWrite
        )
    }
    pub fn trims(&self) -> bool {
        matches!(self.direction, Direction::Trim | Direction::TrimWrite)
    }
    /// Whether the job changes what the storage holds: writes or trims, both guarded alike.
    pub fn modifies(&self) -> bool {
        self.writes() || self.trims()
    }
    /// Which directions the job does, by fio's index (read, write, trim).
    pub fn active(&self) -> [bool; 3] {
        [self.reads(), self.writes(), self.trims()]
    }
}

/// The slot of an option kept for reads and writes only (bsrange, bssplit, blockalign,
/// random_distribution) that direction `d` uses: trims take the write value.
pub fn read_write_slot(d: usize) -> usize {
    d.min(WRITE)
}

/// `sync_file_range=wait_before,write,wait_after:N`: sync_file_range(2) with those flags
/// over the range written since the last call, every N writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncFileRange {
    pub wait_before: bool,
    pub write: bool,
    pub wait_after: bool,
    pub every: u64,
}

impl SyncFileRange {
    fn parse(text: &str) -> Result<SyncFileRange, String> {
        let (flags, every) = match text.split_once(':') {
            Some((f, n)) => (
                f,
                parse_int(n).map_err(|_| format!("':{n}' is not a number of writes"))?,
            ),
            None => (text, 1),
        };
        if every == 0 {
            return Err("':0': sync every 1 or more writes".into());
        }
        let mut sfr = SyncFileRange {
            wait_before: false,
            write: false,
            wait_after: false,
            every,
        };
        for flag in flags.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            match flag {
                "wait_before" => sfr.wait_before = true,
                "write" => sfr.write = true,
                "wait_after" => sfr.wait_after = true,
                other => {
                    return Err(format!(
                        "'{other}' is not a flag (accepted: wait_before, write, wait_after)"
                    ))
                }
            }
        }
        if !(sfr.wait_before || sfr.write || sfr.wait_after) {
            return Err(
                "no flag given (wait_before, write or wait_after, e.g. sync_file_range=write:16)"
                    .into(),
            );
        }
        Ok(sfr)
    }
}

/// The I/O engines sinkrate has a backend for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Sync,
    #[default]
    Psync,
    Vsync,
    Pvsync,
    IoUring,
    Mmap,
    Null,
    Ftruncate,
    Filecreate,
    Filestat,
    Filedelete,
    Falloc,
    Dircreate,
    Dirstat,
    Dirdelete,
    /// Burns CPU (a background load), no I/O.
    Cpuio,
    /// Runs a program beside the other jobs, no I/O.
    Exec,
    /// Reads and writes an NBD server's export (`uri=`), as fio's libnbd engine.
    Nbd,
    /// Reads and writes anonymous memory the job maps (`size=` of it), each first touch of
    /// a page a page fault, as fio's `page_fault` engine.
    #[serde(rename = "page_fault")]
    PageFault,
}

/// What each engine is comes from its row of [`crate::engines::ENGINES`].
impl Engine {
    fn has(self, flag: u16) -> bool {
        crate::engines::facts(self).flags & flag != 0
    }
    pub fn fio_name(&self) -> &'static str {
        crate::engines::facts(*self).name
    }
    /// Engines that operate on whole files rather than doing block I/O.
    pub fn is_file_operation(&self) -> bool {
        self.has(engine_flag::WHOLE_FILE)
    }
    /// Engines whose every "I/O" is one create, stat or delete of a file or directory.
    pub fn is_metadata(&self) -> bool {
        self.has(engine_flag::METADATA)
    }
    /// Engines that change the file system whatever the job's rw= says.
    pub fn changes_files(&self) -> bool {
        self.has(engine_flag::CHANGES_FILES)
    }
    /// Engines that do no I/O: a CPU load or a program run beside the I/O jobs.
    pub fn is_side_load(&self) -> bool {
        self.has(engine_flag::NO_IO)
    }
    /// Engines whose targets are directories.
    pub fn on_directories(&self) -> bool {
        self.has(engine_flag::DIRECTORIES)
    }
    /// Engines that can keep more than one I/O in flight.
    pub fn is_async(&self) -> bool {
        self.has(engine_flag::QUEUED)
    }
    /// Block-I/O engines without a file to open: the I/O goes nowhere (null) or to memory
    /// the job maps (page_fault).
    pub fn is_diskless(&self) -> bool {
        self.has(engine_flag::DISKLESS)
    }
    /// Block-I/O engines whose target the backend holds rather than a descriptor the job
    /// opens: the diskless ones and an NBD export (its connection).
    pub fn opens_no_file(&self) -> bool {
        self.has(engine_flag::NO_FILE)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    #[default]
    None,
    Sync,
    Dsync,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallocate {
    None,
    #[default]
    Native,
    Posix,
    Keep,
    Truncate,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    #[default]
    Linear,
    Poisson,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinktimeBlocksType {
    #[default]
    Complete,
    Issue,
}

/// Size given as bytes or as a percentage of the file or device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeSpec {
    Bytes(u64),
    Percent(f64),
}

impl Default for SizeSpec {
    fn default() -> Self {
        SizeSpec::Bytes(0)
    }
}

/// Steady-state detection (`ss=iops:10%`, `ss=bw_slope:0.1%`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub metric: SteadyMetric,
    pub slope: bool,
    /// Limit as a fraction of the mean when `percent`, else an absolute value.
    pub limit: f64,
    pub percent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SteadyMetric {
    Iops,
    Bw,
    /// The mean latency (lat) of the I/Os completed in each check interval.
    Lat,
}

/// fio's unified_rw_reporting: a job's directions reported apart, summed into one
/// ("mixed"), or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnifiedReporting {
    #[default]
    Split,
    Mixed,
    Both,
}

/// A log that a job writes in fio's log format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRequest {
    /// fio's file-name prefix: `PREFIX_bw.N.log`; empty when none was given, for the job's
    /// name.
    pub prefix: String,
}

impl LogRequest {
    /// The file-name prefix for the job named `job_name`: the one given, else the job's
    /// name (fio's, also when the option is in [global]).
    pub fn prefix_for<'a>(&'a self, job_name: &'a str) -> &'a str {
        if self.prefix.is_empty() {
            job_name
        } else {
            &self.prefix
        }
    }
}

/// Declares [`JobOptions`] and `JobOptions::unset`, a job with every field at its type's
/// zero (none, 0, false, the variant marked `#[default]`): what the option table's defaults
/// are applied to. A macro because a type has one `Default`, and the job's is the table's:
/// the field list is written once, here, and nowhere else.
macro_rules! job_options {
    (
        $(#[$attr:meta])*
        pub struct JobOptions {
            $( $(#[$field_attr:meta])* pub $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$attr])*
        pub struct JobOptions {
            $( $(#[$field_attr])* pub $field: $ty, )*
        }

        impl JobOptions {
            fn unset() -> Self {
                JobOptions {
                    $( $field: Default::default(), )*
                }
            }
        }
    };
}

job_options! {
    /// Every option of one job, typed and with fio's defaults.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    // A result written before an option existed reads it as its default.
    #[serde(default)]
    pub struct JobOptions {
        pub name: String,
        pub description: Option<String>,
        pub filename: Option<String>,
        pub directory: Option<String>,
        pub size: Option<SizeSpec>,
        pub io_size: Option<u64>,
        pub filesize: Option<(u64, u64)>,
        pub nrfiles: u32,
        /// fio's `filename_format`, with `$jobname`, `$jobnum`, `$filenum` expanded per file.
        pub filename_format: Option<String>,
        /// Stop after this many I/Os (fio's `number_ios`).
        pub number_ios: Option<u64>,
        pub numjobs: u32,
        pub group_reporting: bool,
        pub unified_rw_reporting: UnifiedReporting,
        pub stonewall: bool,
        pub new_group: bool,
        pub loops: u32,
        pub offset: SizeSpec,
        /// offset_increment: each numjobs clone starts this much further than the one before
        /// (fio's offset + offset_increment * subjob number).
        pub offset_increment: SizeSpec,
        /// `None` when the job did not say: sinkrate then removes the files it created.
        pub unlink: Option<bool>,
        pub kb_base: KbBase,
        pub rw: ReadWrite,
        pub rwmixread: f64,
        /// Per direction: read, write, trim.
        #[serde(with = "crate::serde_directions")]
        pub bs: [u64; 3],
        pub bsrange: Option<[(u64, u64); 2]>,
        pub bssplit: Option<[Vec<(u64, f64)>; 2]>,
        pub blockalign: Option<[u64; 2]>,
        pub ioengine: Engine,
        /// The engine name as written, when it was mapped to another backend (libaio -> io_uring).
        pub ioengine_requested: Option<String>,
        pub iodepth: u32,
        pub iodepth_batch_submit: u32,
        pub iodepth_batch_complete_min: u32,
        pub iodepth_batch_complete_max: u32,
        pub direct: bool,
        pub sync: SyncMode,
        pub fsync: u64,
        pub fdatasync: u64,
        /// fio's sync_file_range: the range written since the last call is synced every N
        /// writes with these flags.
        pub sync_file_range: Option<SyncFileRange>,
        pub end_fsync: bool,
        pub fsync_on_close: bool,
        pub fallocate: Fallocate,
        pub pre_read: bool,
        pub invalidate: bool,
        pub overwrite: bool,
        pub norandommap: bool,
        /// fio's random_distribution per direction (read, write); `None` is uniform.
        pub random_distribution: Option<[RandomDistribution; 2]>,
        /// `sequence:` distributions advance by their length each cycle (newer fio's option).
        pub random_sequence_stride: bool,
        /// The `:N` of `rw=MODE:N`.
        pub offset_modifier: OffsetModifier,
        pub rw_sequencer: RwSequencer,
        pub randseed: u64,
        pub randrepeat: bool,
        #[serde(
            rename = "runtime_s",
            alias = "runtime",
            with = "sinkrate_units::serde_seconds::opt_seconds"
        )]
        pub runtime: Option<Duration>,
        pub time_based: bool,
        #[serde(
            rename = "ramp_time_s",
            alias = "ramp_time",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub ramp_time: Duration,
        #[serde(
            rename = "startdelay_s",
            alias = "startdelay",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub startdelay: Duration,
        #[serde(with = "crate::serde_directions")]
        pub rate: [u64; 3],
        #[serde(with = "crate::serde_directions")]
        pub rate_iops: [u64; 3],
        #[serde(with = "crate::serde_directions")]
        pub rate_min: [u64; 3],
        #[serde(with = "crate::serde_directions")]
        pub rate_iops_min: [u64; 3],
        /// fio's rate_cycle: the window, in ms, over which rate_min and rate_iops_min are
        /// averaged once the first 2 s are over.
        pub rate_cycle_ms: u64,
        pub rate_process: RateProcess,
        #[serde(
            rename = "thinktime_s",
            alias = "thinktime",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub thinktime: Duration,
        #[serde(
            rename = "thinktime_spin_s",
            alias = "thinktime_spin",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub thinktime_spin: Duration,
        /// fio's thinktime_blocks: the pause comes after this many blocks. Not given, it is 1,
        /// unless thinktime_iotime is given: then only the time rule pauses (as fio's).
        pub thinktime_blocks: Option<u64>,
        /// fio's thinktime_iotime: the pause also comes after this long of I/O.
        #[serde(
            rename = "thinktime_iotime_s",
            alias = "thinktime_iotime",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub thinktime_iotime: Duration,
        pub thinktime_blocks_type: ThinktimeBlocksType,
        #[serde(
            rename = "max_latency_s",
            alias = "max_latency",
            with = "sinkrate_units::serde_seconds::opt_seconds"
        )]
        pub max_latency: Option<Duration>,
        #[serde(
            rename = "latency_target_s",
            alias = "latency_target",
            with = "sinkrate_units::serde_seconds::opt_seconds"
        )]
        pub latency_target: Option<Duration>,
        #[serde(
            rename = "latency_window_s",
            alias = "latency_window",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub latency_window: Duration,
        pub latency_percentile: f64,
        pub ss: Option<SteadyState>,
        #[serde(
            rename = "ss_dur_s",
            alias = "ss_dur",
            with = "sinkrate_units::serde_seconds::opt_seconds"
        )]
        pub ss_dur: Option<Duration>,
        #[serde(
            rename = "ss_ramp_s",
            alias = "ss_ramp",
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub ss_ramp: Duration,
        /// How often the steady-state metric is measured (fio's ss_interval, 1 s).
        #[serde(
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub ss_interval: Duration,
        pub zero_buffers: bool,
        pub refill_buffers: bool,
        pub scramble_buffers: bool,
        pub buffer_pattern: Option<Vec<u8>>,
        // The verify options came later: results written before them read as without them.
        /// fio's verify=: how written blocks are checked when read back.
        pub verify: Option<VerifyMethod>,
        /// Read back and check what was written once the writing ends (fio's default: yes).
        pub do_verify: bool,
        /// Check every N blocks written, as they go (0: only at the end).
        pub verify_backlog: u64,
        /// Stop at the first bad block instead of checking them all.
        pub verify_fatal: bool,
        /// verify_dump: a bad block's bytes as read are kept in a file
        /// (`NAME.OFFSET.received` in the current directory), as fio's.
        pub verify_dump: bool,
        /// verify_state_save: a writing job with verify saves its write state (writes
        /// issued, the last completions) when it ends, in fio's file and layout.
        pub verify_state_save: bool,
        /// verify_state_load: a verifying read job loads the state the writing job of the
        /// same name saved, and stops where that job's writes stopped.
        pub verify_state_load: bool,
        /// serialize_overlap: an I/O waits while one in flight overlaps it and either is a
        /// write, as fio's.
        pub serialize_overlap: bool,
        pub verify_pattern: Option<Vec<u8>>,
        /// verify_interval: a header every this many bytes of a block (0: one per block).
        pub verify_interval: u64,
        pub write_bw_log: Option<LogRequest>,
        /// write_iolog: the file the job's issued I/Os are appended to (fio's iolog v3).
        pub write_iolog: Option<String>,
        /// fill_device / fill_fs: write until the storage is full (ENOSPC or EDQUOT ends the
        /// job, as fio's).
        pub fill_device: bool,
        /// read_iolog: the trace the job's I/Os come from, instead of its pattern options.
        pub read_iolog: Option<String>,
        /// replay_no_stall: replay as fast as the I/O goes, not at the trace's times.
        pub replay_no_stall: bool,
        /// replay_redirect: every replayed I/O goes to this file or device.
        pub replay_redirect: Option<String>,
        pub write_lat_log: Option<LogRequest>,
        pub write_iops_log: Option<LogRequest>,
        pub log_avg_msec: u64,
        pub log_unix_epoch: bool,
        /// log_compression: bytes of log entries per compressed chunk (0: none).
        pub log_compression: u64,
        /// log_store_compressed: with log_compression, the logs are kept compressed as
        /// fio's `.fz` files (gzip members of fio's binary samples).
        pub log_store_compressed: bool,
        /// log_offset: each per-I/O log entry carries the I/O's offset (before the priority).
        pub log_offset: bool,
        /// log_max_value: averaged latency log entries are the window's largest.
        pub log_max_value: bool,
        /// write_hist_log: fio's completion-latency histogram log (PREFIX_clat_hist.N.log),
        /// one line per direction every log_hist_msec.
        pub write_hist_log: Option<LogRequest>,
        pub log_hist_msec: u64,
        /// log_hist_coarseness: each histogram line sums 2^N of fio's 1856 bins (0 to 6).
        pub log_hist_coarseness: u8,
        /// per_job_logs=0: logs are named PREFIX_KIND.log, without the job number, and
        /// appended to (jobs with the same prefix share them), as fio's.
        pub per_job_logs: bool,
        pub percentile_list: Vec<f64>,
        /// cpuio: percent of each cycle spent busy (fio's mandatory cpuload=).
        pub cpuload: Option<u32>,
        /// cpuio: busy time per cycle, in microseconds (fio's cpuchunks=, 50000).
        pub cpuchunks_us: u64,
        /// cpuio: sort numbers instead of spinning (fio's cpumode=qsort).
        pub cpumode_qsort: bool,
        /// cpuio: end once the I/O jobs running beside it are done.
        pub exit_on_io_done: bool,
        /// exec: the program and its arguments (`%r` runtime in seconds, `%n` job name).
        pub program: Option<String>,
        pub arguments: Option<String>,
        /// nbd: the server's NBD URI (`nbd://host:port/export`, `nbd+unix:///export?socket=PATH`).
        pub uri: Option<String>,
        /// exec: from SIGTERM to SIGKILL at the end of the runtime (fio's grace_time=, 1 s).
        #[serde(
            with = "sinkrate_units::serde_seconds::seconds"
        )]
        pub grace_time: Duration,
        /// exec: the program's output goes to NAME.stdout and NAME.stderr (fio's default).
        pub std_redirect: bool,
        /// Which latencies get percentiles in the output, as fio's options of these names.
        pub clat_percentiles: bool,
        pub lat_percentiles: bool,
        pub slat_percentiles: bool,
        /// wait_for, flow, exitall and io_submit_mode.
        pub coordination: Coordination,
        /// Generator, measurements switched off, hints, file opening and serving order.
        pub behaviour: Behaviour,
        /// Compressibility and deduplication of written data.
        pub buffer_shape: BufferShape,
        /// zonemode=strided and its zonesize, zonerange, zoneskip.
        pub zones: Zones,
        /// continue_on_error and ignore_error.
        pub error_policy: crate::error_policy::ErrorPolicy,
        /// prio, prioclass, the cmdprio options and log_prio.
        pub priorities: crate::priority::Priorities,
    }
}

pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

impl JobOptions {
    /// Bandwidth and IOPS are sampled every 500 ms (fio's), or every `log_avg_msec` when
    /// that is shorter.
    pub fn bw_sample_period_ns(&self) -> u64 {
        const FIO_PERIOD_NS: u64 = 500_000_000;
        if self.log_avg_msec > 0 {
            (self.log_avg_msec * 1_000_000).min(FIO_PERIOD_NS)
        } else {
            FIO_PERIOD_NS
        }
    }

    /// Whether an I/O is submitted and completed apart, so that it has a submission
    /// latency: the queued engines, and null at iodepth above 1 (fio's null engine queues
    /// then, and is synchronous at iodepth=1).
    pub fn submits_apart(&self) -> bool {
        self.ioengine.is_async() || (self.ioengine == Engine::Null && self.iodepth > 1)
    }
}

impl Default for JobOptions {
    /// fio's defaults, as the option table declares them: each declared default applied to
    /// an unset job, in the table's order.
    fn default() -> Self {
        let mut job = JobOptions::unset();
        for option in crate::table::OPTIONS
            .iter()
            .filter(|o| !o.default.is_empty())
        {
            // The table's tests apply each default; one that a parser refused would leave
            // its field unset, which they catch.
            let applied = job.apply(option.name, Some(option.default));
            debug_assert!(applied.is_ok(), "{}={}", option.name, option.default);
        }
        job.forget_what_was_given();
        job
    }
}

impl JobOptions {
    /// Clears the fields that say whether an option was given besides what it is, where
    /// "not given" means the same as its default: a job starts with none given.
    pub(crate) fn forget_what_was_given(&mut self) {
        self.ioengine_requested = None;
        // Not given, files are named $jobname.$jobnum.$filenum.
        self.filename_format = None;
        // Not given, the run decides: bench keeps the files (fio's 0), sinkrate's own
        // sessions remove theirs.
        self.unlink = None;
        // Not given, it is 1; unless thinktime_iotime is given, which then alone sets the
        // pauses (as fio's).
        self.thinktime_blocks = None;
        // Steady state is judged only when ss_dur is given; then, without ss=, with the
        // table's default metric (fio's iops_slope:0.01%).
        self.ss = None;
    }
}

/// All option names sinkrate takes, aliases included, sorted: the option table's.
pub fn supported_names() -> Vec<&'static str> {
    crate::table::all_names()
}

/// fio's `verify=` methods, every one fio 3.33 offers. The checksums are fio's own
/// algorithms (the same polynomials, initial values and seeds as fio's `crc/` code), so a
/// block's checksum is the number fio would compute for the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerifyMethod {
    #[serde(rename = "crc32c")]
    Crc32c,
    #[serde(rename = "md5")]
    Md5,
    #[serde(rename = "crc64")]
    Crc64,
    #[serde(rename = "crc32")]
    Crc32,
    #[serde(rename = "crc16")]
    Crc16,
    #[serde(rename = "crc7")]
    Crc7,
    #[serde(rename = "xxhash")]
    Xxhash,
    #[serde(rename = "sha1")]
    Sha1,
    #[serde(rename = "sha256")]
    Sha256,
    #[serde(rename = "sha512")]
    Sha512,
    #[serde(rename = "sha3-224")]
    Sha3_224,
    #[serde(rename = "sha3-256")]
    Sha3_256,
    #[serde(rename = "sha3-384")]
    Sha3_384,
    #[serde(rename = "sha3-512")]
    Sha3_512,
    /// Only the verify_pattern, no header.
    #[serde(rename = "pattern")]
    Pattern,
    /// The header alone (offset, sequence, its own checksum).
    #[serde(rename = "meta")]
    Meta,
}

/// Every method with its fio name and what it checks, in fio's order: the parser's names
/// and `fio_name` come from here, and the option table's choices are tested against it.
pub const VERIFY_METHODS: &[(VerifyMethod, &str, &str)] = &[
    (VerifyMethod::Md5, "md5", "an MD5 of each block"),
    (VerifyMethod::Crc64, "crc64", "a crc64 of each block"),
    (VerifyMethod::Crc32, "crc32", "a crc32 of each block"),
    (VerifyMethod::Crc32c, "crc32c", "a crc32c of each block"),
    (VerifyMethod::Crc16, "crc16", "a crc16 of each block"),
    (VerifyMethod::Crc7, "crc7", "a crc7 of each block"),
    (VerifyMethod::Sha1, "sha1", "a SHA-1 of each block"),
    (VerifyMethod::Sha256, "sha256", "a SHA-256 of each block"),
    (VerifyMethod::Sha512, "sha512", "a SHA-512 of each block"),
    (
        VerifyMethod::Sha3_224,
        "sha3-224",
        "a SHA3-224 of each block",
    ),
    (
        VerifyMethod::Sha3_256,
        "sha3-256",
        "a SHA3-256 of each block",
    ),
    (
        VerifyMethod::Sha3_384,
        "sha3-384",
        "a SHA3-384 of each block",
    ),
    (
        VerifyMethod::Sha3_512,
        "sha3-512",
        "a SHA3-512 of each block",
    ),
    (VerifyMethod::Xxhash, "xxhash", "an xxhash32 of each block"),
    (VerifyMethod::Pattern, "pattern", "verify_pattern alone"),
    (VerifyMethod::Meta, "meta", "the header alone"),
];

impl VerifyMethod {
    /// `None` for fio's `verify=0`/`null` (no checking).
    pub fn parse(text: &str) -> Result<Option<VerifyMethod>, String> {
        let name = text.trim().to_ascii_lowercase();
        match name.as_str() {
            "0" | "null" | "none" => return Ok(None),
            "crc32c-intel" => return Ok(Some(VerifyMethod::Crc32c)),
            _ => {}
        }
        VERIFY_METHODS
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(m, _, _)| Some(*m))
            .ok_or_else(|| {
                let names: Vec<&str> = VERIFY_METHODS.iter().map(|(_, n, _)| *n).collect();
                format!(
                    "verify={name} is not one of fio's methods ({}, crc32c-intel or null)",
                    names.join(", ")
                )
            })
    }

    pub fn fio_name(self) -> &'static str {
        VERIFY_METHODS
            .iter()
            .find(|(m, _, _)| *m == self)
            .map_or("meta", |(_, n, _)| n)
    }

    /// Bytes of the checksum the method keeps in each header (0: pattern and meta).
    pub fn digest_bytes(self) -> u64 {
        match self {
            VerifyMethod::Crc7 => 1,
            VerifyMethod::Crc16 => 2,
            VerifyMethod::Crc32 | VerifyMethod::Crc32c | VerifyMethod::Xxhash => 4,
            VerifyMethod::Crc64 => 8,
            VerifyMethod::Md5 => 16,
            VerifyMethod::Sha1 => 20,
            VerifyMethod::Sha3_224 => 28,
            VerifyMethod::Sha256 | VerifyMethod::Sha3_256 => 32,
            VerifyMethod::Sha3_384 => 48,
            VerifyMethod::Sha512 | VerifyMethod::Sha3_512 => 64,
            VerifyMethod::Pattern | VerifyMethod::Meta => 0,
        }
    }

    /// The header the method writes at the start of each block (or verify_interval): 32
    /// bytes of sinkrate's fields and the checksum, at least 64 bytes (as fio's header
    /// size depends on its method, from 40 to 104 bytes). `pattern` writes none.
    pub fn header_bytes(self) -> u64 {
        if self == VerifyMethod::Pattern {
            return 0;
        }
        (32 + self.digest_bytes()).max(64)
    }
}

/// The outcome of applying one option.
#[derive(Debug, PartialEq)]
pub enum Applied {
    Set,
    /// Accepted, changes nothing; carries the reason.
    NoEffect(&'static str),
    /// Accepted, with a notice the user should see (e.g. libaio mapped to io_uring).
    Notice(String),
}

/// Why an option could not be applied.
#[derive(Debug, PartialEq)]
pub enum ApplyError {
    /// sinkrate has no such option.
    Unsupported,
    /// The option exists but its value is wrong; the text says what would be accepted.
    BadValue(String),
}

pub(crate) fn need<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, ApplyError> {
    value.ok_or_else(|| ApplyError::BadValue(format!("option '{key}' needs a value ({key}=...)")))
}

pub(crate) fn bad(key: &str, msg: impl std::fmt::Display) -> ApplyError {
    ApplyError::BadValue(format!("option '{key}': {msg}"))
}

/// One of a fixed set of values: the matching one's meaning, or one line listing them all.
pub(crate) fn one_of<T: Copy>(
    key: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> Result<T, ApplyError> {
    let v = need(key, value)?.trim();
    if let Some((_, meaning)) = choices.iter().find(|(name, _)| *name == v) {
        return Ok(*meaning);
    }
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let expected = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(bad(
        key,
        format!("'{v}' is not accepted (expected {expected})"),
    ))
}

/// A flag option: bare means true.
pub(crate) fn flag(key: &str, value: Option<&str>) -> Result<bool, ApplyError> {
    match value {
        None => Ok(true),
        Some(v) => parse_bool(v).map_err(|e| bad(key, e)),
    }
}

/// Splits `read,write,trim` into per-direction values as fio does: one value applies to
/// all three, an empty part keeps the current value, and the directions after the last one
/// given take its value (`bs=4k,64k` trims with 64k).
pub(crate) fn per_direction<T: Copy>(
    key: &str,
    text: &str,
    current: [T; 3],
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[T; 3], ApplyError> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 3 {
        return Err(bad(
            key,
            format!("'{text}' has more than three comma-separated values (read,write,trim)"),
        ));
    }
    let mut out = current;
    let mut last = None;
    for (i, part) in parts.iter().enumerate() {
        if !part.trim().is_empty() {
            let v = parse(part).map_err(|e| bad(key, e))?;
            out[i] = v;
            last = Some(v);
        }
    }
    if let Some(v) = last {
        for slot in out.iter_mut().skip(parts.len()) {
            *slot = v;
        }
    }
    Ok(out)
}

/// Per-direction values for options kept for reads and writes only (trims use the write
/// value): a third value that differs from the write value is refused rather than ignored.
fn read_write_only<T: Copy + PartialEq>(key: &str, all: [T; 3]) -> Result<[T; 2], ApplyError> {
    if all[TRIM] != all[WRITE] {
        return Err(bad(
            key,
            "a trim value (third) that differs from the write value is not supported by sinkrate (trims use the write value)",
        ));
    }
    Ok([all[READ], all[WRITE]])
}

fn parse_range(text: &str, kb: KbBase) -> Result<(u64, u64), String> {
    let (lo, hi) = text
        .split_once('-')
        .or_else(|| text.split_once(':'))
        .ok_or_else(|| format!("'{text}' is not a range (expected LOW-HIGH, e.g. 4k-64k)"))?;
    let lo = parse_size(lo, kb)?;
    let hi = parse_size(hi, kb)?;
    // fio takes the two ends in either order.
    Ok((lo.min(hi), lo.max(hi)))
}

fn parse_bssplit_one(text: &str, kb: KbBase) -> Result<Vec<(u64, f64)>, String> {
    let mut entries: Vec<(u64, Option<f64>)> = Vec::new();
    for item in text.split(':').filter(|s| !s.trim().is_empty()) {
        let (size, pct) = match item.split_once('/') {
            Some((s, p)) if !p.trim().is_empty() => (s, Some(parse_percent(p)?)),
            Some((s, _)) => (s, None),
            None => (item, None),
        };
        entries.push((parse_size(size, kb)?, pct));
    }
    if entries.is_empty() {
        return Err(format!(
            "'{text}' has no block sizes (expected e.g. 4k/10:64k/50:32k/40)"
        ));
    }
    let given: f64 = entries.iter().filter_map(|e| e.1).sum();
    if given > 100.0 + 1e-9 {
        return Err(format!(
            "percentages in '{text}' add up to {given}, more than 100"
        ));
    }
    let unspecified = entries.iter().filter(|e| e.1.is_none()).count();
    let share = if unspecified > 0 {
        (100.0 - given) / unspecified as f64
    } else {
        0.0
    };
    let out: Vec<(u64, f64)> = entries
        .into_iter()
        .map(|(s, p)| (s, p.unwrap_or(share)))
        .collect();
    let total: f64 = out.iter().map(|e| e.1).sum();
    if (total - 100.0).abs() > 0.01 {
        return Err(format!(
            "percentages in '{text}' add up to {total}, not 100"
        ));
    }
    Ok(out)
}

/// The longest pattern file fio reads: its first 512 bytes.
const MAX_PATTERN_BYTES: usize = 512;

/// fio's pattern syntax (buffer_pattern, verify_pattern): any sequence of `0xHEX` (an odd
/// digit count gets a leading 0), `"text"` (its bytes as written), `'file'` (the file's
/// first 512 bytes, the name relative to the current directory) and decimal numbers of a
/// 32-bit int (little-endian: the bytes a positive one needs, four for a negative one), as
/// in `0xdeadface"abcd"-12`. Pieces follow one another with nothing between them; a number
/// ends where a `0x` begins (`"abcd"-120xdeadface` is "abcd", -12, 0xdeadface).
fn parse_buffer_pattern(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    let mut out = Vec::new();
    let mut rest = t;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let mut digits = after.bytes().take_while(u8::is_ascii_hexdigit).count();
            // As fio's: in `0xff0x14` the 0 before the second x starts the next number.
            if digits > 1
                && after.as_bytes()[digits - 1] == b'0'
                && matches!(after.as_bytes().get(digits), Some(b'x' | b'X'))
            {
                digits -= 1;
            }
            if digits == 0 {
                return Err(format!("'{t}': 0x without hexadecimal digits"));
            }
            let hex = &after[..digits];
            let padded = if digits % 2 == 1 {
                format!("0{hex}")
            } else {
                hex.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(
                    u8::from_str_radix(&padded[i..i + 2], 16)
                        .map_err(|_| format!("'{t}' is not hexadecimal"))?,
                );
            }
            rest = &after[digits..];
        } else if let Some(after) = rest.strip_prefix('"') {
            let end = after
                .find('"')
                .ok_or_else(|| format!("'{t}': a string without its closing \""))?;
            out.extend_from_slice(&after.as_bytes()[..end]);
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix('\'') {
            let end = after
                .find('\'')
                .ok_or_else(|| format!("'{t}': a file name without its closing '"))?;
            let name = &after[..end];
            let mut bytes = std::fs::read(name)
                .map_err(|e| format!("cannot read the pattern file '{name}': {e}"))?;
            // fio's MAX_PATTERN_SIZE: a longer file gives its first 512 bytes.
            bytes.truncate(MAX_PATTERN_BYTES);
            out.extend_from_slice(&bytes);
            rest = &after[end + 1..];
        } else if rest.starts_with('-') || rest.starts_with(|c: char| c.is_ascii_digit()) {
            // As fio's: a decimal number ends where the next `0x` starts (`-120xdeadface` is
            // -12 and then 0xdeadface), wherever in the rest that is.
            let before_hex = rest
                .to_ascii_lowercase()
                .find("0x")
                .filter(|at| *at > 0)
                .unwrap_or(rest.len());
            let len = 1 + rest[1..before_hex]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let number = &rest[..len];
            let v: i32 = number.parse().map_err(|_| {
                format!("'{number}' in '{t}' is not a number fio takes (a 32-bit int)")
            })?;
            let bytes = v.to_le_bytes();
            let used = if v < 0 {
                4
            } else {
                4 - (v.leading_zeros() as usize / 8).min(3)
            };
            out.extend_from_slice(&bytes[..used]);
            rest = &rest[len..];
        } else {
            return Err(format!(
                "'{t}' is not a pattern (expected 0xHEX, \"text\" or a decimal number, in any sequence)"
            ));
        }
    }
    if out.is_empty() {
        return Err("empty pattern".into());
    }
    Ok(out)
}

fn parse_ss(text: &str) -> Result<SteadyState, String> {
    let (kind, limit) = text.split_once(':').ok_or_else(|| {
        format!("'{text}' is not a steady-state spec (expected e.g. iops:10% or bw_slope:0.1%)")
    })?;
    let (metric, slope) = match kind.trim().to_ascii_lowercase().as_str() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        "lat" => (SteadyMetric::Lat, false),
        "lat_slope" => (SteadyMetric::Lat, true),
        other => {
            return Err(format!(
                "'{other}' is not a steady-state metric (accepted: iops, iops_slope, bw, bw_slope, lat, lat_slope)"
            ))
        }
    };
    let limit = limit.trim();
    let percent = limit.ends_with('%');
    let number: f64 = limit
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{limit}' is not a number"))?;
    if number < 0.0 {
        return Err(format!("'{limit}' is negative"));
    }
    Ok(SteadyState {
        metric,
        slope,
        limit: if percent { number / 100.0 } else { number },
        percent,
    })
}

fn log_request(key: &str, value: Option<&str>) -> Result<Option<LogRequest>, ApplyError> {
    match value.map(str::trim) {
        // Named after the job, whose name a [global] section does not know yet.
        None | Some("") => Ok(Some(LogRequest {
            prefix: String::new(),
        })),
        Some(v) => {
            if v.contains('/') && v.ends_with('/') {
                return Err(bad(
                    key,
                    format!("'{v}' names a directory, expected a file-name prefix"),
                ));
            }
            Ok(Some(LogRequest {
                prefix: v.to_string(),
            }))
        }
    }
}

impl JobOptions {
    /// Applies one `key[=value]`. Unknown keys give [`ApplyError::Unsupported`].
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<Applied, ApplyError> {
        // The table says whether the option exists and which part of the job it sets.
        let Some(declared) = crate::table::find(key) else {
            return Err(ApplyError::Unsupported);
        };
        if let Some(v) = value {
            declared.check_range(v).map_err(|e| bad(key, e))?;
        }
        match declared.part {
            Part::Job => {}
            Part::Coordination => self.coordination.apply(key, value)?,
            Part::Behaviour => self.behaviour.apply(key, value)?,
            Part::Zones => self.zones.apply(key, value, self.kb_base)?,
            Part::ErrorPolicy => self.error_policy.apply(key, value)?,
            Part::Priority => self.priorities.apply(key, value, self.kb_base)?,
            Part::BufferShape => self.buffer_shape.apply(key, value, self.kb_base)?,
        }
        if declared.part != Part::Job {
            return Ok(Applied::Set);
        }
        for group in [
            Self::apply_job_and_files,
            Self::apply_io_pattern,
            Self::apply_timing,
            Self::apply_data_and_logs,
        ] {
            if let Some(applied) = group(self, key, value)? {
                return Ok(applied);
            }
        }
        // Declared in the table with no parser here: the table's unit test finds it.
        Err(ApplyError::Unsupported)
    }

    /// The job itself: names, files and sizes, clones, the engines' own options (cpuio,
    /// exec, nbd), grouping, loops, offsets, kb_base.
    fn apply_job_and_files(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Result<Option<Applied>, ApplyError> {
        let kb = self.kb_base;
        let size = |v: &str| parse_size(v, kb);
        match key {
            "name" => self.name = need(key, value)?.to_string(),
            "description" => self.description = value.map(str::to_string),
            "filename" => {
                let v = need(key, value)?;
                if v.trim().is_empty() {
                    return Err(bad(key, "empty file name"));
                }
                self.filename = Some(v.to_string());
            }
            "directory" => self.directory = Some(need(key, value)?.to_string()),
            "size" => {
                let v = need(key, value)?;
                self.size = Some(if v.trim().ends_with('%') {
                    SizeSpec::Percent(parse_percent(v).map_err(|e| bad(key, e))?)
                } else {
                    SizeSpec::Bytes(size(v).map_err(|e| bad(key, e))?)
                });
            }
            "io_size" | "io_limit" => {
                self.io_size = Some(size(need(key, value)?).map_err(|e| bad(key, e))?)
            }
            "filesize" => {
                let v = need(key, value)?;
                self.filesize = Some(if v.contains('-') || v.contains(':') {
                    parse_range(v, kb).map_err(|e| bad(key, e))?
                } else {
                    let s = size(v).map_err(|e| bad(key, e))?;
                    (s, s)
                });
            }
            "nrfiles" => {
                // The table's range keeps it within u32.
                self.nrfiles = parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32;
            }
            "numjobs" => {
                self.numjobs = parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32;
            }
            "filename_format" => {
                let v = need(key, value)?.trim();
                if v.is_empty() {
                    return Err(bad(
                        key,
                        "empty format (e.g. filename_format=$jobname.$jobnum.$filenum)",
                    ));
                }
                self.filename_format = Some(v.to_string());
            }
            "number_ios" => {
                let n = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
                self.number_ios = if n == 0 { None } else { Some(n) };
            }
            "random_distribution" => {
                let d =
                    RandomDistribution::parse(need(key, value)?, kb).map_err(|e| bad(key, e))?;
                self.random_distribution = if d.iter().all(RandomDistribution::is_uniform) {
                    None
                } else {
                    Some(d)
                };
            }
            "cpuload" => {
                let n = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
                self.cpuload = Some(n as u32);
            }
            "cpuchunks" => {
                let n = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
                if n == 0 {
                    return Err(bad(key, "0 (expected a cycle of 1 microsecond or more)"));
                }
                self.cpuchunks_us = n;
            }
            "cpumode" => {
                self.cpumode_qsort = one_of(key, value, &[("noop", false), ("qsort", true)])?
            }
            "exit_on_io_done" => self.exit_on_io_done = flag(key, value)?,
            "program" => {
                let v = need(key, value)?.trim();
                if v.is_empty() {
                    return Err(bad(
                        key,
                        "empty (expected the program to run, e.g. program=/bin/sleep)",
                    ));
                }
                self.program = Some(v.to_string());
            }
            "arguments" => self.arguments = value.map(str::to_string),
            "uri" => {
                let v = need(key, value)?.trim();
                if v.is_empty() {
                    return Err(bad(
                        key,
                        "empty (expected an NBD URI, e.g. uri=nbd+unix:///?socket=/tmp/sock)",
                    ));
                }
                self.uri = Some(v.to_string());
            }
            "grace_time" => {
                self.grace_time =
                    parse_time(need(key, value)?, TimeUnit::Seconds).map_err(|e| bad(key, e))?
            }
            "std_redirect" => self.std_redirect = flag(key, value)?,
            "random_sequence_stride" => self.random_sequence_stride = flag(key, value)?,
            "rw_sequencer" => {
                self.rw_sequencer = one_of(
                    key,
                    value,
                    &[
                        ("sequential", RwSequencer::Sequential),
                        ("identical", RwSequencer::Identical),
                    ],
                )?
            }
            "group_reporting" => self.group_reporting = flag(key, value)?,
            "unified_rw_reporting" => {
                use UnifiedReporting::{Both, Mixed, Split};
                self.unified_rw_reporting = one_of(
                    key,
                    value,
                    &[
                        ("none", Split),
                        ("0", Split),
                        ("mixed", Mixed),
                        ("1", Mixed),
                        ("both", Both),
                        ("2", Both),
                    ],
                )?
            }
            "stonewall" | "wait_for_previous" => self.stonewall = flag(key, value)?,
            "new_group" => self.new_group = flag(key, value)?,
            "loops" => {
                self.loops = parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32;
            }
            "offset" | "offset_increment" => {
                let v = need(key, value)?;
                let at = if v.trim().ends_with('%') {
                    SizeSpec::Percent(parse_percent(v).map_err(|e| bad(key, e))?)
                } else {
                    SizeSpec::Bytes(size(v).map_err(|e| bad(key, e))?)
                };
                if key == "offset" {
                    self.offset = at;
                } else {
                    self.offset_increment = at;
                }
            }
            "unlink" => self.unlink = Some(flag(key, value)?),
            "kb_base" => {
                self.kb_base = match need(key, value)?.trim() {
                    "1024" => KbBase::Compat1024,
                    "1000" => KbBase::Si1000,
                    other => {
                        return Err(bad(
                            key,
                            format!("'{other}' is not accepted (expected 1000 or 1024)"),
                        ))
                    }
                }
            }
            _ => return Ok(None),
        }
        Ok(Some(Applied::Set))
    }

    /// What each I/O is: the pattern and mix, block sizes, the engine and its depth, direct
    /// or buffered, syncs, preallocation, randomness.
    fn apply_io_pattern(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Result<Option<Applied>, ApplyError> {
        let kb = self.kb_base;
        let size = |v: &str| parse_size(v, kb);
        match key {
            "rw" | "readwrite" => {
                let v = need(key, value)?.trim().to_ascii_lowercase();
                let (mode, modifier) = match v.split_once(':') {
                    Some((m, x)) => (m.to_string(), Some(x.to_string())),
                    None => (v.clone(), None),
                };
                let (pattern, direction) = match mode.as_str() {
                    "read" => (Pattern::Sequential, Direction::Read),
                    "write" => (Pattern::Sequential, Direction::Write),
                    "rw" | "readwrite" => (Pattern::Sequential, Direction::Mixed),
                    "randread" => (Pattern::Random, Direction::Read),
                    "randwrite" => (Pattern::Random, Direction::Write),
                    "randrw" => (Pattern::Random, Direction::Mixed),
                    "trim" => (Pattern::Sequential, Direction::Trim),
                    "randtrim" => (Pattern::Random, Direction::Trim),
                    "trimwrite" => (Pattern::Sequential, Direction::TrimWrite),
                    "randtrimwrite" => (Pattern::Random, Direction::TrimWrite),
                    other => {
                        return Err(bad(key, format!("'{other}' is not a mode (accepted: read, write, rw, readwrite, randread, randwrite, randrw, trim, randtrim, trimwrite, randtrimwrite)")))
                    }
                };
                self.rw = ReadWrite { pattern, direction };
                self.offset_modifier = match modifier {
                    Some(m) => OffsetModifier::parse(&m, pattern == Pattern::Random, kb)
                        .map_err(|e| bad(key, e))?,
                    None => OffsetModifier::default(),
                };
            }
            "rwmixread" => {
                self.rwmixread = parse_percent(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "rwmixwrite" => {
                self.rwmixread =
                    100.0 - parse_percent(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "bs" | "blocksize" => {
                let v = need(key, value)?;
                if v.contains('-') {
                    let r = per_direction(key, v, [(0, 0); 3], |p| parse_range(p, kb))?;
                    self.bsrange = Some(read_write_only(key, r)?);
                } else {
                    self.bs = per_direction(key, v, self.bs, size)?;
                    if self.bs.contains(&0) {
                        return Err(bad(
                            key,
                            "a block size of 0 (expected at least 1 byte, usually 512 or more)",
                        ));
                    }
                }
            }
            "bsrange" | "blocksize_range" => {
                let v = need(key, value)?;
                let r = per_direction(key, v, [(0, 0); 3], |p| parse_range(p, kb))?;
                self.bsrange = Some(read_write_only(key, r)?);
            }
            "bssplit" => {
                let v = need(key, value)?;
                let parts: Vec<&str> = v.split(',').collect();
                let first = parse_bssplit_one(parts[0], kb).map_err(|e| bad(key, e))?;
                let second = match parts.get(1) {
                    Some(p) if !p.trim().is_empty() => {
                        parse_bssplit_one(p, kb).map_err(|e| bad(key, e))?
                    }
                    _ => first.clone(),
                };
                if parts.get(2).is_some_and(|p| !p.trim().is_empty()) {
                    let third = parse_bssplit_one(parts[2], kb).map_err(|e| bad(key, e))?;
                    if third != second {
                        return Err(bad(key, "a trim split (third) that differs from the write split is not supported by sinkrate (trims use the write split)"));
                    }
                }
                if parts.len() > 3 {
                    return Err(bad(
                        key,
                        format!(
                            "'{v}' has more than three comma-separated splits (read,write,trim)"
                        ),
                    ));
                }
                self.bssplit = Some([first, second]);
            }
            "blockalign" | "ba" => {
                let all = per_direction(key, need(key, value)?, [0; 3], size)?;
                self.blockalign = Some(read_write_only(key, all)?);
            }
            "ioengine" => return self.apply_engine(need(key, value)?).map(Some),
            "iodepth" => {
                self.iodepth = parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32;
            }
            "iodepth_batch" | "iodepth_batch_submit" => {
                self.iodepth_batch_submit = parse_int(need(key, value)?)
                    .map_err(|e| bad(key, e))?
                    .max(1) as u32
            }
            "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
                self.iodepth_batch_complete_min =
                    parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32
            }
            "iodepth_batch_complete_max" => {
                self.iodepth_batch_complete_max =
                    parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32
            }
            "direct" => self.direct = flag(key, value)?,
            "buffered" => self.direct = !flag(key, value)?,
            "sync" => {
                self.sync = match value.map(|v| v.trim().to_ascii_lowercase()) {
                    None => SyncMode::Sync,
                    Some(v) => match v.as_str() {
                        "1" | "sync" | "true" => SyncMode::Sync,
                        "0" | "none" | "false" => SyncMode::None,
                        "dsync" => SyncMode::Dsync,
                        other => {
                            return Err(bad(
                                key,
                                format!(
                                "'{other}' is not accepted (expected none, sync, dsync, 0 or 1)"
                            ),
                            ))
                        }
                    },
                }
            }
            "fsync" => self.fsync = parse_int(need(key, value)?).map_err(|e| bad(key, e))?,
            "fdatasync" => {
                self.fdatasync = parse_int(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "sync_file_range" => {
                self.sync_file_range =
                    Some(SyncFileRange::parse(need(key, value)?).map_err(|e| bad(key, e))?)
            }
            "end_fsync" => self.end_fsync = flag(key, value)?,
            "fsync_on_close" => self.fsync_on_close = flag(key, value)?,
            "fallocate" => {
                self.fallocate = match need(key, value)?.trim().to_ascii_lowercase().as_str() {
                    "none" | "0" => Fallocate::None,
                    "native" => Fallocate::Native,
                    "posix" | "1" => Fallocate::Posix,
                    "keep" => Fallocate::Keep,
                    "truncate" => Fallocate::Truncate,
                    other => {
                        return Err(bad(
                            key,
                            format!(
                        "'{other}' is not accepted (expected none, native, posix, keep, truncate)"
                    ),
                        ))
                    }
                }
            }
            "pre_read" => self.pre_read = flag(key, value)?,
            "invalidate" => self.invalidate = flag(key, value)?,
            "overwrite" => self.overwrite = flag(key, value)?,
            "norandommap" => self.norandommap = flag(key, value)?,
            "randseed" => self.randseed = parse_int(need(key, value)?).map_err(|e| bad(key, e))?,
            "randrepeat" => self.randrepeat = flag(key, value)?,
            _ => return Ok(None),
        }
        Ok(Some(Applied::Set))
    }

    /// When I/O happens: runtime and ramp, start delay, rates, think time, the latency
    /// target, steady state.
    fn apply_timing(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Result<Option<Applied>, ApplyError> {
        let kb = self.kb_base;
        let size = |v: &str| parse_size(v, kb);
        let secs = |v: &str| parse_time(v, TimeUnit::Seconds);
        let usecs = |v: &str| parse_time(v, TimeUnit::Microseconds);
        match key {
            "runtime" | "timeout" => {
                let d = secs(need(key, value)?).map_err(|e| bad(key, e))?;
                self.runtime = if d.is_zero() { None } else { Some(d) };
            }
            "time_based" => self.time_based = flag(key, value)?,
            "ramp_time" => self.ramp_time = secs(need(key, value)?).map_err(|e| bad(key, e))?,
            "startdelay" => {
                let v = need(key, value)?;
                if v.contains('-') {
                    return Err(bad(
                        key,
                        format!("a range '{v}' is not supported by sinkrate (give one delay)"),
                    ));
                }
                self.startdelay = secs(v).map_err(|e| bad(key, e))?;
            }
            "rate" => self.rate = per_direction(key, need(key, value)?, self.rate, size)?,
            "rate_iops" => {
                self.rate_iops = per_direction(key, need(key, value)?, self.rate_iops, parse_int)?
            }
            "rate_min" | "ratemin" => {
                self.rate_min = per_direction(key, need(key, value)?, self.rate_min, size)?
            }
            "rate_iops_min" => {
                self.rate_iops_min =
                    per_direction(key, need(key, value)?, self.rate_iops_min, parse_int)?
            }
            "rate_cycle" | "ratecycle" => {
                self.rate_cycle_ms = parse_int(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "rate_process" => {
                self.rate_process = match need(key, value)?.trim().to_ascii_lowercase().as_str() {
                    "linear" => RateProcess::Linear,
                    "poisson" => RateProcess::Poisson,
                    other => {
                        return Err(bad(
                            key,
                            format!("'{other}' is not accepted (expected linear or poisson)"),
                        ))
                    }
                }
            }
            "thinktime" => self.thinktime = usecs(need(key, value)?).map_err(|e| bad(key, e))?,
            "thinktime_spin" => {
                self.thinktime_spin = usecs(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "thinktime_blocks" => {
                self.thinktime_blocks = Some(
                    parse_int(need(key, value)?)
                        .map_err(|e| bad(key, e))?
                        .max(1),
                )
            }
            "thinktime_iotime" => {
                self.thinktime_iotime = secs(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "thinktime_blocks_type" => {
                self.thinktime_blocks_type =
                    match need(key, value)?.trim().to_ascii_lowercase().as_str() {
                        "complete" => ThinktimeBlocksType::Complete,
                        "issue" => ThinktimeBlocksType::Issue,
                        other => {
                            return Err(bad(
                                key,
                                format!("'{other}' is not accepted (expected complete or issue)"),
                            ))
                        }
                    }
            }
            "max_latency" => {
                let d = usecs(need(key, value)?).map_err(|e| bad(key, e))?;
                self.max_latency = if d.is_zero() { None } else { Some(d) };
            }
            "latency_target" => {
                let d = usecs(need(key, value)?).map_err(|e| bad(key, e))?;
                self.latency_target = if d.is_zero() { None } else { Some(d) };
            }
            "latency_window" => {
                self.latency_window = usecs(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "latency_percentile" => {
                self.latency_percentile =
                    parse_percent(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "ss" | "steadystate" => {
                self.ss = Some(parse_ss(need(key, value)?).map_err(|e| bad(key, e))?)
            }
            "ss_dur" | "steadystate_duration" => {
                self.ss_dur = Some(secs(need(key, value)?).map_err(|e| bad(key, e))?);
                // Given without ss=, the window judges fio's default metric (the table's).
                if self.ss.is_none() {
                    let default = crate::table::find("ss").map_or("", |o| o.default);
                    self.ss = Some(parse_ss(default).map_err(|e| bad("ss", e))?);
                }
            }
            "ss_ramp" | "steadystate_ramp_time" => {
                self.ss_ramp = secs(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "ss_interval" | "steadystate_check_interval" => {
                let v = secs(need(key, value)?).map_err(|e| bad(key, e))?;
                if v.is_zero() {
                    return Err(bad(key, "0 (expected an interval such as 1s or 10s)"));
                }
                self.ss_interval = v;
            }
            _ => return Ok(None),
        }
        Ok(Some(Applied::Set))
    }

    /// What is written and recorded: buffer contents, verify, the logs, the percentiles.
    fn apply_data_and_logs(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Result<Option<Applied>, ApplyError> {
        let kb = self.kb_base;
        match key {
            "zero_buffers" => self.zero_buffers = flag(key, value)?,
            "refill_buffers" => self.refill_buffers = flag(key, value)?,
            "scramble_buffers" => self.scramble_buffers = flag(key, value)?,
            "buffer_pattern" => {
                self.buffer_pattern =
                    Some(parse_buffer_pattern(need(key, value)?).map_err(|e| bad(key, e))?)
            }
            "verify" => {
                self.verify = VerifyMethod::parse(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "do_verify" => self.do_verify = flag(key, value)?,
            "verify_backlog" => {
                self.verify_backlog = parse_int(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "verify_fatal" => self.verify_fatal = flag(key, value)?,
            "verify_dump" => self.verify_dump = flag(key, value)?,
            "verify_state_save" => self.verify_state_save = flag(key, value)?,
            "verify_state_load" => self.verify_state_load = flag(key, value)?,
            "serialize_overlap" | "serialise_overlap" => self.serialize_overlap = flag(key, value)?,
            "experimental_verify" => {
                if flag(key, value)? {
                    return Ok(Some(Applied::NoEffect(
                        "sinkrate reads back the blocks its record of the writes names, which are the blocks fio's replay of the offsets reads",
                    )));
                }
            }
            "verify_pattern" => {
                self.verify_pattern =
                    Some(parse_buffer_pattern(need(key, value)?).map_err(|e| bad(key, e))?);
                // As in fio: a pattern alone asks for the pattern to be verified.
                self.verify.get_or_insert(VerifyMethod::Pattern);
            }
            "verify_interval" => {
                self.verify_interval =
                    parse_size(need(key, value)?, kb).map_err(|e| bad(key, e))?;
            }
            "write_bw_log" => self.write_bw_log = log_request(key, value)?,
            "write_lat_log" => self.write_lat_log = log_request(key, value)?,
            "write_iolog" => self.write_iolog = Some(need(key, value)?.to_string()),
            "read_iolog" => self.read_iolog = Some(need(key, value)?.to_string()),
            "fill_device" | "fill_fs" => self.fill_device = flag(key, value)?,
            "replay_no_stall" => self.replay_no_stall = flag(key, value)?,
            "replay_redirect" => self.replay_redirect = Some(need(key, value)?.to_string()),
            "write_iops_log" => self.write_iops_log = log_request(key, value)?,
            "log_avg_msec" => {
                self.log_avg_msec = parse_int(need(key, value)?).map_err(|e| bad(key, e))?
            }
            "log_unix_epoch" => self.log_unix_epoch = flag(key, value)?,
            "log_compression" => {
                self.log_compression = parse_size(need(key, value)?, kb).map_err(|e| bad(key, e))?
            }
            "log_store_compressed" => self.log_store_compressed = flag(key, value)?,
            "log_offset" => self.log_offset = flag(key, value)?,
            "log_max_value" => self.log_max_value = flag(key, value)?,
            "per_job_logs" => self.per_job_logs = flag(key, value)?,
            "write_hist_log" => self.write_hist_log = log_request(key, value)?,
            "log_hist_msec" => {
                self.log_hist_msec = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
            }
            "log_hist_coarseness" => {
                self.log_hist_coarseness =
                    parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u8;
            }
            "clat_percentiles" => self.clat_percentiles = flag(key, value)?,
            "lat_percentiles" => self.lat_percentiles = flag(key, value)?,
            "slat_percentiles" => self.slat_percentiles = flag(key, value)?,
            "percentile_list" => {
                let v = need(key, value)?;
                let mut list = Vec::new();
                for p in v.split(':').filter(|s| !s.trim().is_empty()) {
                    list.push(parse_percent(p).map_err(|e| bad(key, e))?);
                }
                if list.is_empty() || list.len() > 20 {
                    return Err(bad(
                        key,
                        "expected 1 to 20 percentiles separated by ':' (e.g. 50:99:99.9)",
                    ));
                }
                list.sort_by(|a, b| a.total_cmp(b));
                self.percentile_list = list;
            }
            _ => return Ok(None),
        }
        Ok(Some(Applied::Set))
    }

    fn apply_engine(&mut self, value: &str) -> Result<Applied, ApplyError> {
        let name = value.trim().to_ascii_lowercase();
        let Some((engine, notice)) = crate::engines::by_name(&name) else {
            return Err(ApplyError::BadValue(format!(
                "option 'ioengine': engine '{name}' is not supported by sinkrate (supported: {})",
                crate::engines::supported()
            )));
        };
        self.ioengine = engine;
        self.ioengine_requested = notice.as_ref().map(|_| name.clone());
        Ok(match notice {
            Some(n) => Applied::Notice(n),
            None => Applied::Set,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(o: &mut JobOptions, k: &str, v: Option<&str>) -> Result<Applied, ApplyError> {
        o.apply(k, v)
    }

    #[test]
    fn defaults_match_fio() {
        let o = JobOptions::default();
        assert_eq!(o.bs, [4096; 3]);
        assert_eq!(o.ioengine, Engine::Psync);
        assert_eq!(o.iodepth, 1);
        assert_eq!(o.rw.fio_name(), "read");
        assert_eq!(o.rwmixread, 50.0);
        assert!(o.invalidate);
        assert_eq!(o.percentile_list.len(), 17);
    }

    #[test]
    fn typed_values() {
        let mut o = JobOptions::default();
        apply(&mut o, "bs", Some("4k,8k")).expect("bs");
        // As fio: the directions after the last value given take it (trims use 8k).
        assert_eq!(o.bs, [4096, 8192, 8192]);
        apply(&mut o, "bs", Some(",64k")).expect("bs");
        assert_eq!(o.bs, [4096, 65536, 65536]);
        apply(&mut o, "bs", Some("4k,8k,16k")).expect("bs");
        assert_eq!(o.bs, [4096, 8192, 16384]);
        apply(&mut o, "bs", Some("1m")).expect("bs");
        assert_eq!(o.bs, [1 << 20; 3]);
        apply(&mut o, "bsrange", Some("1k-4k")).expect("bsrange");
        assert_eq!(o.bsrange, Some([(1024, 4096), (1024, 4096)]));
        // As fio's: the ends in either order, and after a number what is not a unit is
        // not read (fio's own t0023 job gives this bssplit-like text to bsrange).
        apply(&mut o, "bsrange", Some("8k-4k")).expect("bsrange");
        assert_eq!(o.bsrange, Some([(4096, 8192), (4096, 8192)]));
        apply(&mut o, "bsrange", Some("512/25:1k:25:2k:25:4k/25")).expect("bsrange");
        assert_eq!(o.bsrange, Some([(512, 1024), (512, 1024)]));
        apply(&mut o, "bssplit", Some("4k/10:64k/50:32k/40")).expect("bssplit");
        assert_eq!(o.bssplit.as_ref().map(|b| b[0].len()), Some(3));
        apply(&mut o, "bssplit", Some("4k/50:8k/,16k")).expect("bssplit");
        assert_eq!(o.bssplit.as_ref().map(|b| b[0][1].1), Some(50.0));
        assert_eq!(o.bssplit.as_ref().map(|b| b[1][0]), Some((16384, 100.0)));
        apply(&mut o, "rw", Some("randrw")).expect("rw");
        assert_eq!(o.rw.fio_name(), "randrw");
        apply(&mut o, "rwmixwrite", Some("30")).expect("mix");
        assert_eq!(o.rwmixread, 70.0);
        apply(&mut o, "runtime", Some("2m")).expect("runtime");
        assert_eq!(o.runtime, Some(Duration::from_secs(120)));
        apply(&mut o, "thinktime", Some("66")).expect("thinktime");
        assert_eq!(o.thinktime, Duration::from_micros(66));
        // fio's unit for thinktime_iotime is the second.
        apply(&mut o, "thinktime_iotime", Some("9")).expect("thinktime_iotime");
        assert_eq!(o.thinktime_iotime, Duration::from_secs(9));
        apply(&mut o, "thinktime_iotime", Some("300ms")).expect("thinktime_iotime");
        assert_eq!(o.thinktime_iotime, Duration::from_millis(300));
        assert_eq!(o.thinktime_blocks, None);
        apply(&mut o, "thinktime_blocks", Some("0")).expect("thinktime_blocks");
        assert_eq!(o.thinktime_blocks, Some(1));
        apply(&mut o, "rate_iops", Some("15")).expect("rate_iops");
        assert_eq!(o.rate_iops, [15; 3]);
        apply(&mut o, "rate", Some(",10m")).expect("rate");
        assert_eq!(o.rate, [0, 10 << 20, 10 << 20]);
        apply(&mut o, "rate", Some(",,1m")).expect("rate");
        assert_eq!(o.rate, [0, 10 << 20, 1 << 20]);
        for (key, value) in [
            ("bsrange", "1k-4k,1k-4k,1k-8k"),
            ("blockalign", "4k,4k,8k"),
            ("bssplit", "4k/100,4k/100,8k/100"),
        ] {
            match apply(&mut o, key, Some(value)) {
                Err(ApplyError::BadValue(e)) => assert!(e.contains("trim"), "{e}"),
                other => panic!("{key}={value}: {other:?}"),
            }
        }
        for (mode, name) in [
            ("trim", "trim"),
            ("randtrim", "randtrim"),
            ("trimwrite", "trimwrite"),
            ("randtrimwrite", "randtrimwrite"),
        ] {
            apply(&mut o, "rw", Some(mode)).expect("rw");
            assert_eq!(o.rw.fio_name(), name);
            assert!(o.rw.trims() && o.rw.modifies() && !o.rw.reads());
            assert_eq!(o.rw.writes(), mode.ends_with("write"));
        }
        apply(&mut o, "time_based", None).expect("flag");
        assert!(o.time_based);
        apply(&mut o, "direct", Some("0")).expect("flag");
        assert!(!o.direct);
        apply(&mut o, "buffered", Some("0")).expect("flag");
        assert!(o.direct);
        apply(&mut o, "sync", Some("dsync")).expect("sync");
        assert_eq!(o.sync, SyncMode::Dsync);
        apply(&mut o, "size", Some("50%")).expect("size");
        assert_eq!(o.size, Some(SizeSpec::Percent(50.0)));
        apply(&mut o, "buffer_pattern", Some("0xdeadbeef")).expect("pattern");
        assert_eq!(o.buffer_pattern, Some(vec![0xde, 0xad, 0xbe, 0xef]));
        // fio's bytes for each form (fio 3.33 writes these).
        for (text, bytes) in [
            ("0x123", &[0x01, 0x23][..]),
            ("\"abcd\"", b"abcd"),
            ("12", &[0x0c]),
            ("300", &[0x2c, 0x01]),
            ("70000", &[0x70, 0x11, 0x01]),
            ("0", &[0x00]),
            ("-12", &[0xf4, 0xff, 0xff, 0xff]),
            ("0xde\"ab\"12", &[0xde, 0x61, 0x62, 0x0c]),
        ] {
            apply(&mut o, "buffer_pattern", Some(text)).expect(text);
            assert_eq!(o.buffer_pattern.as_deref(), Some(bytes), "{text}");
        }
        for bad in [
            "0x",
            "0xdg",
            "\"ab",
            "4294967295",
            "-2147483649",
            "'file'",
            "zz",
        ] {
            assert!(apply(&mut o, "buffer_pattern", Some(bad)).is_err(), "{bad}");
        }
        apply(&mut o, "buffer_pattern", Some("0x5")).expect("one hex digit");
        assert_eq!(o.buffer_pattern, Some(vec![5]));
        // Found by fuzzing: non-ASCII after 0x.
        assert!(apply(&mut o, "buffer_pattern", Some("0x\u{29a}")).is_err());
        // fio reads a file named in single quotes; sinkrate refuses it (it was taken as text).
        assert!(apply(&mut o, "buffer_pattern", Some("'ab'")).is_err());
        apply(&mut o, "ss", Some("iops_slope:0.1%")).expect("ss");
        assert!(o
            .ss
            .is_some_and(|s| s.slope && (s.limit - 0.001).abs() < 1e-12));
        apply(&mut o, "percentile_list", Some("99.9:50")).expect("pl");
        assert_eq!(o.percentile_list, vec![50.0, 99.9]);
        apply(&mut o, "kb_base", Some("1000")).expect("kb");
        apply(&mut o, "size", Some("1m")).expect("size");
        assert_eq!(o.size, Some(SizeSpec::Bytes(1_000_000)));
        o.name = "cam".into();
        apply(&mut o, "write_bw_log", None).expect("log");
        assert_eq!(
            o.write_bw_log.as_ref().map(|l| l.prefix_for(&o.name)),
            Some("cam")
        );
    }

    #[test]
    fn engines_and_notices() {
        let mut o = JobOptions::default();
        assert_eq!(
            apply(&mut o, "ioengine", Some("io_uring")),
            Ok(Applied::Set)
        );
        assert!(matches!(
            apply(&mut o, "ioengine", Some("libaio")),
            Ok(Applied::Notice(_))
        ));
        assert_eq!(o.ioengine, Engine::IoUring);
        match apply(&mut o, "ioengine", Some("rbd")) {
            Err(ApplyError::BadValue(m)) => {
                assert!(m.contains("engine 'rbd' is not supported by sinkrate"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_values_say_what_is_accepted() {
        let mut o = JobOptions::default();
        let cases = [
            ("rwmixread", Some("150")),
            ("rw", Some("sideways")),
            ("rw", Some("randread:x")),
            ("rw", Some("write:-")),
            ("random_distribution", Some("zipf:1")),
            ("rw_sequencer", Some("backwards")),
            ("bs", Some("0")),
            ("bs", Some("4q")),
            ("bsrange", Some("8k")),
            ("bssplit", Some("4k/60:8k/60")),
            ("iodepth", Some("0")),
            ("numjobs", Some("0")),
            ("runtime", Some("ten")),
            ("fallocate", Some("maybe")),
            ("sync", Some("often")),
            ("kb_base", Some("512")),
            ("size", None),
            ("direct", Some("2")),
            ("buffer_pattern", Some("zz")),
            ("ss", Some("latency:1")),
            ("loops", Some("0")),
        ];
        for (k, v) in cases {
            match apply(&mut o, k, v) {
                Err(ApplyError::BadValue(m)) => assert!(m.contains(k), "{k}: {m}"),
                other => panic!("{k}={v:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_and_no_effect_options() {
        let mut o = JobOptions::default();
        assert_eq!(
            apply(&mut o, "xyz", Some("1")),
            Err(ApplyError::Unsupported)
        );
        assert_eq!(
            apply(&mut o, "verify_async", Some("2")),
            Err(ApplyError::Unsupported)
        );
        assert_eq!(
            apply(&mut o, "continue_on_error", Some("1")),
            Ok(Applied::Set)
        );
        assert_eq!(apply(&mut o, "gtod_reduce", Some("1")), Ok(Applied::Set));
        assert!(o.behaviour.disable_clat);
        assert!(supported_names().contains(&"bssplit"));
    }
}
