//! The command-line surface, defined once with clap; `--help`, the man page and the shell
//! completions are all generated from these definitions.

pub mod bench_args;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
    Bench(BenchArgs),
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

    /// Check job files and options, print the resolved jobs, and do no I/O
    #[arg(long)]
    pub parse_only: bool,

    /// Warn about options sinkrate does not support instead of refusing the job
    #[arg(long)]
    pub ignore_unsupported: bool,

    /// Write to block devices even when mounted or holding a filesystem (destroys their data)
    #[arg(long, alias = "allow-mounted-write")]
    pub force: bool,

    /// Keep the files sinkrate created (by default they are removed at the end and on Ctrl-C)
    #[arg(long)]
    pub keep: bool,

    /// When to show the live status line: auto (on a terminal), always, never
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub eta: String,

    /// fio job options (--name=..., --rw=..., --bs=..., ...); collected from the command line
    #[arg(skip)]
    pub job_options: Vec<String>,
}
