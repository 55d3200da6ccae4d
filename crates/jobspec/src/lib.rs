//! fio-compatible job specifications: the job-file grammar, fio's option names and value
//! syntax, and the resolution of `[global]` sections, command-line options and `numjobs`
//! into a list of typed jobs.
//!
//! This crate does no I/O of its own: files and environment variables come through
//! [`grammar::SourceContext`], so every rule here is unit-tested without a file system.

pub mod behaviour;
pub mod buffer_shape;
pub mod coordination;
pub mod distribution;
pub mod engines;
pub mod error_policy;
mod fio_numbers;
pub mod grammar;
mod keyword_math;
pub mod options;
pub mod priority;
pub mod serde_directions;
pub mod showcmd;
pub mod table;
pub mod zones;

use std::fmt;
use std::path::{Path, PathBuf};

pub use grammar::{RawOption, RawSection, SourceContext};
pub use options::{Applied, ApplyError, JobOptions};

/// Where an option or section was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File { path: PathBuf, line: usize },
    CommandLine(String),
    BuiltIn,
}

impl Origin {
    pub fn file(path: &Path, line: usize) -> Origin {
        Origin::File {
            path: path.to_path_buf(),
            line,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line: 0 } => write!(f, "{}", path.display()),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::CommandLine(arg) => write!(f, "command line '{arg}'"),
            Origin::BuiltIn => write!(f, "built-in default job"),
        }
    }
}

/// A job-specification error: where, and what would be accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct SpecError {
    pub origin: Origin,
    pub message: String,
}

impl SpecError {
    pub fn new(origin: Origin, message: impl Into<String>) -> SpecError {
        SpecError {
            origin,
            message: message.into(),
        }
    }
}

/// The one line for an option sinkrate does not take: the options near its name (a
/// misspelling), else how many there are and where they are listed, never all of them in
/// one line.
fn unsupported_option(key: &str) -> String {
    let near = table::near(key);
    if near.is_empty() {
        format!(
            "option '{key}' is not supported by sinkrate (it takes {} of fio's options: sinkrate bench --cmdhelp lists them; --ignore-unsupported skips it)",
            options::supported_names().len()
        )
    } else {
        format!(
            "option '{key}' is not supported by sinkrate; did you mean {}? (--ignore-unsupported skips it)",
            near.join(" or ")
        )
    }
}

/// Something the user should read before the run starts (an ignored option, an engine mapped
/// to another backend, an option with no effect in sinkrate).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub origin: Origin,
    pub text: String,
    /// Something fio would do without a word (an engine mapped onto another, an option
    /// with nothing to change): kept in the results, not said on standard error.
    pub informational: bool,
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.text)
    }
}

/// One job to run: its options, where it was defined, its reporting group and, for jobs
/// cloned by `numjobs`, which clone it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub options: JobOptions,
    pub origin: Origin,
    pub group: u32,
    pub clone_index: u32,
    /// The job's own options as written, for fio's "job options": its section's (with
    /// `name` first when the job came from the command line's `--name`, as fio lists it).
    pub written: Vec<(String, String)>,
    /// The options every job of its file shares as written, for fio's "global options": the
    /// `[global]` sections before it and the command line's options before any `--name`.
    pub written_globals: Vec<(String, String)>,
}

/// All the jobs of one invocation, in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSet {
    pub jobs: Vec<Job>,
    pub notices: Vec<Notice>,
}

/// Where the job definitions come from.
pub struct JobSources<'a> {
    /// Job files, in order; `-` is not special here (the caller reads stdin itself).
    pub files: &'a [PathBuf],
    /// Job text already read (stdin, or a built-in default), with the name to report it by.
    pub texts: &'a [(PathBuf, String)],
    /// fio-style `--key=value` options from the command line.
    pub cli_options: &'a [String],
    pub ignore_unsupported: bool,
}

/// Resolves job files, command-line options and `numjobs` into the jobs to run.
///
/// With job files, command-line options before any `--name` override the files' values for
/// every job (so `--runtime=2 --size=16m` shrinks any job file); each `--name` adds a job.
/// Without job files, options before the first `--name` are global defaults, as in fio.
pub fn build_job_set(
    sources: &JobSources<'_>,
    ctx: &dyn SourceContext,
) -> Result<JobSet, SpecError> {
    let mut file_sections: Vec<Vec<RawSection>> = Vec::new();
    for path in sources.files {
        file_sections.push(grammar::parse_job_file(path, ctx)?);
    }
    for (path, text) in sources.texts {
        file_sections.push(grammar::parse_job_text(path, text, ctx)?);
    }
    let cli_sections = grammar::sections_from_args(sources.cli_options, ctx)?;
    let (cli_global, cli_jobs): (Vec<RawSection>, Vec<RawSection>) =
        cli_sections.into_iter().partition(RawSection::is_global);
    let cli_overrides: Vec<RawOption> = cli_global.into_iter().flat_map(|s| s.options).collect();

    let mut resolver = Resolver {
        ignore_unsupported: sources.ignore_unsupported,
        notices: Vec::new(),
        jobs: Vec::new(),
        group: 0,
    };
    let have_files = !file_sections.is_empty();
    for sections in &file_sections {
        resolver.add_sections(sections, &cli_overrides, &[])?;
    }
    if have_files {
        resolver.add_sections(&cli_jobs, &cli_overrides, &[])?;
    } else {
        resolver.add_sections(&cli_jobs, &[], &cli_overrides)?;
    }
    if resolver.jobs.is_empty() {
        let origin = sources
            .files
            .first()
            .or_else(|| sources.texts.first().map(|(p, _)| p))
            .map(|p| Origin::file(p, 0))
            .unwrap_or_else(|| Origin::CommandLine(sources.cli_options.join(" ")));
        return Err(SpecError::new(
            origin,
            "no jobs defined (add a [jobname] section to the job file, or --name=NAME on the command line)",
        ));
    }
    Ok(JobSet {
        jobs: resolver.jobs,
        notices: resolver.notices,
    })
}

struct Resolver {
    ignore_unsupported: bool,
    notices: Vec<Notice>,
    jobs: Vec<Job>,
    group: u32,
}

impl Resolver {
    /// `overrides` apply after a job's own options; `defaults` before them.
    fn add_sections(
        &mut self,
        sections: &[RawSection],
        overrides: &[RawOption],
        defaults: &[RawOption],
    ) -> Result<(), SpecError> {
        let mut global = JobOptions::default();
        let mut global_written: Vec<(String, String)> = Vec::new();
        let as_written = |o: &RawOption| (o.key.clone(), o.value.clone().unwrap_or_default());
        for option in defaults {
            self.apply(&mut global, option)?;
            global_written.push(as_written(option));
        }
        for section in sections {
            if section.is_global() {
                for option in &section.options {
                    self.apply(&mut global, option)?;
                    global_written.push(as_written(option));
                }
                continue;
            }
            let mut written = Vec::new();
            if matches!(section.origin, Origin::CommandLine(_)) {
                written.push(("name".to_string(), section.name.clone()));
            }
            written.extend(section.options.iter().map(as_written));
            let mut written_globals = global_written.clone();
            written_globals.extend(overrides.iter().map(as_written));
            let mut options = global.clone();
            options.name = section.name.clone();
            // A job inherits global stonewall/new_group only through its own section in fio.
            options.stonewall = false;
            options.new_group = false;
            for option in section.options.iter().chain(overrides) {
                self.apply(&mut options, option)?;
            }
            validate(&options).map_err(|m| SpecError::new(section.origin.clone(), m))?;
            if let Some(waitee) = &options.coordination.wait_for {
                if !self.jobs.iter().any(|j| &j.options.name == waitee) {
                    let mut earlier: Vec<&str> =
                        self.jobs.iter().map(|j| j.options.name.as_str()).collect();
                    earlier.dedup();
                    return Err(SpecError::new(
                        section.origin.clone(),
                        format!(
                            "wait_for={waitee}: no job of that name is defined before this one (jobs before it: {})",
                            if earlier.is_empty() { "none".to_string() } else { earlier.join(", ") }
                        ),
                    ));
                }
            }
            self.note_quirks(&options, &section.origin);
            if !self.jobs.is_empty() && (options.stonewall || options.new_group) {
                self.group += 1;
            }
            for clone_index in 0..options.numjobs {
                self.jobs.push(Job {
                    options: options.clone(),
                    origin: section.origin.clone(),
                    group: self.group,
                    clone_index,
                    written: written.clone(),
                    written_globals: written_globals.clone(),
                });
            }
        }
        Ok(())
    }

    fn apply(&mut self, options: &mut JobOptions, raw: &RawOption) -> Result<(), SpecError> {
        let applied = options.apply(&raw.key, raw.value.as_deref());
        for read in fio_numbers::take_read_as_fio() {
            if applied.is_ok() {
                self.notices.push(Notice {
                    origin: raw.origin.clone(),
                    text: format!("option '{}': {read}", raw.key),
                    informational: false,
                });
            }
        }
        match applied {
            Ok(Applied::Set) => Ok(()),
            Ok(Applied::NoEffect(why)) => {
                self.notices.push(Notice {
                    origin: raw.origin.clone(),
                    text: format!("option '{}' is accepted but has no effect: {why}", raw.key),
                    informational: true,
                });
                Ok(())
            }
            Ok(Applied::Notice(text)) => {
                self.notices.push(Notice {
                    origin: raw.origin.clone(),
                    text,
                    informational: true,
                });
                Ok(())
            }
            Err(ApplyError::BadValue(message)) => Err(SpecError::new(raw.origin.clone(), message)),
            Err(ApplyError::Unsupported) if self.ignore_unsupported => {
                self.notices.push(Notice {
                    origin: raw.origin.clone(),
                    text: format!(
                        "warning: option '{}' is not supported by sinkrate; ignored",
                        raw.key
                    ),
                    informational: false,
                });
                Ok(())
            }
            Err(ApplyError::Unsupported) => Err(SpecError::new(
                raw.origin.clone(),
                unsupported_option(&raw.key),
            )),
        }
    }

    fn note_quirks(&mut self, o: &JobOptions, origin: &Origin) {
        if o.iodepth > 1 && !o.ioengine.is_async() && o.ioengine != options::Engine::Null {
            self.notices.push(Notice {
                origin: origin.clone(),
                text: format!(
                    "iodepth={} has no effect with the synchronous engine {} (one I/O at a time)",
                    o.iodepth,
                    o.ioengine.fio_name()
                ),
                informational: true,
            });
        }
        if o.log_compression > 0 && !o.log_store_compressed {
            self.notices.push(Notice {
                origin: origin.clone(),
                text: "log_compression has no effect without log_store_compressed: sinkrate writes each log line to its file as it goes, so no log is held in memory to compress".into(),
                informational: true,
            });
        }
        if o.time_based && o.runtime.is_none() {
            self.notices.push(Notice {
                origin: origin.clone(),
                text: "time_based without runtime: the job ends when its size is done".into(),
                informational: true,
            });
        }
    }
}

/// Contradictions that fio refuses too; checked before any I/O, one concern at a time.
pub fn validate(o: &JobOptions) -> Result<(), String> {
    validate_size(o)?;
    validate_engine(o)?;
    validate_layout(o)?;
    validate_queue(o)?;
    validate_direction(o)?;
    validate_rates(o)?;
    validate_sync(o)?;
    validate_verify(o)?;
    if o.log_compression > 0 && o.log_store_compressed && o.write_hist_log.is_some() {
        return Err("log_store_compressed with write_hist_log: sinkrate stores the bandwidth, IOPS and latency logs compressed, not the histogram log (leave one out)".into());
    }
    Ok(())
}

/// The job's size against its blocks.
fn validate_size(o: &JobOptions) -> Result<(), String> {
    let max_bs = max_block_size(o);
    if let Some(options::SizeSpec::Bytes(size)) = o.size {
        if size == 0 {
            return Err("size=0: nothing to do (give a size such as size=1g)".into());
        }
        if max_bs > size && !o.ioengine.is_file_operation() {
            return Err(format!(
                "block size {max_bs} is larger than size {size} (make size at least one block)"
            ));
        }
    }
    Ok(())
}

/// What one engine needs (cpuio's load, exec's program, nbd's export) or refuses.
fn validate_engine(o: &JobOptions) -> Result<(), String> {
    match o.ioengine {
        options::Engine::Cpuio => {
            if o.cpuload.is_none() {
                return Err(
                    "ioengine=cpuio needs cpuload= (the percent of each cycle to burn, 1 to 100)"
                        .into(),
                );
            }
            if o.runtime.is_none() && !o.exit_on_io_done {
                return Err("ioengine=cpuio needs runtime= or exit_on_io_done=1 (otherwise it burns forever)".into());
            }
        }
        options::Engine::Exec if o.program.is_none() => {
            return Err("ioengine=exec needs program= (the program to run beside the jobs)".into());
        }
        options::Engine::Nbd => validate_nbd(o)?,
        options::Engine::PageFault => validate_page_fault(o)?,
        _ => {}
    }
    if o.uri.is_some() && o.ioengine != options::Engine::Nbd {
        return Err(format!(
            "uri= is an option of ioengine=nbd, not of ioengine={} (set ioengine=nbd, or leave uri out)",
            o.ioengine.fio_name()
        ));
    }
    Ok(())
}

/// Zones and the written data's shape.
fn validate_layout(o: &JobOptions) -> Result<(), String> {
    if o.zones.mode == zones::ZoneMode::None && o.zones.size > 0 {
        return Err(
            "zonesize= without zonemode=strided: fio 3.33 refuses it too (add zonemode=strided, or leave zonesize out)"
                .into(),
        );
    }
    if o.zones.strided().is_some() && o.random_distribution.is_some() {
        return Err("zonemode=strided with random_distribution: a strided job draws its random offsets evenly within each zone (leave random_distribution out)".into());
    }
    let shape = &o.buffer_shape;
    if shape.dedupe_global && shape.dedupe_mode != buffer_shape::DedupeMode::WorkingSet {
        return Err("dedupe_global=1 with dedupe_mode=repeat: sinkrate shares deduplicated buffers between jobs through a working set (use dedupe_mode=working_set)".into());
    }
    if shape.shapes() && (o.zero_buffers || o.verify.is_some()) {
        return Err(format!(
            "buffer_compress_percentage/dedupe_percentage with {}: the written data cannot be both (leave one out)",
            if o.zero_buffers { "zero_buffers" } else { "verify" }
        ));
    }
    Ok(())
}

/// How I/Os are queued and submitted: iodepth_low, openfiles, priorities, offload.
fn validate_queue(o: &JobOptions) -> Result<(), String> {
    if let Some(low) = o.behaviour.iodepth_low {
        if low < o.iodepth && o.ioengine.is_async() {
            return Err(format!(
                "iodepth_low={low} below iodepth={}: sinkrate refills the queue as each I/O completes (use iodepth_low={} or leave it out)",
                o.iodepth, o.iodepth
            ));
        }
    }
    if let Some(open) = o.behaviour.openfiles {
        let files = match &o.filename {
            Some(list) => list.split(':').filter(|n| !n.is_empty()).count().max(1) as u32,
            None => o.nrfiles,
        };
        if open < files && !o.ioengine.is_metadata() && !o.ioengine.is_side_load() {
            return Err(format!(
                "openfiles={open} with {files} files: sinkrate keeps all of a job's files open (use openfiles={files} or more, or fewer files)"
            ));
        }
    }
    o.priorities
        .validate(o.ioengine == options::Engine::IoUring)?;
    if o.coordination.offload && o.priorities.per_command() {
        return Err("cmdprio options with io_submit_mode=offload: offload's submitter threads issue I/O without a per-command priority (leave one out)".into());
    }
    if o.coordination.offload
        && !matches!(
            o.ioengine,
            options::Engine::Sync
                | options::Engine::Psync
                | options::Engine::Vsync
                | options::Engine::Pvsync
                | options::Engine::IoUring
                | options::Engine::Null
        )
    {
        return Err(format!(
            "io_submit_mode=offload with ioengine={}: offload hands reads and writes to submitter threads (use a read/write engine such as psync, libaio or io_uring)",
            o.ioengine.fio_name()
        ));
    }
    Ok(())
}

/// Which directions and patterns an engine or mode can take.
fn validate_direction(o: &JobOptions) -> Result<(), String> {
    if o.ioengine.is_metadata()
        && !matches!(
            o.rw.direction,
            options::Direction::Read | options::Direction::Write
        )
    {
        return Err(format!(
            "rw={} with ioengine={}: each create, stat or delete counts in one direction (use rw=read or rw=write)",
            o.rw.fio_name(),
            o.ioengine.fio_name()
        ));
    }
    if o.fill_device
        && (o.rw.direction != options::Direction::Write
            || o.rw.pattern != options::Pattern::Sequential
            || o.ioengine.is_file_operation())
    {
        return Err(format!(
            "fill_device with rw={} and ioengine={}: filling writes sequentially until the storage is full (use rw=write on a read/write engine)",
            o.rw.fio_name(),
            o.ioengine.fio_name()
        ));
    }
    if o.read_iolog.is_some()
        && (o.ioengine.is_file_operation() || o.ioengine.is_side_load() || o.verify.is_some())
    {
        return Err(format!(
            "read_iolog with ioengine={}{}: a trace replays reads, writes, trims and syncs on a block-I/O engine without verify (use psync, libaio or io_uring)",
            o.ioengine.fio_name(),
            if o.verify.is_some() { " and verify" } else { "" }
        ));
    }
    if o.rw.trims() && !o.ioengine.is_side_load() {
        use options::Engine as E;
        if !matches!(
            o.ioengine,
            E::Sync | E::Psync | E::Vsync | E::Pvsync | E::IoUring | E::Null | E::Falloc | E::Nbd
        ) {
            return Err(format!(
                "rw={} with ioengine={}: this engine has no trim (use psync, libaio or io_uring on a block device, or falloc on a file)",
                o.rw.fio_name(),
                o.ioengine.fio_name()
            ));
        }
        if o.ioengine == E::Falloc && o.rw.writes() {
            return Err(format!(
                "rw={} with ioengine=falloc: falloc's writes allocate rather than write (use rw=trim or randtrim, or a read/write engine on a block device)",
                o.rw.fio_name()
            ));
        }
    }
    Ok(())
}

/// Rate floors under their ceilings; steady state's window.
fn validate_rates(o: &JobOptions) -> Result<(), String> {
    for d in 0..3 {
        if o.rate[d] > 0 && o.rate_min[d] > o.rate[d] {
            return Err(format!(
                "rate_min ({}) is above rate ({}): the job could never meet it",
                o.rate_min[d], o.rate[d]
            ));
        }
        if o.rate_iops[d] > 0 && o.rate_iops_min[d] > o.rate_iops[d] {
            return Err(format!(
                "rate_iops_min ({}) is above rate_iops ({}): the job could never meet it",
                o.rate_iops_min[d], o.rate_iops[d]
            ));
        }
    }
    if o.ss.is_some() && o.ss_dur.is_none() {
        return Err(
            "ss= needs ss_dur= (how long the metric must stay steady, e.g. ss_dur=30s)".into(),
        );
    }
    if let (Some(_), Some(dur)) = (o.ss, o.ss_dur) {
        if dur.as_millis() % o.ss_interval.as_millis().max(1) != 0 || dur < o.ss_interval {
            return Err(format!(
                "ss_dur={}s is not a multiple of ss_interval={}s (the window holds whole intervals)",
                dur.as_secs_f64(),
                o.ss_interval.as_secs_f64()
            ));
        }
    }
    Ok(())
}

/// Direct I/O's alignment and the sync cadence.
fn validate_sync(o: &JobOptions) -> Result<(), String> {
    if o.direct {
        for d in 0..3 {
            if o.bsrange.is_none() && o.bssplit.is_none() && o.bs[d] % 512 != 0 {
                return Err(format!(
                    "direct=1 needs block sizes that are multiples of 512 (bs={} is not)",
                    o.bs[d]
                ));
            }
        }
    }
    if o.fsync > 0 && o.fdatasync > 0 {
        return Err("fsync= and fdatasync= are both set: choose one".into());
    }
    Ok(())
}

/// What an NBD export cannot do that a file can: the engine speaks only the NBD protocol.
fn validate_nbd(o: &JobOptions) -> Result<(), String> {
    if o.uri.is_none() {
        return Err("ioengine=nbd needs uri= (the server's NBD URI, e.g. uri=nbd+unix:///?socket=/tmp/sock or uri=nbd://localhost:10809/)".into());
    }
    if o.nrfiles > 1 || o.filename.as_deref().is_some_and(|f| f.contains(':')) {
        return Err("ioengine=nbd reads and writes one export per job (leave nrfiles= and a filename= list out)".into());
    }
    if o.sync_file_range.is_some() {
        return Err("sync_file_range with ioengine=nbd: an export has no page cache to write back (use fsync=, which sends NBD flushes)".into());
    }
    Ok(())
}

/// fio's page_fault engine maps `size=` bytes for the job and refuses what would reach
/// outside them.
fn validate_page_fault(o: &JobOptions) -> Result<(), String> {
    if o.nrfiles > 1 || o.filename.as_deref().is_some_and(|f| f.contains(':')) {
        return Err("ioengine=page_fault maps one region of memory per job (leave nrfiles= and a filename= list out)".into());
    }
    let zero = |s: &options::SizeSpec| matches!(s, options::SizeSpec::Bytes(0));
    if !zero(&o.offset) || !zero(&o.offset_increment) {
        return Err("offset= with ioengine=page_fault: the job's memory starts at 0, as fio's engine refuses any other start (leave offset= and offset_increment= out)".into());
    }
    if o.fill_device {
        return Err(
            "fill_device with ioengine=page_fault: memory has no end to fill up to (use size=)"
                .into(),
        );
    }
    Ok(())
}

fn validate_verify(o: &JobOptions) -> Result<(), String> {
    let Some(method) = o.verify else {
        return Ok(());
    };
    let name = method.fio_name();
    if method == options::VerifyMethod::Pattern && o.verify_pattern.is_none() {
        return Err("verify=pattern needs verify_pattern= (the bytes every block holds, e.g. verify_pattern=0xdeadbeef)".into());
    }
    let header = method.header_bytes();
    if min_block_size(o) < header {
        return Err(format!(
            "verify={name} writes a {header}-byte header into every block: bs must be {header} or more"
        ));
    }
    if o.ioengine == options::Engine::Null {
        return Err(format!(
            "verify={name} with ioengine=null: nothing is stored to read back (use a real ioengine)"
        ));
    }
    if o.rw.trims() {
        return Err(format!(
            "verify={name} with rw={}: sinkrate verifies jobs that only write (a trimmed block has no data to check)",
            o.rw.fio_name()
        ));
    }
    let interval = verify_interval(o);
    if interval > 0 {
        if method == options::VerifyMethod::Pattern {
            return Err("verify_interval with verify=pattern: a pattern block has no headers to space out (use a checksum method, or leave verify_interval out)".into());
        }
        if interval < header {
            return Err(format!(
                "verify_interval={interval}: each interval holds a {header}-byte verify={name} header (use {header} or more)"
            ));
        }
        let sizes = block_sizes(o);
        if let Some(bs) = sizes.iter().find(|bs| **bs % interval != 0) {
            return Err(format!(
                "verify_interval={} does not divide the block size {bs} (fio needs it to divide every block evenly)",
                interval
            ));
        }
    }
    Ok(())
}

/// Every block size the job can issue (fixed, bssplit entries, or a range's two ends).
fn block_sizes(o: &JobOptions) -> Vec<u64> {
    let d = if o.rw.writes() {
        options::WRITE
    } else {
        options::READ
    };
    if let Some(split) = &o.bssplit {
        split[d].iter().map(|e| e.0).collect()
    } else if let Some(range) = &o.bsrange {
        vec![range[d].0, range[d].1]
    } else {
        vec![o.bs[d]]
    }
}

/// The verify_interval a job uses: as fio's, at most its smallest block (a larger one is
/// cut to it); 0 when not given (a header per block).
pub fn verify_interval(o: &JobOptions) -> u64 {
    o.verify_interval.min(min_block_size(o))
}

/// The smallest block size the verified direction can have.
fn min_block_size(o: &JobOptions) -> u64 {
    block_sizes(o)
        .into_iter()
        .min()
        .unwrap_or(o.bs[options::WRITE])
}

/// The largest block size a job can issue, over both directions and all block-size options.
pub fn max_block_size(o: &JobOptions) -> u64 {
    o.rw.active()
        .into_iter()
        .enumerate()
        .filter(|(_, active)| *active)
        .map(|(d, _)| {
            let rw = options::read_write_slot(d);
            if let Some(split) = &o.bssplit {
                split[rw].iter().map(|e| e.0).max().unwrap_or(o.bs[d])
            } else if let Some(range) = &o.bsrange {
                range[rw].1
            } else {
                o.bs[d]
            }
        })
        .max()
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Files(HashMap<PathBuf, String>);
    impl SourceContext for Files {
        fn read_file(&self, path: &Path) -> Result<String, String> {
            self.0
                .get(path)
                .cloned()
                .ok_or_else(|| "No such file or directory (os error 2)".into())
        }
        fn env_var(&self, _: &str) -> Option<String> {
            None
        }
        fn reserved(&self, _: &str) -> Option<String> {
            None
        }
    }

    fn build(files: &[(&str, &str)], cli: &[&str], ignore: bool) -> Result<JobSet, SpecError> {
        let ctx = Files(
            files
                .iter()
                .map(|(p, t)| (PathBuf::from(p), t.to_string()))
                .collect(),
        );
        let paths: Vec<PathBuf> = files
            .iter()
            .take(1)
            .map(|(p, _)| PathBuf::from(p))
            .collect();
        let cli: Vec<String> = cli.iter().map(|s| s.to_string()).collect();
        build_job_set(
            &JobSources {
                files: &paths,
                texts: &[],
                cli_options: &cli,
                ignore_unsupported: ignore,
            },
            &ctx,
        )
    }

    #[test]
    fn globals_apply_to_later_jobs_only_and_cli_overrides_win() {
        let text = "[a]\nsize=1m\n[global]\nbs=8k\nruntime=60\n[b]\nsize=2m\n[c]\nstonewall\nnumjobs=2\nsize=1m\n";
        let set = build(&[("j.fio", text)], &["--runtime=2"], false).expect("builds");
        let names: Vec<_> = set.jobs.iter().map(|j| j.options.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "c"]);
        assert_eq!(set.jobs[0].options.bs, [4096; 3]);
        assert_eq!(set.jobs[1].options.bs, [8192; 3]);
        assert_eq!(
            set.jobs[1].options.runtime,
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(
            set.jobs[0].options.runtime,
            Some(std::time::Duration::from_secs(2))
        );
        let groups: Vec<_> = set.jobs.iter().map(|j| j.group).collect();
        assert_eq!(groups, [0, 0, 1, 1]);
        assert_eq!(set.jobs[3].clone_index, 1);
    }

    #[test]
    fn command_line_only_jobs() {
        let set = build(
            &[],
            &[
                "--bs=64k",
                "--name=x",
                "--rw=write",
                "--size=1m",
                "--name=y",
                "--size=2m",
            ],
            false,
        )
        .expect("builds");
        assert_eq!(set.jobs.len(), 2);
        assert_eq!(set.jobs[0].options.bs, [65536; 3]);
        assert_eq!(set.jobs[1].options.bs, [65536; 3]);
        assert_eq!(set.jobs[1].options.rw.fio_name(), "read");
    }

    #[test]
    fn unsupported_option_names_file_line_and_alternatives() {
        let e = build(&[("job.fio", "[j]\nsize=1m\nverify_async=2\n")], &[], false).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "job.fio:3: option 'verify_async' is not supported by sinkrate (it takes "
            ),
            "{text}"
        );
        assert!(text.ends_with("; --ignore-unsupported skips it)"), "{text}");
        assert!(text.len() < 200, "one short line: {text}");
        // A misspelt option gets the options near it.
        let e = build(&[("job.fio", "[j]\nsize=1m\nblocksze=4k\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("did you mean blocksize"), "{e}");
        let ok =
            build(&[("job.fio", "[j]\nsize=1m\nverify_async=2\n")], &[], true).expect("ignored");
        assert!(ok
            .notices
            .iter()
            .any(|n| n.text.contains("'verify_async' is not supported")));
    }

    #[test]
    fn contradictions_are_refused() {
        let e = build(&[("j.fio", "[j]\nsize=4k\nbs=1m\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("larger than size"), "{e}");
        let e = build(&[("j.fio", "[j]\nrwmixread=150\n")], &[], false).unwrap_err();
        assert_eq!(e.origin, Origin::file(Path::new("j.fio"), 2));
        let e = build(&[("j.fio", "[j]\nss=iops:1%\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("ss_dur"));
        let e = build(&[("j.fio", "[j]\nrate=1m\nrate_min=2m\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("rate_min"));
        let e = build(&[("j.fio", "[j]\ndirect=1\nbs=1000\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("512"));
        let e = build(&[("j.fio", "[global]\nbs=4k\n")], &[], false).unwrap_err();
        assert!(e.to_string().contains("no jobs defined"));
    }

    #[test]
    fn notices_for_mapped_engines_and_no_effect_options() {
        let set = build(
            &[("j.fio", "[j]\nioengine=libaio\niodepth=4\n")],
            &[],
            false,
        )
        .expect("builds");
        assert!(set
            .notices
            .iter()
            .any(|n| n.text.contains("io_uring backend")));
        let set =
            build(&[("j.fio", "[j]\nioengine=psync\niodepth=8\n")], &[], false).expect("builds");
        assert!(set
            .notices
            .iter()
            .any(|n| n.text.contains("synchronous engine")));
    }
}
