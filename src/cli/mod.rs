//! The command-line surface, defined once with clap; `--help`, the man page and the shell
//! completions are all generated from these definitions.

pub mod bench_args;
pub mod bench_config;
pub mod emulate_config;
pub mod record_config;
pub mod tune_config;
pub mod values;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use values::{FindMaxArg, ObjectiveArg, PreallocArg, When, WriteModeArg, Writers};

use crate::export::plan::{self, Format, Printed, Style};
use sinkrate_model::Envelope;

pub const BENCH_EXAMPLES: &str = "\
Examples:
  # The built-in job: 1 MiB direct sequential writes for 10 s in the current directory
  sinkrate bench

  # fio job files, unchanged; shrink them for a quick try
  sinkrate bench job.fio --size=64m --runtime=5

  # fio-style options on the command line (--name starts a job)
  sinkrate bench --name=rand --rw=randread --bs=4k --size=1g --ioengine=io_uring --iodepth=32

  # A 15 fps camera writing 3 MiB frames (seed 000's recorder), 30 s, flushed at the end
  sinkrate bench --name=cam --rw=write --bs=3m --rate_iops=15 --size=2g --runtime=30 --time_based --end_fsync=1

  # JSON with fio's keys, inside the sinkrate run schema
  sinkrate bench job.fio --output-format=json --output=run.json

  # Check job files without doing any I/O
  sinkrate bench --parse-only job.fio

Job options use fio's names, values and units (sizes: 4k = 4096 with kb_base=1024).
With job files, --key=value options before any --name override every job's value.";

#[derive(Debug, Parser)]
#[command(
    name = "sinkrate",
    version,
    about = "Will this storage keep up with my recording, and what do I change so that it does?",
    long_about = "sinkrate measures storage the way recording devices use it: a fio-compatible \
benchmark engine that reports what reached the device, not only what the page cache accepted.",
    after_help = "Examples:\n  sinkrate bench                 run the built-in job in the current directory\n  sinkrate bench job.fio         run a fio job file\n  sinkrate help bench            all bench options and examples"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// fio-compatible I/O benchmark: fio job files and fio-style --key=value options
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(Box<BenchArgs>),
    /// Emulate a recording pipeline: will the storage keep up, frame by frame?
    #[command(after_help = RECORD_EXAMPLES)]
    Record(Box<RecordArgs>),
    /// Page cache, writeback throttling, disks and CPU hogs, alone or while a command runs
    #[command(after_help = WATCH_EXAMPLES)]
    Watch(Box<WatchArgs>),
    /// The one-minute verdict: audit, raw write rate, a recording test; can this storage keep up?
    #[command(after_help = CHECK_EXAMPLES)]
    Check(Box<CheckArgs>),
    /// What is wrong with a storage setup, why it matters, and the exact fix
    #[command(after_help = AUDIT_EXAMPLES)]
    Audit(Box<AuditArgs>),
    /// Is the data really on the card? Write blocks that say what they are, read them back
    /// from the device, and name every bad one (stale, misplaced, zeros, garbage, corrupt)
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(Box<VerifyArgs>),
    /// The source documents' experiments, one command each: the document's table, measured
    /// on your storage with repeated runs and their spread (sinkrate suite list)
    #[command(after_help = SUITE_EXAMPLES)]
    Suite(Box<SuiteArgs>),
    /// Slow storage on demand: an SD card or USB drive emulated with a real filesystem
    #[command(after_help = EMULATE_EXAMPLES)]
    Emulate {
        #[command(subcommand)]
        action: EmulateAction,
    },
    /// Apply fixes through a journal, put them back, and see what sinkrate holds changed
    #[command(after_help = tune_examples())]
    Tune {
        #[command(subcommand)]
        action: TuneAction,
    },
    /// Which configuration is better, and how sure: runs grouped by configuration, each row
    /// against the baseline with a 95% interval and a p-value
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(Box<CompareArgs>),
    /// Capture a real recorder's file operations as it runs: fio's iolog v3 (replayable
    /// with fio --read_iolog) and every call with its duration beside it
    #[command(after_help = CAPTURE_EXAMPLES)]
    Capture(Box<CaptureArgs>),
    /// Pictures of what happened: one self-contained HTML file of any run (and of fio's
    /// JSON), several runs overlaid; PNG files of the main charts with --png
    #[command(after_help = REPORT_EXAMPLES)]
    Report(Box<ReportArgs>),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout
    #[command(
        after_help = "Example:\n  sinkrate completions bash > /etc/bash_completion.d/sinkrate"
    )]
    Completions {
        /// The shell to generate completions for
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout
    #[command(after_help = "Example:\n  sinkrate man > /usr/local/share/man/man1/sinkrate.1")]
    Man,
}

impl Command {
    /// Whether this command makes files, devices or trace instances that a killed run can
    /// leave behind: those commands take the leftovers of earlier runs first. A command that
    /// only reads (audit, compare, report, completions, man) leaves them, so that rendering a
    /// report beside a running recording never touches what that recording made.
    pub fn writes_or_emulates(&self) -> bool {
        match self {
            Command::Bench(_)
            | Command::Emulate { .. }
            | Command::Tune { .. }
            | Command::Watch(_)
            | Command::Record(_)
            | Command::Verify(_)
            | Command::Check(_)
            | Command::Suite(_)
            | Command::Capture(_) => true,
            Command::Audit(_)
            | Command::Compare(_)
            | Command::Report(_)
            | Command::Completions { .. }
            | Command::Man => false,
        }
    }
}

pub const RECORD_EXAMPLES: &str = "\
Examples:
  # Two 1080p30 H.264 streams (the default profile) to an SD card for 30 s
  sinkrate record --dir /media/sd

  # Seed 000's raw camera, 3.48 MB frames at 30 fps, with O_DIRECT, 10 minutes
  sinkrate record --profile raw12-1920x1208-30 --dir /media/usb0 --write-mode direct --duration 10m

  # Your own streams: 3 cameras at 25 fps, 8 Mbit/s each, GOP 50, 6 capture buffers
  sinkrate record --dir /data --streams 3 --fps 25 --bitrate 8M --gop 50 --buffers 6 \\
      --fdatasync-every 1s --output-format json --output rec.json

Profiles: 1080p30-h264, 4k30-h265, dual-1080p30, raw12-1920x1208-30, mjpeg-1080p30, imu-1khz.
Exit 0: keeps up; 1: falling behind or drops; 2: error.";

pub const WATCH_EXAMPLES: &str = "\
Examples:
  # Watch while your recorder runs; its exit code is passed through
  sinkrate watch -- ./my_recorder --out /media/sd/rec.mp4

  # 30 s of the whole machine, every 10 ms, as JSON with the full timeline
  sinkrate watch --duration 30s --interval 10ms --output-format json --output watch.json

  # Follow running processes until they exit; one device; CSV and a Prometheus textfile
  sinkrate watch --pid 1234 --device mmcblk1 --csv watch.csv \\
      --prometheus /var/lib/node_exporter/textfile/sinkrate.prom

Writers are throttled (balance_dirty_pages) once dirty + writeback pass the freerun ceiling,
midway between the kernel's background and hard dirty thresholds (nr_dirty_*threshold in
/proc/vmstat); watch reads those thresholds every sample rather than recomputing them.";

/// `tune`'s examples, and the settings it takes listed from the one table of them.
pub fn tune_examples() -> String {
    let settings = format!("Settings: {}", sinkrate_model::tunables::help_list());
    format!(
        "\
Examples:
  # Seed 001's fix, journaled, kept until restore
  sinkrate tune apply vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=100

  # Queue and mount settings of the device under /mnt/card, first as a dry run
  sinkrate tune apply --path /mnt/card --dry-run queue:scheduler=none queue:max_sectors_kb=1024 mount:noatime

  # The card under /mnt/card may hold at most 50 MiB of dirty data, always
  sinkrate tune apply --path /mnt/card bdi:strict_limit=1 bdi:max_bytes=50M

  # Seed 001's fix, also in /etc/sysctl.d/60-sinkrate.conf (merged; restore puts it back)
  sinkrate tune apply --persist vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=100

  # The fixes a check found, or those of a fresh audit of /mnt/card
  sinkrate tune apply --from sinkrate-check-20261122-024500.json
  sinkrate tune apply --path /mnt/card

  # What sinkrate holds changed, and everything put back
  sinkrate tune status
  sinkrate tune restore

{}",
        textwrap(&settings, 90)
    )
}

/// `text` broken at spaces into lines of at most `width` characters. By hand: clap does not
/// wrap `after_help`, and a wrapping crate for one paragraph would weigh on the board binary
/// (its size budget has 13 KB to spare).
fn textwrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

#[derive(Debug, Subcommand)]
pub enum TuneAction {
    /// Journal the settings, then change them; they stay until `sinkrate tune restore`
    #[command(after_help = tune_examples())]
    Apply(Box<TuneApplyArgs>),
    /// Put back every setting `tune apply` changed (and any a killed run left)
    Restore {
        /// Print what would be put back, change nothing
        #[arg(long)]
        dry_run: bool,
        /// The result's format
        #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::settings::TuneReport>>(), default_value = "text")]
        output_format: Format,
    },
    /// Search for the configuration that keeps up on your own workload, and prove it
    #[command(after_help = TUNE_SEARCH_EXAMPLES)]
    Search(Box<TuneSearchArgs>),
    /// What sinkrate holds changed (a killed run's temporary changes are put back first)
    Status {
        /// The result's format
        #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::settings::TuneReport>>(), default_value = "text")]
        output_format: Format,
    },
}

pub const REPORT_EXAMPLES: &str = "\
Examples:
  # The pictures of a recording: writes rec.html beside it
  sinkrate record --dir /media/sd --output-format json --output rec.json
  sinkrate report rec.json
  # Two runs overlaid in one report, and the main charts as PNG files for a ticket
  sinkrate report buffered.json direct.json -o buffered-vs-direct.html --png plots/
  # fio's own JSON gets the pictures too
  fio job.fio --output-format=json > fio.json && sinkrate report fio.json
  # Every board of a lab on one page (results.html beside the tree)
  sinkrate report results/ --by dir
  # Straight from a run
  sinkrate check /media/sd --report sd.html
The file is self-contained (scripts, styles and data inline; it makes no request), so it
opens from an email attachment or a CI artifact. An existing file is replaced only with
--force.";

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Result files: any sinkrate run's JSON (check, record, bench, watch, audit, tune, ...)
    /// or fio's --output-format=json; several are overlaid; a directory stands for every
    /// *.json under it (a lab's results/HOST/... tree)
    #[arg(required = true, value_name = "RUN.json|DIR")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write ("-": standard output); default: the first input's name
    /// with .html (DIR.html for a directory)
    #[arg(short, long, value_name = "FILE.html")]
    pub output: Option<PathBuf>,
    /// Replace the output file (and PNG files) if they exist
    #[arg(long)]
    pub force: bool,
    /// Also write the main charts as PNG files into DIR (created if absent)
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// A label for each input, in order (default: the file's name)
    #[arg(long, value_name = "NAME", conflicts_with = "by")]
    pub label: Vec<String>,
    /// Name each run by its host, folder (dir: results/HOST/...), filesystem, device or
    /// any field (a JSON pointer), before its file's name: as compare --by
    #[arg(long, value_name = "KEY")]
    pub by: Option<String>,
}

pub const COMPARE_EXAMPLES: &str = "\
Examples:
  # Seed 004's question: buffered vs direct, three runs each (grouped by what differs)
  sinkrate compare buffered-*.json direct-*.json

  # Markdown for an issue tracker, the second configuration as the baseline
  sinkrate compare a.json b.json c.json --output-format markdown --baseline write_mode=direct

  # Two cards with the same settings, named; fail a CI gate if the new one is worse
  sinkrate compare old.json new.json --label old-card --label new-card --fail-if-worse

  # fio's own JSON and sinkrate bench's, side by side
  sinkrate compare fio-run.json sinkrate-bench.json --output-format csv

  # A lab's results (results/BOARD/*.json, as deploy/ansible fetches them): a row per board
  sinkrate compare results/ --by dir

Rows: record and check runs (their recording test), or bench and fio jobs. Runs with the same
configuration form one row; its label says what differs from the others (or --label, one per
file). Each row against the baseline: dropped frames and p99 write latency with a 95%
interval and p; four or more runs a side are compared run by run (bootstrap and an exact
permutation test), fewer by a block bootstrap over the recordings' seconds. A run that
failed (its result carries an error, or a lab could not reach or run on its board) is a row
of its own saying FAILED and why, its figures in no row. Exit 0, 1 with --fail-if-worse when
a row is significantly worse or a run failed, 2 when an input could not be read.";

pub const CAPTURE_EXAMPLES: &str = "\
Examples:
  # GStreamer recording 10 s segments to the card, captured
  sinkrate capture --output rec.iolog -- gst-launch-1.0 -e videotestsrc is-live=true ! \\
      x264enc ! h264parse ! splitmuxsink location=/media/sd/seg%05d.mp4 max-size-time=10000000000

  # ffmpeg's segment muxer
  sinkrate capture -- ffmpeg -f lavfi -i testsrc=size=1280x720:rate=30 -c:v libx264 \\
      -f segment -segment_time 10 /media/sd/seg%03d.mp4

  # fio replays the trace's writes and syncs (onto the same paths)
  fio --name=replay --read_iolog=rec.iolog --ioengine=psync

The trace is fio's iolog v3 (TRACE; default capture.iolog, or capture-2.iolog... when taken);
every call, with its thread, duration, open flags, renames and unlinks, goes to
TRACE.calls.jsonl beside it. Both are written as calls happen: a capture cut short is
readable up to its last call. The recorder runs under ptrace with a seccomp filter that stops
it only at file calls; memory-mapped writes and io_uring are not seen (said when used).
Exit: the recorder's exit code (0 when it succeeded); 2: error; 130: interrupted.";

pub const TUNE_SEARCH_EXAMPLES: &str = "\
Examples:
  # Seed 001's workload on an SD card: two buffered 30 fps streams of 80 KB frames
  sinkrate tune search /mnt/card -- --streams 2 --fps 30 --frame-size 80k --write-mode buffered

  # check's profile, 5 confirmation runs within 20 minutes, the winner applied
  sinkrate tune search /mnt/card --runs 5 --budget 20m --apply

  # A bench job file as the workload (system settings only)
  sinkrate tune search /mnt/card --job camera.fio

  # Your own recorder: stopped with SIGINT at each run's end, judged by its exit status,
  # the sampler, and the dropped-frame count it writes to --drops-file
  sinkrate tune search /mnt/card --drops-file drops.txt --exec -- ./my_recorder --out /mnt/card

Candidates: the configuration as it is; dirty_expire/writeback 100/100 cs; with small dirty
limits; O_DIRECT; 4x the capture buffers; fdatasync every second; combinations; io_uring,
preallocated files, whole-frame writes; then the queue (scheduler, 128 KiB requests) and the
mount (noatime, commit=60 on ext4) with 100/100.
Each candidate is screened once, past the first flush of expired data; one that drops more
frames than the best so far is stopped there. The baseline and the leader then run
--confirm-duration runs (60 s) until each has --runs of them. System settings are applied
through the settings journal for the candidate's runs only (root); without root only the
recorder's knobs are tried.";

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Result files: sinkrate record, check or bench JSON, or fio's --output-format=json; a
    /// directory stands for every *.json under it (a lab's fetched results/HOST/... tree)
    #[arg(required = true, value_name = "RUN.json|DIR")]
    pub inputs: Vec<PathBuf>,
    /// The table's format
    #[arg(long, visible_alias = "format", value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::compare::CompareReport>>(), default_value = "text")]
    pub output_format: Format,
    /// A label for each input, in order: runs with the same label form one row
    #[arg(long, value_name = "NAME", conflicts_with = "by")]
    pub label: Vec<String>,
    /// One row per host, folder, filesystem or device instead of per configuration: host,
    /// dir (the folder under a directory given, results/HOST/...), fs, device, or a JSON
    /// pointer to any field of the results (/host/kernel)
    #[arg(long, value_name = "KEY")]
    pub by: Option<String>,
    /// The row the others are compared with, by its label (default: the first)
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,
    /// Exit 1 when a row is significantly worse than the baseline on drops or p99 write
    /// latency, or a run failed (a CI gate)
    #[arg(long)]
    pub fail_if_worse: bool,
}

#[derive(Debug, clap::Args)]
pub struct TuneSearchArgs {
    /// A directory on the storage to search for
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Full-length runs of the winner and of the baseline it is compared with
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The time the whole search may take (candidates from the end of the list are left
    /// out to fit, and named)
    #[arg(long, default_value = "10m", value_parser = values::duration_value)]
    pub budget: std::time::Duration,
    /// The length of a full-length run (default: 10 s past the first flush of expired data,
    /// 45 s with the kernel's defaults; at least a candidate's writeback cycle plus 10 s; not
    /// with --job, whose runs are as its runtime= says)
    #[arg(long, value_name = "DURATION", value_parser = values::duration_value)]
    pub confirm_duration: Option<std::time::Duration>,
    /// The workload is this bench (fio) job file, run in PATH, not a recording
    #[arg(long, value_name = "FILE", conflicts_with = "exec")]
    pub job: Option<PathBuf>,
    /// The workload is your own recorder: the command after -- (run in PATH)
    #[arg(long)]
    pub exec: bool,
    /// With --exec: the file your recorder writes its dropped-frame count to
    #[arg(long, value_name = "FILE", requires = "exec")]
    pub drops_file: Option<PathBuf>,
    /// Progress bar on standard error: auto (on a terminal), always (a line a run off a
    /// terminal), never
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub progress: When,
    /// Apply the winner's system settings (kept until sinkrate tune restore)
    #[arg(long)]
    pub apply: bool,
    /// The most recording a power cut may cost (e.g. 1s): adds the data-at-risk candidates
    /// (fdatasync cadence, O_DSYNC, O_DIRECT + fdatasync) and ranks those that kept every
    /// frame acknowledged on the device within it first (record workloads)
    #[arg(long, value_name = "DURATION", value_parser = values::duration_value)]
    pub max_loss: Option<std::time::Duration>,
    /// Prove it: cut the power of the winner's and the baseline's recordings once each and
    /// count what survived (PATH on an emulated card with a volatile write cache)
    #[arg(long)]
    pub power_cut: bool,
    /// What ranks the candidates that keep up: latency (the worst write first) or wear (the
    /// fewest bytes the device writes per hour of recording: journal mode, commit interval,
    /// noatime, preallocation, write size and fsync cadence move it)
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Latency)]
    pub objective: ObjectiveArg,
    /// Try every candidate: no fix predicted from the baseline's stalls and proven first
    #[arg(long)]
    pub no_predict: bool,
    /// The result's format
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::search::SearchReport>>(), default_value = "text")]
    pub output_format: Format,
    /// Also write the JSON report here
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// The workload, as sinkrate record flags after -- (default: check's profile,
    /// dual-1080p30); with --exec, the command to run
    #[arg(last = true, value_name = "RECORD_FLAGS|COMMAND")]
    pub record_flags: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct TuneApplyArgs {
    /// Settings: vm.NAME=VALUE, queue:ATTR=VALUE, bdi:ATTR=VALUE, mount:OPTION (see the
    /// examples); none:
    /// the fixes of --from's findings, or of a fresh audit of --path
    #[arg(value_name = "SETTING")]
    pub settings: Vec<String>,
    /// A check or audit report (JSON): apply the fixes of its findings to its target
    #[arg(long, value_name = "REPORT.json", conflicts_with = "settings")]
    pub from: Option<PathBuf>,
    /// The directory whose mount and block device queue:, bdi: and mount: settings apply to
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// The block device for queue: and bdi: settings, by name (sda, mmcblk0); also allows the
    /// system's own disk
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// The mount point for mount: settings, by name; also allows the system's own mounts
    #[arg(long, value_name = "DIR")]
    pub mount_point: Option<String>,
    /// Print what would change, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also make the changes last: sysctls into /etc/sysctl.d/60-sinkrate.conf, queue
    /// settings as a rule in /etc/udev/rules.d/60-sinkrate.rules (each merged with what is
    /// there; tune restore puts the files back); the /etc/fstab line for mount options is
    /// printed, not edited
    #[arg(long)]
    pub persist: bool,
    /// --persist, and also edit the mount's line in /etc/fstab (after the remount took the
    /// options, with a backup beside it, checked with findmnt --verify; restore puts it back)
    #[arg(long)]
    pub persist_fstab: bool,
    /// With --persist-fstab: the fstab to edit (e.g. in an image's root filesystem)
    #[arg(long, value_name = "FILE", requires = "persist_fstab")]
    pub fstab: Option<PathBuf>,
    /// The result's format
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::settings::TuneReport>>(), default_value = "text")]
    pub output_format: Format,
}

pub const EMULATE_EXAMPLES: &str = "\
Examples:
  # A 10 MB/s class-10 SD card with ext4, 1 GiB, at /mnt/card
  sinkrate emulate up /mnt/card --model sd-class10
  sinkrate bench --name=cam --directory=/mnt/card --rw=write --bs=3m --rate_iops=15 --size=512m
  sinkrate emulate down /mnt/card

  # Your own numbers: 20 MiB/s, 2 ms per write, xfs, noatime, 4 GiB kept in a sparse file
  sinkrate emulate up /mnt/slow --size 4G --write-rate 20M --write-latency 2ms --fs xfs \\
      --mount-opts noatime --backing-file /var/tmp/slow.img

  # Inject errors: 1% of requests fail with EIO once the filesystem is mounted
  sinkrate emulate up /mnt/flaky --model usb2-stick --error-rate 0.01 --error EIO

  sinkrate emulate list

Sizes and rates follow dd's convention: 20M is 20 MiB (per second), 20MB is 20 MB.
Needs root and the Debian packages nbdkit, libnbd-bin (nbdfuse) and fuse3.";

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Where the recording files go
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// A built-in profile (see below); the default when no stream flags are given is dual-1080p30
    #[arg(long)]
    pub profile: Option<String>,
    /// Number of identical streams (with --fps and --frame-size or --bitrate)
    #[arg(long, default_value_t = 1)]
    pub streams: u32,
    /// Frames per second of each stream
    #[arg(long)]
    pub fps: Option<f64>,
    /// Fixed frame size (dd units: 3M = 3 MiB)
    #[arg(long)]
    pub frame_size: Option<String>,
    /// Stream bitrate in bits per second, SI (12M = 12 Mbit/s)
    #[arg(long)]
    pub bitrate: Option<String>,
    /// Frames per group of pictures (an I-frame every N frames); default: one a second
    #[arg(long)]
    pub gop: Option<u32>,
    /// Capture buffers per stream; a frame arriving when all are busy is dropped
    #[arg(long, default_value_t = 4)]
    pub buffers: usize,
    /// buffered, direct (O_DIRECT), dsync (O_DSYNC), uring (O_DIRECT queued on io_uring,
    /// --queue-depth frames in flight), or null (no I/O: the emulator's own cost)
    #[arg(long, value_enum, default_value_t = WriteModeArg::Buffered)]
    pub write_mode: WriteModeArg,
    /// Frames in flight at once with --write-mode uring
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub queue_depth: usize,
    /// per-stream (a writer thread per stream) or shared (one writer thread for all streams)
    #[arg(long, value_name = "HOW", value_enum, default_value_t = Writers::PerStream)]
    pub writers: Writers,
    /// Bytes per write call (default: a whole frame per call; 4K emulates stdio buffering)
    #[arg(long)]
    pub write_size: Option<String>,
    /// fdatasync after every N frames
    #[arg(long, value_name = "N")]
    pub fdatasync_frames: Option<u64>,
    /// fdatasync at most this often (e.g. 1s)
    #[arg(long, value_name = "DURATION")]
    pub fdatasync_every: Option<String>,
    /// Start a new file every DURATION (dashcam-style segments)
    #[arg(long, value_name = "DURATION")]
    pub segment_time: Option<String>,
    /// Start a new file every SIZE bytes
    #[arg(long, value_name = "SIZE")]
    pub segment_size: Option<String>,
    /// Loop recording: delete the oldest segments while the file system is fuller than PCT
    #[arg(long, value_name = "PCT")]
    pub loop_fill: Option<f64>,
    /// Preallocate each file (each segment) to this many bytes
    #[arg(long)]
    pub preallocate: Option<String>,
    /// How to preallocate: fallocate (reserve blocks), ftruncate (sparse length), pregrow
    /// (write zeros first, then overwrite: seed 002)
    #[arg(long, value_enum, default_value_t = PreallocArg::Fallocate)]
    pub preallocate_mode: PreallocArg,
    /// How long to record [default: 30s; with --replay, the trace's length]
    #[arg(long, value_parser = values::duration_value)]
    pub duration: Option<std::time::Duration>,
    /// Write calls slower than this are listed as stalls
    #[arg(long, default_value = "100ms", value_parser = values::duration_value)]
    pub stall_threshold: std::time::Duration,
    #[command(flatten)]
    pub out: OutputArgs<sinkrate_model::record::RecordRun>,
    /// Also write the run's HTML report (charts of what happened; see sinkrate report) to
    /// FILE.html, replacing it as --output does
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Keep the recorded files (removed by default)
    #[arg(long)]
    pub keep: bool,
    /// Write one CSV line per frame: stream, frame, size, capture, write start and end, dropped
    #[arg(long, value_name = "FILE")]
    pub frames_log: Option<PathBuf>,
    /// One live line per second on standard error: auto (on a terminal), always, never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = When::Auto)]
    pub live: When,
    /// Run as a board with this much RAM would: its dirty limits (dirty_ratio and
    /// dirty_background_ratio of SIZE) are set for the run and restored after (needs root)
    #[arg(long, value_name = "SIZE")]
    pub ram_limit: Option<String>,
    /// Do not read the kernel's trace events to explain stalls: causes are then inferred
    /// from /proc samples (the events need root and tracefs)
    #[arg(long)]
    pub no_kernel_events: bool,
    #[command(flatten)]
    pub endurance: EnduranceArgs,
    /// Set vm.dirty_bytes to SIZE (background: half) for the run, restored after (needs root)
    #[arg(long, value_name = "SIZE")]
    pub dirty_limit: Option<String>,
    /// Cut the power of the emulated card under --dir this far into the run (e.g. 20s), bring
    /// it back, mount it and count per stream the frames that survived (a card set up with
    /// sinkrate emulate up --volatile-cache only)
    #[arg(long, value_name = "TIME", value_parser = values::duration_value)]
    pub power_cut_at: Option<std::time::Duration>,
    /// A soak: read every closed segment back from the device this often (e.g. 10m), each
    /// frame's header and checksum checked, so that a card returning stale or corrupt data
    /// fails the run when it happens (needs --segment-time or --segment-size)
    #[arg(long, value_name = "TIME", value_parser = values::duration_value)]
    pub verify_every: Option<std::time::Duration>,
    /// Search the largest value that still keeps up for --duration: streams, bitrate or fps
    /// (bisection to 5%, confirmed by a second run), next to the device's raw direct-write rate
    #[arg(long, value_name = "WHAT", value_enum)]
    pub find_max: Option<FindMaxArg>,
    /// Seed for frame-size jitter
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Replay a trace of sinkrate capture (TRACE, with TRACE.calls.jsonl beside it) instead
    /// of emulated streams: the recorder's own calls at their original times, each of its
    /// threads a stream whose bursts of writes are frames (--fps: that rate's intervals
    /// instead), judged as record judges its own
    #[arg(long, value_name = "TRACE")]
    pub replay: Option<PathBuf>,
    /// With --replay: its pace against the original (2x: twice as fast) [default: 1x]
    #[arg(long, value_name = "FACTOR")]
    pub speed: Option<String>,
}

pub const AUDIT_EXAMPLES: &str = "\
Examples:
  # The storage under the current directory
  sinkrate audit

  # An SD card, judged for a 4K stream, as JSON
  sinkrate audit /media/sd --profile 4k30-h265 --output-format json

  # A tree captured from a board (proc/, sys/, dev/ under DIR); from a clone of sinkrate:
  sinkrate audit /media/usb0 --sysroot tests/fixtures/sysroot/arm-sbc-usb3-drive-on-usb2
";

/// A result's format and where it goes, declared once for every command that prints one:
/// the formats `--output-format` takes are those the output plan registers for `T`, the
/// command's result (src/export/plan.rs).
#[derive(clap::Args)]
pub struct OutputArgs<T: Printed> {
    /// The result's format
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<T>(), default_value = "text")]
    pub output_format: Format,
    /// Write the result to FILE instead of standard output
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(skip)]
    printed: std::marker::PhantomData<fn() -> T>,
}

impl<T: Printed> std::fmt::Debug for OutputArgs<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputArgs")
            .field("output_format", &self.output_format)
            .field("output", &self.output)
            .finish()
    }
}

impl<T: Printed> Clone for OutputArgs<T> {
    fn clone(&self) -> Self {
        OutputArgs {
            output_format: self.output_format,
            output: self.output.clone(),
            printed: std::marker::PhantomData,
        }
    }
}

impl<T: Printed> OutputArgs<T> {
    /// Prints `result` (of the command's kind, or one printed in the same formats) in the
    /// format the flags say, where they say: FILE, replaced as every output is (the same
    /// checks for every flag), or standard output.
    pub fn print<R: Printed>(&self, result: &R, style: &Style) -> anyhow::Result<()> {
        plan::print(result, self.output_format, style, |fill| {
            match &self.output {
                Some(p) => sinkrate_sys::output::result_with(p, fill)
                    .map_err(|e| anyhow::anyhow!("--output {}: {e}", p.display())),
                None => crate::write_stdout_with(fill),
            }
        })
    }
}

/// How the stream rate that findings are judged against is given (shared by audit and check).
#[derive(Debug, Clone, clap::Args)]
pub struct StreamRateArgs {
    /// A recording profile whose rate the findings are judged against (see sinkrate record)
    #[arg(long, default_value = "dual-1080p30")]
    pub profile: String,
    /// Total stream rate in bits per second instead (e.g. 24M)
    #[arg(long)]
    pub bitrate: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// A directory on the storage to audit
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Read /proc, /sys and /dev under DIR instead of the live system (fixture trees)
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    #[command(flatten)]
    pub rate: StreamRateArgs,
    #[command(flatten)]
    pub out: OutputArgs<Envelope<sinkrate_model::audit::AuditReport>>,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub color: When,
    /// Exit 1 when a critical or warn finding is present
    #[arg(long)]
    pub strict: bool,
}

pub const VERIFY_EXAMPLES: &str = "\
Examples:
  # 1 GiB written to the SD card and read back from it (a new file, removed after)
  sinkrate verify /media/sd

  # The whole of an unmounted card, 4 MiB blocks (destroys what it holds)
  sinkrate verify /dev/sdb --block-size 4M --force

  # Write, keep, power-cycle or move the card to another reader, then read
  sinkrate verify /media/sd --size 8G --keep
  sinkrate verify --read-only /media/sd

  # Is this 64 GB card really 64 GB? A probe of the unmounted card in well under a minute;
  # what it overwrites is saved first and put back (exit 1: it is a fake)
  sinkrate verify --capacity /dev/sdb

  # Does the card keep the class it claims (its SD Status, else --claim)? The SD
  # specification's method, 32 MiB of recording units and 4 s of random I/O
  sinkrate verify --class /media/sd --claim V30

Each block carries a header (run, generation, block, offset, length, crc32c, time), so a bad
block is named: stale (an earlier run's data: the write never reached the medium), misplaced
(another offset's data: a wrap-around or misdirected write), zeros, garbage or corrupt.
Exit 0: every block verified (--capacity: genuine; --class: the class is met); 1: bad blocks
(a fake; the class is missed); 2: error; 130: interrupted.";

/// `sinkrate verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A directory (a new file is written there), an unmounted block device, or with
    /// --read-only the file, directory or device a kept run wrote
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Bytes to write (e.g. 4G); default: 1 GiB in a directory (less when less is free), the
    /// whole device; with --class, each pass's (default 32M: eight 4 MiB units)
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Block size, a multiple of 4 KiB
    #[arg(long, value_name = "SIZE", default_value = "1M")]
    pub block_size: String,
    /// Leave the data for a later --read-only pass (after a power cycle, or in another reader)
    #[arg(long)]
    pub keep: bool,
    /// Only read and check the blocks a kept run left (learned from its first block)
    #[arg(long, conflicts_with_all = ["size", "keep", "force"])]
    pub read_only: bool,
    /// Is the capacity real? A fast probe of an unmounted device (f3probe-style): a few
    /// well-placed writes find the real size and whether writes past it wrap or are lost;
    /// what it overwrites is saved first and put back
    #[arg(long, conflicts_with_all = ["size", "keep", "read_only", "block_size"])]
    pub capacity: bool,
    /// Does the card keep its speed class? The SD specification's method (section 4.13):
    /// recording units written through its allocation units, each write's busy, FAT updates
    /// and the start of a recording timed, random 4 KiB I/O for A1/A2; judged against the
    /// card's claim (its SD Status) or --claim, in files of its own in the directory
    #[arg(long, conflicts_with_all = ["keep", "read_only", "capacity", "block_size", "force"])]
    pub class: bool,
    /// With --class: the class to judge against (C2 to C10, U1, U3, V6 to V90, A1, A2)
    /// instead of the card's own claim
    #[arg(long, value_name = "CLASS", requires = "class")]
    pub claim: Option<String>,
    /// With --class: the card's allocation unit (default: the card's, else 4M)
    #[arg(long, value_name = "SIZE", requires = "class")]
    pub au: Option<String>,
    /// With --class: seconds each of random 4 KiB reads and writes
    #[arg(
        long,
        value_name = "SECONDS",
        requires = "class",
        default_value_t = 2.0
    )]
    pub random_seconds: f64,
    /// With --class: the stream the card must carry, in bits per second (e.g. 24M); its
    /// video class is judged too [default: the dual-1080p30 profile]
    #[arg(long, requires = "class")]
    pub bitrate: Option<String>,
    /// With --class: a recording profile the card must carry instead of --bitrate
    #[arg(long, requires = "class", conflicts_with = "bitrate")]
    pub profile: Option<String>,
    /// With --capacity: do not save and put back what the probe overwrites (faster; the
    /// device's data is damaged)
    #[arg(long, requires = "capacity")]
    pub destructive: bool,
    /// Write to a device although it is mounted or holds a filesystem (destroys it; with
    /// --capacity, probe one that holds a filesystem, whose blocks are put back)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub out: OutputArgs<Envelope<sinkrate_model::verify::VerifyReport>>,
    /// A progress line on standard error: auto (on a terminal), always, never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = When::Auto)]
    pub progress: When,
}

pub const SUITE_EXAMPLES: &str = "\
Examples:
  # The suites, what each measures and which document it reproduces
  sinkrate suite list

  # Seed 002's record-size table on the SD card: 3 runs of each cell, median and spread
  sinkrate suite record-size /media/sd

  # One quick pass of seed 000's page-cache lesson (as root: the dirty limit is lowered
  # for the run and restored), as Markdown
  sinkrate suite page-cache /media/sd --quick --output-format markdown

  # Each filesystem on emulated class-10 cards, every run's JSON and the table kept
  sinkrate suite filesystems --model sd-class10 --output-dir fs-results

  # Your own streams instead of the suite's default recording: record flags after --
  sinkrate suite capture-buffers /media/sd -- --streams 3 --fps 25 --bitrate 8M
";

pub const CHECK_EXAMPLES: &str = "\
Examples:
  # Can the SD card take two 1080p30 streams? About a minute
  sinkrate check /media/sd

  # A quick look (about 15 s), for a 4K camera, full report to a file
  sinkrate check /media/usb0 --quick --profile 4k30-h265 --output report.json

  # Your own streams and pool for the recording test: any sinkrate record flags after --
  sinkrate check /media/sd -- --streams 3 --fps 25 --bitrate 8M --buffers 8
";

#[derive(Debug, clap::Args)]
pub struct SuiteArgs {
    /// The suite to run, or `list` for the suites and their sources
    #[arg(value_name = "NAME")]
    pub name: String,
    /// A directory on the storage to test (the suite writes its files in a directory of its
    /// own there, and removes it)
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Runs of each condition (the table gives their median and spread)
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// One run of each condition with smaller sizes and shorter recordings (under 2 minutes)
    #[arg(long)]
    pub quick: bool,
    /// The result's format (json: the suite result, every run's figures in it)
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<sinkrate_model::suite::SuiteRun>(), default_value = "text")]
    pub output_format: Format,
    /// Keep every run's JSON here, and the table as JSON, Markdown and HTML
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Suites that format filesystems (filesystems, metadata's mounts) make them on this
    /// block device instead of emulated devices; what it holds is destroyed
    #[arg(long, value_name = "DEVICE")]
    pub scratch: Option<PathBuf>,
    /// Format --scratch although it holds a filesystem or another signature
    #[arg(long)]
    pub force: bool,
    /// The card the emulated devices copy when PATH is not on an emulated device:
    /// sd-class10, sd-uhs1-u3, usb2-stick, usb3-ssd, emmc
    #[arg(long, default_value = "sd-class10")]
    pub model: String,
    /// Progress bar on standard error: auto (on a terminal), always, never
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub progress: When,
    /// The recording for the suites that record (filesystems, background-load,
    /// capture-buffers), after --, as sinkrate record takes it (default: --profile dual-1080p30)
    #[arg(last = true, value_name = "RECORD_FLAGS")]
    pub record_flags: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A directory on the storage to check (sinkrate writes its test files here, and removes them)
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// About 15 s instead of about a minute
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub rate: StreamRateArgs,
    /// Write mode of the recording test: buffered, direct, dsync, uring
    #[arg(long, value_enum, default_value_t = WriteModeArg::Buffered)]
    pub write_mode: WriteModeArg,
    #[command(flatten)]
    pub endurance: EnduranceArgs,
    /// Where the full JSON report goes (default: sinkrate-check-DATE-TIME.json in the
    /// current directory, or in /tmp when that is not writable)
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the run's HTML report (charts of what happened; see sinkrate report) to
    /// FILE.html, replacing it as --output does
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Print the full report as JSON on standard output instead of the table
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<sinkrate_model::check::CheckRun>(), default_value = "text")]
    pub output_format: Format,
    /// Progress bar on standard error: auto (on a terminal), always, never
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub progress: When,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub color: When,
    /// Flags for the recording test, after --, as sinkrate record takes them
    /// (e.g. -- --streams 3 --fps 25 --bitrate 8M --buffers 8)
    #[arg(last = true, value_name = "RECORD_FLAGS")]
    pub record_flags: Vec<String>,
}

/// The card's endurance and the recorder's duty cycle, for the lifetime estimate.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EnduranceArgs {
    /// The card's endurance, for how long it lasts at this recording: bytes written with a
    /// unit (40TB, 500GB, 2TiB) or hours of video at a bitrate as cards are rated
    /// (20000h@26M); default: what the device says of itself (SMART, an emulated card)
    #[arg(long, value_name = "BYTES|HOURSh@BITRATE")]
    pub endurance: Option<String>,
    /// Hours a day the recorder records, for the lifetime estimate (above 0, at most 24)
    #[arg(long, value_name = "HOURS", default_value_t = 24.0)]
    pub hours_per_day: f64,
}

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// The trace to write: fio's iolog v3; every call also goes to TRACE.calls.jsonl
    /// [default: capture.iolog in this directory, or capture-2.iolog... when taken]
    #[arg(long, value_name = "TRACE")]
    pub output: Option<PathBuf>,
    /// Replace TRACE and its calls file if they exist (a trace is never replaced otherwise)
    #[arg(long)]
    pub force: bool,
    /// The result's format, on standard output
    #[arg(long, visible_alias = "format", value_name = "FORMAT", value_parser = plan::parser::<Envelope<sinkrate_model::capture::CaptureReport>>(), default_value = "text")]
    pub output_format: Format,
    /// Capture a recorder already running, by its process id: it is stopped at every
    /// system call (a filter cannot be added to a running process), so its cost is higher
    /// than a capture of a command; Ctrl-C lets it go and it runs on
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<i32>,
    /// Stop the recorder at every traced call, writes included, instead of letting a
    /// dynamically linked recorder report its writes and syncs through the interposer
    /// (slower: two stops a write; for comparison, or a recorder the interposer upsets)
    #[arg(long, conflicts_with = "pid")]
    pub ptrace_only: bool,
    /// The recorder's calls slower than this are explained from the kernel's events
    /// (throttled, waiting for writeback, a journal commit, the device, the CPU)
    #[arg(long, default_value = "100ms", value_parser = values::duration_value)]
    pub stall_threshold: std::time::Duration,
    /// Do not read the kernel's trace events (the recorder's slow calls are then listed
    /// without their causes)
    #[arg(long)]
    pub no_kernel_events: bool,
    /// The recorder to run and capture (after --)
    #[arg(last = true, required_unless_present = "pid", value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Time between samples, 10ms or more
    #[arg(long, default_value = "100ms", value_parser = values::duration_value)]
    pub interval: std::time::Duration,
    /// Stop after this long (e.g. 30s, 5m); default: until Ctrl-C or the command ends
    #[arg(long, value_parser = values::duration_value)]
    pub duration: Option<std::time::Duration>,
    /// Count only this block device (as in /proc/diskstats); repeatable; default: every disk
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,
    /// Sample until these processes have exited; repeatable
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// The watched program's write calls slower than this are explained from the kernel's
    /// events (throttled, waiting for writeback, a journal commit, the device, the CPU)
    #[arg(long, default_value = "100ms", value_parser = values::duration_value)]
    pub stall_threshold: std::time::Duration,
    /// Do not read the kernel's trace events (the watched program's slow writes are then
    /// not listed)
    #[arg(long)]
    pub no_kernel_events: bool,
    #[command(flatten)]
    pub out: OutputArgs<Envelope<sinkrate_model::watch::WatchReport>>,
    /// Also write the run's HTML report (charts of what happened; see sinkrate report) to
    /// FILE.html, replacing it as --output does
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Also write every sample to FILE as CSV
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Keep FILE up to date in node_exporter's textfile format (counters per device,
    /// throttled time, stalls), replaced at once; at the end it says the watch stopped
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// How often to rewrite the --prometheus file (1s or more; a scrape every 15 s needs no
    /// more, and a file on the card under test costs it a write each time)
    /// [default: 5s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration_value)]
    pub prometheus_every: Option<std::time::Duration>,
    /// One live line per second on standard error: auto (on a terminal), always, never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = When::Auto)]
    pub live: When,
    /// A full-screen live view instead of the live line (q quits)
    #[arg(long)]
    pub tui: bool,
    /// The command to run and watch (after --)
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum EmulateAction {
    /// Build an emulated device and mount it at MOUNTPOINT (an empty or new directory)
    #[command(after_help = EMULATE_EXAMPLES)]
    Up(Box<EmulateUpArgs>),
    /// Remove every piece of the emulated device at MOUNTPOINT, also after a crash
    Down {
        /// Where the emulated device is mounted
        mountpoint: PathBuf,
    },
    /// Show the emulated devices that are up
    List {
        /// The result's format
        #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<Vec<sinkrate_emulate::stack::Listed>>(), default_value = "text")]
        output_format: Format,
    },
}

#[derive(Debug, clap::Args)]
pub struct EmulateUpArgs {
    /// Where to mount the emulated device (created if missing; must be empty)
    pub mountpoint: PathBuf,
    /// Device size (dd units: 1G = 1 GiB, 1GB = 10^9 bytes)
    #[arg(long, default_value = "1G")]
    pub size: String,
    /// A preset: sd-class10, sd-uhs1-u3, usb2-stick, usb3-ssd, emmc (its rate and latency)
    #[arg(long)]
    pub model: Option<String>,
    /// A card profile: a shipped one by name (px4-sandisk-ultra-plus-16g, v10-just-meets,
    /// ...; docs/emulate.md lists them with their sources) or a profile file
    /// (sinkrate.card-profile/1): its rate, busy times, pauses, random-write IOPS, SLC cache
    /// and metadata cost
    #[arg(long, value_name = "NAME|FILE", conflicts_with_all = ["model", "write_rate", "write_latency", "service_time", "gc_pauses", "slc_cache"])]
    pub profile: Option<String>,
    /// Sustained write rate in bytes per second (20M = 20 MiB/s, 20MB = 20 MB/s)
    #[arg(long, alias = "rate")]
    pub write_rate: Option<String>,
    /// Read rate; reads share the write budget (one bus), so a faster read rate is capped at it
    #[arg(long)]
    pub read_rate: Option<String>,
    /// Added to every write request (e.g. 2ms)
    #[arg(long)]
    pub write_latency: Option<String>,
    /// Added to every read request (e.g. 500us)
    #[arg(long)]
    pub read_latency: Option<String>,
    /// Filesystem to make on the device
    #[arg(long, value_enum, default_value_t = values::EmulateFs::Ext4)]
    pub fs: values::EmulateFs,
    /// Extra mkfs options, as one string (e.g. "-O ^has_journal")
    #[arg(long, allow_hyphen_values = true)]
    pub mkfs_opts: Option<String>,
    /// Mount options (e.g. noatime,data=writeback)
    #[arg(long, default_value = "")]
    pub mount_opts: String,
    /// Share of requests that fail once mounted, 0 to 1 (e.g. 0.01)
    #[arg(long)]
    pub error_rate: Option<String>,
    /// The error injected
    #[arg(long, value_enum, default_value_t = values::InjectedError::Eio)]
    pub error: values::InjectedError,
    /// Which requests fail
    #[arg(long, value_enum, default_value_t = values::ErrorOn::All)]
    pub error_on: values::ErrorOn,
    /// Keep the data in this sparse file instead of memory (used anyway for sizes beyond half of RAM)
    #[arg(long)]
    pub backing_file: Option<PathBuf>,
    /// Overwrite a --backing-file that already holds data or a filesystem (never one in use)
    #[arg(long)]
    pub force: bool,
    /// Seconds of rate the device may burst after idling (low keeps the first seconds
    /// honest); default 0.1
    #[arg(long, value_name = "SECONDS")]
    pub burstiness: Option<f64>,
    /// Device model: every request costs this on top of its length at the rate, and the card
    /// serves one request at a time (e.g. 1ms)
    #[arg(long, value_name = "DURATION")]
    pub service_time: Option<String>,
    /// Device model: garbage-collection pauses, PAUSE/BYTES after every BYTES written, or
    /// PAUSE/~BYTES at random with that mean (e.g. 250ms/32M, 400ms/~64M)
    #[arg(long, value_name = "PAUSE/BYTES")]
    pub gc_pauses: Option<String>,
    /// Device model: an SLC cache of SIZE taking writes at RATE until full, emptied at the
    /// card's rate while idle (e.g. 512M@90M)
    #[arg(long, value_name = "SIZE@RATE")]
    pub slc_cache: Option<String>,
    /// Device model: a volatile write cache of SIZE; what a flush has not written is lost on a
    /// power cut (e.g. 8M)
    #[arg(long, value_name = "SIZE")]
    pub volatile_cache: Option<String>,
    /// Device model: a counterfeit that reports SIZE but holds only --size (e.g. --size 1G
    /// --fake-capacity 8G)
    #[arg(long, value_name = "SIZE")]
    pub fake_capacity: Option<String>,
    /// Device model: bad sectors, OFFSET+LENGTH (e.g. 8M+64K): every read or write touching
    /// them fails with EIO once the device is ready (after mkfs and mount)
    #[arg(long, value_name = "OFFSET+LENGTH")]
    pub bad_sectors: Option<String>,
    /// Device model: the card wears out after BYTES written once it is ready (mkfs and mount
    /// not counted), as MODE says: read-only (every later write refused, as many SD cards
    /// do at end of life; the default), errors (writes fail ever more often, all of them at
    /// twice BYTES) or stale (writes succeed and are lost: reads return earlier data)
    #[arg(long, value_name = "BYTES[:MODE]")]
    pub wear_out: Option<String>,
    /// What the counterfeit does with writes past what it holds: wrap (overwrite the start)
    /// or drop (lose them; reads give zeros)
    #[arg(long, value_name = "MODE", default_value = "wrap", value_parser = ["wrap", "drop"])]
    pub fake_mode: String,
    /// The result's format
    #[arg(long, value_name = "FORMAT", value_parser = plan::parser::<sinkrate_emulate::stack::State>(), default_value = "text")]
    pub output_format: Format,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// fio job files to run ('-' reads one from standard input)
    #[arg(value_name = "JOB.fio")]
    pub job_files: Vec<PathBuf>,

    /// Output formats, comma-separated: normal, json, json+, terse
    #[arg(long, value_name = "FORMAT", default_value = "normal")]
    pub output_format: String,

    /// Write the results to FILE instead of standard output
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the run's HTML report (charts of what happened; see sinkrate report) to
    /// FILE.html, replacing it as --output does
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,

    /// Check job files and options, print the resolved jobs, and do no I/O
    #[arg(long)]
    pub parse_only: bool,

    /// Warn about options sinkrate does not support instead of refusing the job
    #[arg(long)]
    pub ignore_unsupported: bool,

    /// Refuse any job that writes or trims (fio's --readonly): a safety check for read-only
    /// tests
    #[arg(long)]
    pub readonly: bool,

    /// Print the job files as the command line that runs the same jobs, and exit (fio's
    /// --showcmd)
    #[arg(long)]
    pub showcmd: bool,

    /// Print every fio option sinkrate takes with a line of help, or OPTION's type, default
    /// and values, and exit (fio's --cmdhelp)
    #[arg(long, value_name = "OPTION", num_args = 0..=1, default_missing_value = "all")]
    pub cmdhelp: Option<String>,

    /// Print a compressed log (a .fz file of log_store_compressed) as its text lines, and
    /// exit (fio's --inflate-log)
    #[arg(long = "inflate-log", value_name = "FILE")]
    pub inflate_log: Option<PathBuf>,

    /// Terse, semicolon-separated results (fio's --minimal: --output-format=terse)
    #[arg(long)]
    pub minimal: bool,

    /// The terse format's version: 3, fio's default, is the one sinkrate writes
    #[arg(long, value_name = "N")]
    pub terse_version: Option<u32>,

    /// Refuse a run of more than N jobs (numjobs clones counted), as fio's --max-jobs
    #[arg(long, value_name = "N")]
    pub max_jobs: Option<usize>,

    /// Write the run's aggregate bandwidth, all jobs together, every 500 ms to
    /// agg-read_bw.log, agg-write_bw.log and agg-trim_bw.log (fio's --bandwidth-log)
    #[arg(long)]
    pub bandwidth_log: bool,

    /// fio's --debug: io (each I/O's stages), file (files set up, opened, closed) and mem
    /// (the memory and descriptors the set was planned to need), a line each on standard
    /// output in fio's format
    #[arg(long, value_name = "io,file,mem")]
    pub debug: Option<String>,

    /// Print the results so far (cumulative from each job's start) every TIME, in the
    /// output format, before the final ones (fio's --status-interval; seconds without a unit)
    #[arg(long, value_name = "TIME", value_parser = values::duration_value)]
    pub status_interval: Option<std::time::Duration>,

    /// Make every warning about the job files fatal (fio's --warnings-fatal): exit 2 before
    /// any I/O instead of a note
    #[arg(long)]
    pub warnings_fatal: bool,

    /// Say sinkrate's notes and warnings on standard error even when it is not a terminal.
    /// They are always in the results (the text's closing lines, the JSON's notices and
    /// warnings); standard error otherwise stays as silent as fio's
    #[arg(long)]
    pub notes: bool,

    /// Run only the job file's section of this name (may be given more than once), as fio
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,

    /// Write to block devices even when mounted or holding a filesystem (destroys their data)
    #[arg(long, alias = "allow-mounted-write")]
    pub force: bool,

    /// Keep the files the jobs make even where a job says unlink=1 (as fio, a job keeps
    /// them by default; a run stopped by Ctrl-C or killed removes those it made)
    #[arg(long)]
    pub keep: bool,

    /// Save and load the jobs' verify states (verify_state_save, verify_state_load) in DIR
    /// instead of the current directory (fio's --aux-path)
    #[arg(long = "aux-path", value_name = "DIR")]
    pub aux_path: Option<PathBuf>,

    /// Stop every job TIME after the start, as a power cut would, saving the writing jobs'
    /// verify states (fio's --trigger-timeout; seconds without a unit)
    #[arg(long = "trigger-timeout", value_name = "TIME", value_parser = values::duration_value)]
    pub trigger_timeout: Option<std::time::Duration>,

    /// Stop every job once FILE exists, saving the writing jobs' verify states (fio's
    /// --trigger-file)
    #[arg(long = "trigger-file", value_name = "FILE")]
    pub trigger_file: Option<PathBuf>,

    /// Run COMMAND (with sh -c) once a trigger has stopped the jobs and their states are
    /// saved: a power switch, a reboot (fio's --trigger)
    #[arg(long = "trigger", value_name = "COMMAND")]
    pub trigger: Option<String>,

    /// When to show the live status line: auto (on a terminal), always, never
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub eta: String,

    /// Sample the page cache, thresholds, disks and CPU this often during the run (the
    /// timeline and its summary go into the JSON)
    #[arg(long, value_name = "DURATION", default_value = "100ms")]
    pub sample_interval: String,

    /// Do not run the sampler alongside the jobs
    #[arg(long)]
    pub no_sampler: bool,

    /// fio job options (--name=..., --rw=..., --bs=..., ...); collected from the command line
    #[arg(skip)]
    pub job_options: Vec<String>,
}

/// The first line of a multi-line message (clap's errors carry usage lines after it).
pub fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string()
}

/// A clap error as one line: its message, the possible values and tips it gives, without
/// the usage block and the "For more information" line.
/// A negative number given as a flag's value (`--fps -5`), which clap would report as an
/// unknown argument: the flag and what it takes instead. Arguments after `--` belong to
/// another program (watch's command) or are checked on their own (check's record flags).
pub fn negative_value<A: AsRef<std::ffi::OsStr>>(args: &[A]) -> Option<String> {
    let end = args
        .iter()
        .position(|a| a.as_ref() == "--")
        .unwrap_or(args.len());
    args[..end].windows(2).find_map(|pair| {
        let (flag, value) = (
            pair[0].as_ref().to_string_lossy(),
            pair[1].as_ref().to_string_lossy(),
        );
        let negative = value
            .strip_prefix('-')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
        (flag.starts_with("--") && !flag.contains('=') && negative)
            .then(|| format!("{flag}: '{value}' is negative (expected a positive value)"))
    })
}

pub fn one_line_error(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .map(|l| l.trim_start_matches("error: "))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_negative_value_names_its_flag() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            super::negative_value(&args(&["sinkrate", "record", "--fps", "-5"])).as_deref(),
            Some("--fps: '-5' is negative (expected a positive value)")
        );
        assert_eq!(
            super::negative_value(&args(&["sinkrate", "watch", "--", "tool", "--n", "-5"])),
            None
        );
        assert_eq!(
            super::negative_value(&args(&["sinkrate", "record", "--dir", "-x"])),
            None
        );
    }

    #[test]
    fn clap_errors_become_one_line() {
        let text = "error: invalid value 'x' for '--write-mode <WRITE_MODE>'\n  [possible values: buffered, direct]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            super::one_line_error(text),
            "invalid value 'x' for '--write-mode <WRITE_MODE>' [possible values: buffered, direct]"
        );
    }
}
