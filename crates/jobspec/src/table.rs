//! One declaration per fio option sinkrate takes: its name and aliases, which part of the
//! job options it sets, the kind of value, fio's default and a line of help. The table is
//! what the parser asks whether an option exists and where it goes, what `--cmdhelp` prints
//! and what an unknown option's suggestions are drawn from, as fio's `options.c` is for fio.

use std::fmt::Write as _;

/// The part of [`crate::JobOptions`] an option sets (each part parses its own options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The job's own fields (`JobOptions::apply`).
    Job,
    Coordination,
    Behaviour,
    BufferShape,
    Zones,
    ErrorPolicy,
    Priority,
}

/// What an option's value is, as `--cmdhelp` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A flag: given alone, or as 0/1.
    Bool,
    Int,
    /// Bytes, with fio's suffixes (`4k`, `1m`; `kb_base` decides 1000 or 1024).
    Size,
    /// Per direction: `read,write,trim` (one value for all).
    SizePerDirection,
    /// A time; the unit when none is given.
    Time(&'static str),
    Percent,
    Text,
    /// One of these values, each with what it means.
    Choice(&'static [(&'static str, &'static str)]),
}

impl Kind {
    fn describe(self) -> String {
        match self {
            Kind::Bool => "boolean (0 or 1; alone means 1)".into(),
            Kind::Int => "integer".into(),
            Kind::Size => "size in bytes (fio's suffixes: 4k, 1m, 2g)".into(),
            Kind::SizePerDirection => "size in bytes, per direction: read[,write[,trim]]".into(),
            Kind::Time(unit) => format!("time (without a unit: {unit})"),
            Kind::Percent => "percentage".into(),
            Kind::Text => "string".into(),
            Kind::Choice(_) => "one of the values below".into(),
        }
    }
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub part: Part,
    pub kind: Kind,
    /// fio's default, as fio's `--cmdhelp` says it; empty when there is none. A job's
    /// defaults are these, applied in the table's order (`JobOptions::default`).
    pub default: &'static str,
    pub help: &'static str,
    /// The whole numbers an integer option takes, inclusive ([`NO_MAX`]: no upper bound);
    /// checked before its parser sees the value (a list's parser checks each of its
    /// values, and fractions, itself). None: the kind's own (a percentage's 0 to
    /// 100, a boolean's 0 and 1) or the parser's.
    pub range: Option<(u64, u64)>,
}

/// No upper bound to a declared range.
pub const NO_MAX: u64 = u64::MAX;

impl Declared {
    /// The same option, taking only `min..=max`.
    const fn range(self, min: u64, max: u64) -> Declared {
        Declared {
            range: Some((min, max)),
            ..self
        }
    }

    /// The values the option takes, as `--cmdhelp` shows them: the declared range, or the
    /// kind's own (a percentage 0 to 100, a boolean 0 or 1).
    pub fn effective_range(&self) -> Option<(u64, u64)> {
        self.range.or(match self.kind {
            Kind::Percent => Some((0, 100)),
            Kind::Bool => Some((0, 1)),
            _ => None,
        })
    }

    /// Refuses a whole number outside the declared range, in one wording for every
    /// option. A value that is not a plain number is left to the option's parser.
    pub fn check_range(&self, value: &str) -> Result<(), String> {
        let Some((min, max)) = self.range else {
            return Ok(());
        };
        // The default is always taken: fio's defaults may lie outside the range its parser
        // checks (log_compression's 0, off), because fio never parses them.
        if value.trim() == self.default {
            return Ok(());
        }
        match sinkrate_units::fio::parse_int(value) {
            Ok(n) if n < min || n > max => Err(format!(
                "{n} is out of range (expected {})",
                describe_range(min, max)
            )),
            _ => Ok(()),
        }
    }
}

fn describe_range(min: u64, max: u64) -> String {
    if max == NO_MAX {
        format!("{min} or more")
    } else {
        format!("{min} to {max}")
    }
}

const fn o(
    name: &'static str,
    aliases: &'static [&'static str],
    part: Part,
    kind: Kind,
    default: &'static str,
    help: &'static str,
) -> Declared {
    Declared {
        name,
        aliases,
        part,
        kind,
        default,
        help,
        range: None,
    }
}

use Kind::*;
use Part::*;

const RW: &[(&str, &str)] = &[
    ("read", "sequential reads"),
    ("write", "sequential writes"),
    ("trim", "sequential trims (discards) of a block device"),
    ("randread", "random reads"),
    ("randwrite", "random writes"),
    ("randtrim", "random trims"),
    ("rw", "sequential reads and writes, mixed by rwmixread"),
    ("readwrite", "the same as rw"),
    ("randrw", "random reads and writes, mixed by rwmixread"),
    ("trimwrite", "each block trimmed, then written"),
    ("randtrimwrite", "random blocks trimmed, then written"),
];

const ENGINES: &[(&str, &str)] = &[
    ("psync", "pread/pwrite, one I/O at a time (the default)"),
    ("sync", "read/write after a seek"),
    ("vsync", "readv/writev"),
    ("pvsync", "preadv/pwritev"),
    ("pvsync2", "preadv2/pwritev2"),
    ("io_uring", "Linux io_uring, iodepth I/Os in flight"),
    ("libaio", "run on io_uring (said in the notices)"),
    ("posixaio", "run on io_uring (said in the notices)"),
    ("mmap", "copies into and out of a mapping of the file"),
    ("null", "no I/O: the pipeline alone"),
    ("ftruncate", "each write sets the file's size"),
    ("falloc", "fallocate; trims punch holes"),
    ("filecreate", "creates files, timing each"),
    ("filestat", "stats files, timing each"),
    ("filedelete", "deletes files, timing each"),
    ("dircreate", "creates directories, timing each"),
    ("dirstat", "stats directories, timing each"),
    ("dirdelete", "deletes directories, timing each"),
    ("cpuio", "burns CPU (cpuload) instead of doing I/O"),
    ("exec", "runs a program for the job's runtime"),
    ("nbd", "reads and writes an NBD server's export (uri=)"),
    (
        "page_fault",
        "copies into fresh anonymous memory, faulting each page in",
    ),
];

const SYNC: &[(&str, &str)] = &[
    ("none", "no O_SYNC (the default); also 0"),
    ("sync", "O_SYNC; also 1"),
    ("dsync", "O_DSYNC"),
];

const FALLOCATE: &[(&str, &str)] = &[
    ("native", "fallocate, falling back to nothing (the default)"),
    ("posix", "posix_fallocate"),
    ("keep", "fallocate with FALLOC_FL_KEEP_SIZE"),
    ("truncate", "ftruncate to the size"),
    ("none", "no preallocation; also 0"),
];

/// Every option sinkrate takes, in fio's groups' order.
#[rustfmt::skip]
pub const OPTIONS: &[Declared] = &[
    // The job and its files.
    o("name", &[], Job, Text, "", "Name of the job; a new section in a job file"),
    o("description", &[], Job, Text, "", "Text describing the job"),
    o("filename", &[], Job, Text, "", "File(s) or device(s) to use, separated by ':'"),
    o("filename_format", &[], Job, Text, "$jobname.$jobnum.$filenum", "How files without filename= are named"),
    o("directory", &[], Job, Text, "", "Directory (or ':'-separated directories) the files go in"),
    o("size", &[], Job, Size, "", "Total bytes of I/O per job (or a percentage of a device)"),
    o("io_size", &["io_limit"], Job, Size, "", "Bytes of I/O to do, when not the same as size"),
    o("filesize", &[], Job, Size, "", "Size of each file (a range gives each file its own)"),
    o("nrfiles", &[], Job, Int, "1", "Number of files per job").range(1, 1_000_000),
    o("number_ios", &[], Job, Int, "0", "Stop after this many I/Os (0: no limit)"),
    o("numjobs", &[], Job, Int, "1", "Number of clones of this job").range(1, 4096),
    o("group_reporting", &[], Job, Bool, "0", "Report the jobs of a group together"),
    o("unified_rw_reporting", &[], Job, Choice(&[("none", "reads, writes and trims apart (the default)"), ("mixed", "the directions summed into one, 'mixed'"), ("both", "apart, and summed"), ("0", "none"), ("1", "mixed"), ("2", "both")]), "none", "Report the directions apart, summed, or both"),
    o("stonewall", &["wait_for_previous"], Job, Bool, "0", "Wait for the jobs before this one to finish"),
    o("new_group", &[], Job, Bool, "0", "Start a new reporting group"),
    o("loops", &[], Job, Int, "1", "Number of times to run the job").range(1, u32::MAX as u64),
    o("offset", &[], Job, Size, "0", "Where in the file I/O starts (or a percentage)"),
    o("offset_increment", &[], Job, Size, "0", "How much further each numjobs clone starts"),
    o("unlink", &[], Job, Bool, "0", "Remove the job's files when it is done (kept by default, as fio's, and remembered so that a later run may write into them again; sinkrate's own sessions remove theirs)"),
    o("kb_base", &[], Job, Choice(&[("1024", "4k is 4096, 4KiB is 4000 (the default)"), ("1000", "4k is 4000, 4KiB is 4096")]), "1024", "Whether 'k' means 1000 or 1024"),
    // The I/O pattern.
    o("rw", &["readwrite"], Job, Choice(RW), "read", "Direction and order of the I/O (':N' skips, as fio)"),
    o("rw_sequencer", &[], Job, Choice(&[("sequential", "the next offset follows the last (the default)"), ("identical", "the same offset N times")]), "sequential", "How ':N' after rw= moves the offset"),
    o("rwmixread", &[], Job, Percent, "50", "Share of a mixed workload that reads"),
    o("rwmixwrite", &[], Job, Percent, "50", "Share of a mixed workload that writes"),
    o("bs", &["blocksize"], Job, SizePerDirection, "4096", "Block size of each I/O"),
    o("bsrange", &["blocksize_range"], Job, SizePerDirection, "", "Range of block sizes, as low-high"),
    o("bssplit", &[], Job, Text, "", "Mix of block sizes: size/percent:size/percent"),
    o("blockalign", &["ba"], Job, SizePerDirection, "", "Alignment of random offsets"),
    o("norandommap", &[], Job, Bool, "0", "Random offsets may repeat before every block is visited"),
    o("randseed", &[], Job, Int, "0x89", "Seed of the random generators"),
    o("randrepeat", &[], Job, Bool, "1", "The same random sequence on every run"),
    o("random_distribution", &[], Job, Text, "random", "random, zipf:T, pareto:T, normal:P, zoned:..., zoned_abs:..."),
    o("random_sequence_stride", &[], Job, Bool, "0", "Random offsets stride over the file before repeating"),
    // The engine and its queue.
    o("ioengine", &[], Job, Choice(ENGINES), "psync", "How the job does its I/O"),
    o("iodepth", &[], Job, Int, "1", "I/Os in flight on a queued engine").range(1, 65536),
    o("iodepth_batch_submit", &["iodepth_batch"], Job, Int, "1", "I/Os submitted at once"),
    o("iodepth_batch_complete_min", &["iodepth_batch_complete"], Job, Int, "1", "Completions to wait for at least"),
    o("iodepth_batch_complete_max", &[], Job, Int, "", "Completions to reap at most (the minimum when not given)"),
    o("cpuload", &[], Job, Percent, "", "cpuio: share of a CPU to use").range(1, 100),
    o("cpuchunks", &[], Job, Int, "50000", "cpuio: length of each busy stretch in microseconds"),
    o("cpumode", &[], Job, Choice(&[("noop", "a busy loop (the default)"), ("qsort", "sorting")]), "noop", "cpuio: how the CPU is kept busy"),
    o("exit_on_io_done", &[], Job, Bool, "0", "cpuio: stop when the other jobs' I/O is done"),
    o("program", &[], Job, Text, "", "exec: the program to run"),
    o("arguments", &[], Job, Text, "", "exec: its arguments, split on spaces"),
    o("grace_time", &[], Job, Time("s"), "1", "exec: time between SIGTERM and SIGKILL at the end"),
    o("std_redirect", &[], Job, Bool, "1", "exec: the program's output to JOBNAME.stdout/.stderr"),
    o("uri", &[], Job, Text, "", "nbd: the export, nbd://HOST[:PORT]/NAME or nbd+unix:///NAME?socket=PATH"),
    // Durability and the page cache.
    o("direct", &[], Job, Bool, "0", "O_DIRECT: bypass the page cache"),
    o("buffered", &[], Job, Bool, "1", "The opposite of direct"),
    o("sync", &[], Job, Choice(SYNC), "none", "Open the files O_SYNC or O_DSYNC"),
    o("fsync", &[], Job, Int, "0", "fsync after this many writes"),
    o("fdatasync", &[], Job, Int, "0", "fdatasync after this many writes"),
    o("end_fsync", &[], Job, Bool, "0", "fsync each file at the end of the job"),
    o("fsync_on_close", &[], Job, Bool, "0", "fsync each file when it is closed"),
    o("sync_file_range", &[], Job, Text, "", "sync_file_range flags (wait_before,write,wait_after) and every N writes"),
    o("fallocate", &[], Job, Choice(FALLOCATE), "native", "How files are preallocated"),
    o("pre_read", &[], Job, Bool, "0", "Read the files into the page cache before the job"),
    o("invalidate", &[], Job, Bool, "1", "Drop the files' cached pages before the job"),
    o("overwrite", &[], Job, Bool, "0", "Lay the files out in full before writing them"),
    o("fill_device", &["fill_fs"], Job, Bool, "0", "Write until the storage is full"),
    // Time.
    o("runtime", &["timeout"], Job, Time("s"), "", "Stop the job after this long"),
    o("time_based", &[], Job, Bool, "0", "Run for the whole runtime, starting over as needed"),
    o("ramp_time", &[], Job, Time("s"), "0", "Run this long before measuring"),
    o("startdelay", &[], Job, Time("s"), "0", "Wait this long before starting"),
    // Pacing.
    o("rate", &[], Job, SizePerDirection, "0", "Bandwidth cap per direction, bytes per second"),
    o("rate_iops", &[], Job, SizePerDirection, "0", "IOPS cap per direction"),
    o("rate_min", &["ratemin"], Job, SizePerDirection, "0", "Fail the job below this bandwidth"),
    o("rate_iops_min", &[], Job, SizePerDirection, "0", "Fail the job below this IOPS"),
    o("rate_cycle", &["ratecycle"], Job, Int, "1000", "Window of the rate floors, in ms"),
    o("rate_process", &[], Job, Choice(&[("linear", "evenly spaced I/Os (the default)"), ("poisson", "exponentially spaced I/Os")]), "linear", "How paced I/Os are spaced"),
    o("thinktime", &[], Job, Time("us"), "0", "Pause after each block of I/Os"),
    o("thinktime_spin", &[], Job, Time("us"), "0", "Part of the pause spent spinning"),
    o("thinktime_blocks", &[], Job, Int, "1", "I/Os between pauses"),
    o("thinktime_blocks_type", &[], Job, Choice(&[("complete", "counted as they complete (the default)"), ("issue", "counted as they are issued")]), "complete", "How thinktime_blocks counts"),
    o("thinktime_iotime", &[], Job, Time("s"), "0", "Pause after this long of I/O too"),
    // Latency.
    o("max_latency", &[], Job, Time("us"), "", "Fail the job when an I/O takes longer"),
    o("latency_target", &[], Job, Time("us"), "", "Find the queue depth that keeps latency under this"),
    o("latency_window", &[], Job, Time("us"), "0", "Window over which latency_target is judged"),
    o("latency_percentile", &[], Job, Percent, "100", "Share of I/Os that must meet latency_target"),
    o("clat_percentiles", &[], Job, Bool, "1", "Percentiles of completion latency"),
    o("lat_percentiles", &[], Job, Bool, "0", "Percentiles of total latency"),
    o("slat_percentiles", &[], Job, Bool, "0", "Percentiles of submission latency"),
    o("percentile_list", &[], Job, Text, "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99", "Which percentiles, ':'-separated").range(0, 100),
    o("ss", &["steadystate"], Job, Text, "iops_slope:0.01%", "Stop at steady state: iops, bw, lat (or _slope) and a limit"),
    o("ss_dur", &["steadystate_duration"], Job, Time("s"), "", "Window in which steady state is judged"),
    o("ss_ramp", &["steadystate_ramp_time"], Job, Time("s"), "0", "Time before steady state is judged"),
    o("ss_interval", &["steadystate_check_interval"], Job, Time("s"), "1", "Steady-state sample period"),
    // Buffers.
    o("zero_buffers", &[], Job, Bool, "0", "Write zeros"),
    o("refill_buffers", &[], Job, Bool, "0", "New random data for every write"),
    o("scramble_buffers", &[], Job, Bool, "1", "Vary each write's data cheaply"),
    o("buffer_pattern", &[], Job, Text, "", "Data to write: 0xHEX, \"text\", numbers, 'file', joined"),
    // Verify.
    o("verify", &[], Job, Choice(&[("md5", "an MD5 of each block"), ("crc64", "a crc64 of each block"), ("crc32", "a crc32 of each block"), ("crc32c", "a crc32c of each block"), ("crc32c-intel", "the same"), ("crc16", "a crc16 of each block"), ("crc7", "a crc7 of each block"), ("sha1", "a SHA-1 of each block"), ("sha256", "a SHA-256 of each block"), ("sha512", "a SHA-512 of each block"), ("sha3-224", "a SHA3-224 of each block"), ("sha3-256", "a SHA3-256 of each block"), ("sha3-384", "a SHA3-384 of each block"), ("sha3-512", "a SHA3-512 of each block"), ("xxhash", "an xxhash32 of each block"), ("pattern", "verify_pattern alone"), ("meta", "the header alone"), ("null", "no verification"), ("0", "no verification")]), "", "Check what was written"),
    o("do_verify", &[], Job, Bool, "1", "Read back and check after the writing"),
    o("verify_backlog", &[], Job, Int, "0", "Check every this many written blocks"),
    o("verify_fatal", &[], Job, Bool, "0", "Stop at the first bad block"),
    o("verify_dump", &[], Job, Bool, "0", "Keep a bad block's bytes in NAME.OFFSET.received"),
    o("verify_state_save", &[], Job, Bool, "1", "Save a writing job's state when it ends (--aux-path or the current directory)"),
    o("verify_state_load", &[], Job, Bool, "0", "Verify only what the saved state says was written"),
    o("experimental_verify", &[], Job, Bool, "0", "Verify by replaying the offsets (the same blocks are read back)"),
    o("verify_pattern", &[], Job, Text, "", "Pattern written and checked"),
    o("verify_interval", &[], Job, Int, "", "A header every this many bytes of a block"),
    // Logs and traces.
    o("write_bw_log", &[], Job, Text, "", "Write a bandwidth log with this prefix"),
    o("write_lat_log", &[], Job, Text, "", "Write latency logs with this prefix"),
    o("write_iops_log", &[], Job, Text, "", "Write an IOPS log with this prefix"),
    o("log_avg_msec", &[], Job, Int, "0", "Average the logs over windows of this many ms"),
    o("log_max_value", &[], Job, Bool, "0", "Log the largest value of a window, not the mean"),
    o("log_unix_epoch", &[], Job, Bool, "0", "Log times as Unix milliseconds"),
    o("log_compression", &[], Job, Int, "0", "Compress the logs in chunks of this size (with log_store_compressed, stored so: NAME.log.fz)").range(1024, 512 << 20),
    o("log_store_compressed", &[], Job, Bool, "0", "Keep the logs compressed as fio's .fz files (read them with --inflate-log)"),
    o("log_offset", &[], Job, Bool, "0", "Log each I/O's offset"),
    o("per_job_logs", &[], Job, Bool, "1", "A log file per job"),
    o("write_hist_log", &[], Job, Text, "", "Write latency histogram logs with this prefix"),
    o("log_hist_msec", &[], Job, Int, "0", "Period of the histogram log"),
    o("log_hist_coarseness", &[], Job, Int, "0", "Merge 2^N histogram bins").range(0, 6),
    o("write_iolog", &[], Job, Text, "", "Record the job's I/Os in this iolog"),
    o("read_iolog", &[], Job, Text, "", "Replay the I/Os of this iolog"),
    o("replay_no_stall", &[], Job, Bool, "0", "Replay without the trace's timing"),
    o("replay_redirect", &[], Job, Text, "", "Replay every I/O to this file or device"),
    // Jobs together.
    o("wait_for", &[], Coordination, Text, "", "Start after the named job finished"),
    o("flow", &[], Coordination, Int, "0", "Weight in a flow group").range(0, crate::coordination::FLOW_MAX_WEIGHT),
    o("flow_id", &[], Coordination, Int, "0", "The flow group"),
    o("flow_sleep", &[], Coordination, Time("us"), "0", "Pause when ahead of the flow group"),
    o("exitall", &[], Coordination, Bool, "0", "End the other jobs when this one finishes"),
    o("exit_what", &[], Coordination, Choice(&[("group", "its group (the default)"), ("stonewall", "the jobs up to the next stonewall"), ("all", "every job")]), "group", "Which jobs exitall ends"),
    o("exitall_on_error", &[], Coordination, Bool, "0", "End the other jobs when this one fails"),
    o("serialize_overlap", &["serialise_overlap"], Job, Bool, "0", "An I/O that overlaps a write in flight (or a write one in flight) waits for it"),
    o("io_submit_mode", &[], Coordination, Choice(&[("inline", "the job submits its own I/Os (the default)"), ("offload", "a pool of submitters does")]), "inline", "Who submits a queued engine's I/Os"),
    // How the job runs.
    o("thread", &["threads"], Behaviour, Bool, "1", "Jobs as threads (always, in sinkrate)"),
    o("random_generator", &[], Behaviour, Choice(&[("tausworthe", "fio's default"), ("lfsr", "visits each block once per pass"), ("tausworthe64", "64-bit tausworthe")]), "tausworthe", "Generator of random offsets"),
    o("gtod_reduce", &[], Behaviour, Bool, "0", "Measure only what needs no timestamps"),
    o("disable_lat", &[], Behaviour, Bool, "0", "No total latency"),
    o("disable_clat", &[], Behaviour, Bool, "0", "No completion latency"),
    o("disable_slat", &[], Behaviour, Bool, "0", "No submission latency"),
    o("disable_bw_measurement", &["disable_bw"], Behaviour, Bool, "0", "No bandwidth samples"),
    o("fadvise_hint", &[], Behaviour, Choice(&[("1", "advise the access pattern (the default)"), ("0", "no advice"), ("sequential", "POSIX_FADV_SEQUENTIAL"), ("random", "POSIX_FADV_RANDOM")]), "1", "posix_fadvise for the files"),
    o("create_on_open", &[], Behaviour, Bool, "0", "Create the files when they are opened"),
    o("create_serialize", &[], Behaviour, Bool, "1", "Lay out the jobs' files one job at a time"),
    o("openfiles", &[], Behaviour, Int, "", "Files held open at once (at least the job's file count)"),
    o("iodepth_low", &[], Behaviour, Int, "", "Refill the queue below this depth (at least iodepth)"),
    o("file_service_type", &[], Behaviour, Text, "roundrobin", "Which file takes the next I/O: roundrobin, sequential, random, with :N"),
    o("allrandrepeat", &["allrand_repeatable"], Behaviour, Bool, "0", "Every random generator repeats between runs"),
    o("clocksource", &[], Behaviour, Choice(&[("clock_gettime", "the monotonic clock"), ("cpu", "accepted: sinkrate times with the monotonic clock")]), "clock_gettime", "How time is read"),
    // Buffer contents.
    o("buffer_compress_percentage", &[], BufferShape, Percent, "0", "How far the written data compresses").range(0, 100),
    o("buffer_compress_chunk", &[], BufferShape, Size, "512", "Size of the compressible stretches"),
    o("dedupe_percentage", &[], BufferShape, Percent, "0", "Share of writes that repeat earlier data").range(0, 100),
    o("dedupe_mode", &[], BufferShape, Choice(&[("repeat", "the last unique write again (the default)"), ("working_set", "one of a working set")]), "repeat", "What a deduplicable write repeats"),
    o("dedupe_working_set_percentage", &[], BufferShape, Percent, "5", "Size of the working set").range(0, 100),
    o("dedupe_global", &[], BufferShape, Bool, "0", "Deduplicate across the jobs"),
    // Zones.
    o("zonemode", &[], Zones, Choice(&[("none", "no zones (the default)"), ("strided", "I/O in zones, skipping between them")]), "none", "How I/O moves through zones"),
    o("zonesize", &[], Zones, Size, "", "Bytes of I/O in each zone"),
    o("zonerange", &[], Zones, Size, "", "Size of a zone"),
    o("zoneskip", &[], Zones, Size, "0", "Bytes skipped after each zone"),
    // Errors.
    o("continue_on_error", &[], ErrorPolicy, Choice(&[("none", "stop at the first error (the default)"), ("read", "go on past read errors"), ("write", "go on past write errors"), ("io", "go on past read and write errors"), ("verify", "go on past verify errors"), ("all", "go on past any error")]), "none", "Which errors a job goes on past"),
    o("ignore_error", &[], ErrorPolicy, Text, "", "Errors to go on past, per read,write,verify: ':'-separated names or numbers"),
    // Priorities.
    o("prio", &[], Priority, Int, "", "I/O priority level of the job, 0 to 7").range(0, 7),
    o("prioclass", &[], Priority, Int, "", "I/O priority class of the job: 1 real-time, 2 best-effort, 3 idle").range(0, 3),
    o("cmdprio_percentage", &[], Priority, Int, "", "Share of I/Os issued with their own priority"),
    o("cmdprio_class", &[], Priority, Int, "", "The class of those I/Os"),
    o("cmdprio", &[], Priority, Int, "", "The level of those I/Os"),
    o("cmdprio_bssplit", &[], Priority, Text, "", "Priorities by block size: BS/PERCENT[/CLASS/LEVEL]"),
    o("log_prio", &[], Priority, Bool, "0", "Log each I/O's priority"),
];

/// The option called `name` (by its name or an alias).
pub fn find(name: &str) -> Option<&'static Declared> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// Every name sinkrate takes, aliases included, sorted.
pub fn all_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .collect();
    names.sort_unstable();
    names
}

/// Up to three names near `key`, nearest first: what a misspelling meant. A typo is an edit
/// or two (a swap counts as one) in a name of some length; fio's own options that sinkrate
/// lacks (`verify_async`) are further than that from any.
pub fn near(key: &str) -> Vec<&'static str> {
    let mut near: Vec<(usize, &'static str)> = all_names()
        .into_iter()
        .map(|n| (strsim::damerau_levenshtein(key, n), n))
        .filter(|(edits, _)| *edits <= 2 && *edits * 4 <= key.len())
        .collect();
    near.sort_unstable();
    near.into_iter().take(3).map(|(_, n)| n).collect()
}

/// `--cmdhelp`: every option with its help, one a line, in the table's order.
pub fn help_all() -> String {
    let mut out = String::new();
    for o in OPTIONS {
        let _ = writeln!(out, "{:<30}: {}", o.name, o.help);
    }
    out
}

/// `--cmdhelp NAME`: one option whole, or None when there is no such option.
pub fn help_one(name: &str) -> Option<String> {
    let o = find(name)?;
    let mut out = String::new();
    let _ = writeln!(out, "{:>20}: {}", o.name, o.help);
    if !o.aliases.is_empty() {
        let _ = writeln!(out, "{:>20}: {}", "alias", o.aliases.join(", "));
    }
    let _ = writeln!(out, "{:>20}: {}", "type", o.kind.describe());
    if !o.default.is_empty() {
        let _ = writeln!(out, "{:>20}: {}", "default", o.default);
    }
    if let Some((min, max)) = o.effective_range() {
        let _ = writeln!(out, "{:>20}: {}", "range", describe_range(min, max));
    }
    if let Kind::Choice(values) = o.kind {
        for (i, (value, what)) in values.iter().enumerate() {
            let label = if i == 0 { "valid values" } else { "" };
            let _ = writeln!(out, "{label:>20}: {value:<14} {what}");
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_name_is_declared_twice() {
        let names = all_names();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
    }

    #[test]
    fn verify_choices_are_every_method_the_parser_takes() {
        let Some(Declared {
            kind: Kind::Choice(choices),
            ..
        }) = find("verify")
        else {
            panic!("verify is a choice");
        };
        for (method, name, what) in crate::options::VERIFY_METHODS {
            assert!(choices.contains(&(name, what)), "{name} in the table");
            assert_eq!(crate::options::VerifyMethod::parse(name), Ok(Some(*method)));
            assert_eq!(method.fio_name(), *name);
        }
        for (name, _) in *choices {
            assert!(crate::options::VerifyMethod::parse(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn every_declared_option_is_taken_by_the_part_it_names() {
        // A value each kind takes, so that a declared option reaches its parser.
        for o in OPTIONS {
            let value = match o.kind {
                Kind::Bool => "1",
                Kind::Int | Kind::Percent => "1",
                Kind::Size | Kind::SizePerDirection => "4k",
                Kind::Time(_) => "1",
                Kind::Choice(values) => values[0].0,
                Kind::Text => match o.name {
                    "bssplit" => "4k/100",
                    "random_distribution" => "random",
                    "percentile_list" => "50:99",
                    "ss" | "steadystate" => "iops:10%",
                    "sync_file_range" => "write:1",
                    "buffer_pattern" | "verify_pattern" => "0xdeadbeef",
                    "file_service_type" => "roundrobin",
                    "ignore_error" => "EIO",
                    "cmdprio_bssplit" => "4k/100",
                    "uri" => "nbd://localhost/x",
                    _ => "x",
                },
            };
            // Every value the help offers is one the parser takes.
            if let Kind::Choice(values) = o.kind {
                for (v, _) in values {
                    let mut job = crate::JobOptions::default();
                    let got = job.apply(o.name, Some(v));
                    assert!(got.is_ok(), "{}={v}: {got:?}", o.name);
                }
            }
            for name in std::iter::once(o.name).chain(o.aliases.iter().copied()) {
                let mut job = crate::JobOptions::default();
                let got = job.apply(name, Some(value));
                assert!(
                    !matches!(got, Err(crate::options::ApplyError::Unsupported)),
                    "{name}={value}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn each_declared_default_is_taken_and_changes_nothing_given_again() {
        // A job's defaults are the table's, applied in order to an unset job. Each must be
        // a value its parser takes (one refused would leave its field unset), and given
        // again it must leave a default job as it was: no later default undoes an earlier
        // one, and no option's default means something else given alone.
        let start = crate::JobOptions::default();
        let mut differ = Vec::new();
        for o in OPTIONS.iter().filter(|o| !o.default.is_empty()) {
            let mut job = crate::JobOptions::default();
            let got = job.apply(o.name, Some(o.default));
            assert!(got.is_ok(), "{}={}: {got:?}", o.name, o.default);
            job.forget_what_was_given();
            if job != start {
                differ.push(o.name);
            }
        }
        assert!(differ.is_empty(), "defaults that undo another: {differ:?}");
    }

    #[test]
    fn each_range_holds_its_default_and_is_checked_in_one_wording() {
        for o in OPTIONS {
            let Some((min, max)) = o.range else { continue };
            assert!(
                matches!(o.kind, Kind::Int | Kind::Percent) || o.name == "percentile_list",
                "{}",
                o.name
            );
            if !o.default.is_empty() {
                assert_eq!(o.check_range(o.default), Ok(()), "{}", o.name);
            }
            let mut job = crate::JobOptions::default();
            let above = (max != NO_MAX).then(|| (max + 1).to_string());
            let below = (min > 0).then(|| (min - 1).to_string());
            for v in above.iter().chain(below.iter()) {
                let got = job.apply(o.name, Some(v));
                assert!(
                    matches!(&got, Err(crate::options::ApplyError::BadValue(m)) if m.contains("out of range (expected")),
                    "{}={v}: {got:?}",
                    o.name
                );
            }
            assert!(
                job.apply(o.name, Some(&min.to_string())).is_ok(),
                "{}",
                o.name
            );
        }
    }

    #[test]
    fn a_job_starts_with_fios_defaults() {
        // Spot checks of what the table's defaults make, field by field.
        let job = crate::JobOptions::default();
        assert_eq!(job.bs, [4096; 3]);
        assert_eq!(
            (job.nrfiles, job.numjobs, job.loops, job.iodepth),
            (1, 1, 1, 1)
        );
        assert_eq!(job.rwmixread, 50.0);
        assert_eq!(job.randseed, 0x89);
        assert!(job.randrepeat && job.invalidate && job.do_verify && job.per_job_logs);
        assert!(!job.direct && job.scramble_buffers && job.clat_percentiles);
        assert_eq!(job.rate_cycle_ms, 1000);
        assert_eq!(job.cpuchunks_us, 50_000);
        assert_eq!(job.grace_time, std::time::Duration::from_secs(1));
        assert_eq!(job.ss_interval, std::time::Duration::from_secs(1));
        assert_eq!(job.latency_percentile, 100.0);
        assert_eq!(
            job.percentile_list,
            crate::options::DEFAULT_PERCENTILES.to_vec()
        );
        assert!(job.behaviour.create_serialize);
        assert_eq!(job.behaviour.file_service_every, 1);
        assert_eq!(job.buffer_shape.compress_chunk, 512);
        assert_eq!(job.buffer_shape.dedupe_working_set_percentage, 5);
        assert_eq!(job.offset_modifier.random_every, 1);
        // Not given: the run's way with the files (bench keeps them, sinkrate's sessions
        // remove them), files named as fio does, a pause after every block.
        assert_eq!(
            (
                job.unlink,
                job.filename_format.as_deref(),
                job.thinktime_blocks
            ),
            (None, None, None)
        );
        // Steady state is judged only with ss_dur, then by fio's default metric.
        assert_eq!(job.ss, None);
        let mut window = crate::JobOptions::default();
        window.apply("ss_dur", Some("30")).expect("ss_dur");
        let mut both = crate::JobOptions::default();
        both.apply("ss", Some("iops_slope:0.01%")).expect("ss");
        both.apply("ss_dur", Some("30")).expect("ss_dur");
        assert_eq!(window, both);
        let mut other = crate::JobOptions::default();
        other.apply("ss", Some("bw:5%")).expect("ss");
        other.apply("ss_dur", Some("30")).expect("ss_dur");
        assert_ne!(other.ss, both.ss, "a given ss= stays");
    }

    #[test]
    fn an_older_result_missing_fields_reads_them_as_the_tables_defaults() {
        let mut value = serde_json::to_value(crate::JobOptions::default()).expect("json");
        let fields = value.as_object_mut().expect("an object");
        fields.remove("per_job_logs");
        fields.remove("grace_time");
        fields.remove("buffer_shape");
        fields["behaviour"]
            .as_object_mut()
            .expect("behaviour")
            .remove("create_serialize");
        let job: crate::JobOptions = serde_json::from_value(value).expect("reads");
        assert_eq!(job, crate::JobOptions::default());
    }

    #[test]
    fn an_option_not_in_the_table_is_refused() {
        for name in ["zbd", "lockfile", "bs_unaligned", "unique_filename"] {
            let mut job = crate::JobOptions::default();
            assert!(
                matches!(
                    job.apply(name, Some("1")),
                    Err(crate::options::ApplyError::Unsupported)
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn help_for_one_option_says_its_alias_type_default_and_values() {
        let bs = help_one("blocksize").expect("bs by its alias");
        assert!(bs.contains("bs: Block size of each I/O"), "{bs}");
        assert!(bs.contains("alias: blocksize"), "{bs}");
        assert!(bs.contains("default: 4096"), "{bs}");
        let iodepth = help_one("iodepth").expect("iodepth");
        assert!(iodepth.contains("range: 1 to 65536"), "{iodepth}");
        let loops = help_one("loops").expect("loops");
        assert!(loops.contains("range: 1 to 4294967295"), "{loops}");
        let rw = help_one("rw").expect("rw");
        assert!(rw.contains("valid values: read"), "{rw}");
        assert!(rw.contains("randtrimwrite"), "{rw}");
        assert_eq!(help_one("nonesuch"), None);
        assert_eq!(help_all().lines().count(), OPTIONS.len());
    }
}
