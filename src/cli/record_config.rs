//! The one place where `sinkrate record`'s arguments become a recording session: every
//! range check of a record flag is here, for `record`, for `check`'s flags after `--`, and
//! for `--find-max`.

use anyhow::{anyhow, Result};
use sinkrate_model::record::{FrameSizes, RecordConfig, StreamSpec};
use sinkrate_record::config::profile;
use sinkrate_record::find_max::MAX_STREAMS;
use sinkrate_record::session::{board_dirty_limits, Session};
use sinkrate_units::product::parse_bitrate;

use super::values::{size, Writers};
use super::RecordArgs;

/// The streams the flags describe, their label, and a profile's own fdatasync cadence.
fn streams(args: &RecordArgs) -> Result<(Vec<StreamSpec>, String, Option<std::time::Duration>)> {
    let custom = args.fps.is_some() || args.frame_size.is_some() || args.bitrate.is_some();
    if custom && args.profile.is_some() {
        return Err(anyhow!(
            "--profile cannot be combined with --fps/--frame-size/--bitrate (give one or the other)"
        ));
    }
    if !custom {
        if args.streams != 1 || args.gop.is_some() {
            return Err(anyhow!(
                "--streams and --gop shape custom streams: give them with --fps and --frame-size or --bitrate (a profile sets its own)"
            ));
        }
        let name = args.profile.as_deref().unwrap_or("dual-1080p30");
        let p = profile(name).map_err(|e| anyhow!(e))?;
        return Ok((
            (p.streams)(),
            format!("profile {}: {}", p.name, p.about),
            p.fdatasync_every,
        ));
    }
    let fps = args.fps.unwrap_or(30.0);
    if !(fps > 0.0 && fps <= 100_000.0) {
        return Err(anyhow!(
            "--fps: {fps} is out of range (above 0, at most 100000)"
        ));
    }
    if args.streams == 0 || args.streams > MAX_STREAMS {
        return Err(anyhow!(
            "--streams: {} is out of range (1 to {MAX_STREAMS})",
            args.streams
        ));
    }
    if args.gop == Some(0) {
        return Err(anyhow!(
            "--gop: 0 is out of range (1 or more frames per group of pictures)"
        ));
    }
    let sizes = match (&args.frame_size, &args.bitrate) {
        (Some(_), Some(_)) => return Err(anyhow!("give --frame-size or --bitrate, not both")),
        (Some(f), None) => FrameSizes::Fixed {
            bytes: size("frame-size", f)?,
        },
        (None, Some(b)) => FrameSizes::Bitrate {
            bits_per_s: parse_bitrate(b).map_err(|e| anyhow!("--bitrate: {e}"))?,
            gop: args.gop.unwrap_or(fps.round().max(1.0) as u32).max(1),
            i_to_p: 8.0,
            jitter: 0.2,
        },
        (None, None) => {
            return Err(anyhow!(
                "give --frame-size (e.g. 3M) or --bitrate (e.g. 12M) with --fps"
            ))
        }
    };
    let streams: Vec<StreamSpec> = (0..args.streams)
        .map(|i| StreamSpec {
            name: format!("cam{i}"),
            fps,
            sizes: sizes.clone(),
        })
        .collect();
    Ok((
        streams,
        format!("{} stream(s) x {fps} fps", args.streams),
        None,
    ))
}

/// The dirty limits --ram-limit or --dirty-limit ask for: (dirty_bytes, dirty_background_bytes).
fn dirty_limits(args: &RecordArgs) -> Result<Option<(u64, u64)>> {
    match (&args.ram_limit, &args.dirty_limit) {
        (Some(_), Some(_)) => Err(anyhow!("give --ram-limit or --dirty-limit, not both")),
        (None, None) => Ok(None),
        (Some(ram), None) => Ok(Some(board_dirty_limits(size("ram-limit", ram)?))),
        (None, Some(d)) => {
            let d = size("dirty-limit", d)?;
            Ok(Some((d, d / 2)))
        }
    }
}

/// Whether a power cut can be counted in this recording (`flag` names the option asking).
pub fn power_cut_fits(record: &sinkrate_model::record::RecordConfig, flag: &str) -> Result<()> {
    if record.write_mode == sinkrate_model::record::WriteMode::Null {
        return Err(anyhow!(
            "{flag}: --write-mode null writes nothing to lose (use buffered, direct, dsync or uring)"
        ));
    }
    // Each frame carries a 64-byte header to be found after the cut; a GOP's smallest
    // frames are a fraction of the mean.
    if let Some(s) = record
        .streams
        .iter()
        .find(|s| s.mean_frame_bytes() < 1024.0)
    {
        return Err(anyhow!(
            "{flag}: stream {}'s frames average {:.0} bytes; the count needs frames of 1 KiB or more (each carries a {}-byte header)",
            s.name,
            s.mean_frame_bytes(),
            sinkrate_record::frame_header::HEADER_LEN
        ));
    }
    Ok(())
}

/// How long a recording lasts when --duration is not given.
pub const DEFAULT_DURATION: std::time::Duration = std::time::Duration::from_secs(30);

/// `--speed 2x` (or 2, 0.5x): above 0, at most 100.
fn speed(text: &str) -> Result<f64> {
    let v: f64 = text
        .trim()
        .trim_end_matches(['x', 'X'])
        .parse()
        .map_err(|_| anyhow!("--speed {text}: a factor such as 2x or 0.5x"))?;
    // Slower than 0.01x, an hour's trace would replay for over four days.
    if !(0.01..=100.0).contains(&v) {
        return Err(anyhow!("--speed {text}: out of range (0.01x to 100x)"));
    }
    Ok(v)
}

/// `--replay TRACE`: the trace read and made a plan; the flags that shape emulated streams
/// refused (the recorder's own calls say what is written), the rest as for a recording.
fn replay_session(args: &RecordArgs, trace: &std::path::Path) -> Result<Session> {
    let given: &[(&str, bool)] = &[
        ("--profile", args.profile.is_some()),
        ("--frame-size", args.frame_size.is_some()),
        ("--bitrate", args.bitrate.is_some()),
        ("--gop", args.gop.is_some()),
        ("--streams", args.streams != 1),
        (
            "--write-mode",
            args.write_mode != super::values::WriteModeArg::Buffered,
        ),
        ("--writers", args.writers != Writers::PerStream),
        ("--write-size", args.write_size.is_some()),
        ("--fdatasync-frames", args.fdatasync_frames.is_some()),
        ("--fdatasync-every", args.fdatasync_every.is_some()),
        ("--segment-time", args.segment_time.is_some()),
        ("--segment-size", args.segment_size.is_some()),
        ("--loop-fill", args.loop_fill.is_some()),
        ("--preallocate", args.preallocate.is_some()),
        ("--power-cut-at", args.power_cut_at.is_some()),
        ("--verify-every", args.verify_every.is_some()),
        (
            "--find-max (other than speed)",
            args.find_max
                .is_some_and(|f| f != super::values::FindMaxArg::Speed),
        ),
        ("--duration", args.duration.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(anyhow!(
            "{flag} and --replay: a replay runs the recorder's own calls, which say what is written, how and for how long"
        ));
    }
    let speed = args.speed.as_deref().map(speed).transpose()?.unwrap_or(1.0);
    if args.buffers == 0 || args.buffers > 4096 {
        return Err(anyhow!(
            "--buffers: {} is out of range (1 to 4096)",
            args.buffers
        ));
    }
    if !args.dir.is_dir() {
        return Err(anyhow!(
            "--dir {}: not a directory (the replay's files go in a directory of their own under it)",
            args.dir.display()
        ));
    }
    // TRACE is the iolog (the calls beside it) or the calls file itself.
    let calls = if trace.to_string_lossy().ends_with(".calls.jsonl") {
        trace.to_path_buf()
    } else {
        sinkrate_capture::sidecar_path(trace)
    };
    let file = std::fs::File::open(&calls).map_err(|e| {
        anyhow!(
            "--replay {}: {e} (sinkrate capture writes TRACE and TRACE.calls.jsonl; replay needs the calls file)",
            calls.display()
        )
    })?;
    let name = trace.display().to_string();
    // Read as a stream into the plan: the calls are never held whole, and a file that is not
    // a trace (a device, a link to /dev/zero) ends at the reader's bounds.
    let mut builder = sinkrate_capture::plan::Builder::new(&name);
    let facts = sinkrate_capture::trace::read_sidecar_stream(
        std::io::BufReader::with_capacity(1 << 16, file),
        &mut |c| builder.add(&c),
    )
    .map_err(|e| anyhow!("--replay {}: {e}", calls.display()))?;
    let plan = builder
        .finish(facts.end.as_ref(), &facts.unseen, args.fps)
        .map_err(|e| anyhow!("--replay {name}: {e}"))?;
    // Refused before anything is written when the files would not fit.
    let free = sinkrate_sys::space::free_bytes(&args.dir).ok();
    if let Some(free) = free {
        let need = plan.peak_bytes + plan.peak_bytes / 20 + (16 << 20);
        if need > free {
            return Err(anyhow!(
                "--dir {}: the replay's files hold up to {:.1} MB at once ({:.1} MB with a margin); the file system has {:.1} MB free",
                args.dir.display(),
                plan.peak_bytes as f64 / 1e6,
                need as f64 / 1e6,
                free as f64 / 1e6
            ));
        }
    }
    let first = plan
        .streams
        .iter()
        .filter_map(|s| s.bursts.first().map(|b| b.at_ns))
        .min()
        .unwrap_or(0);
    let duration = std::time::Duration::from_nanos(
        ((plan.duration_ns.saturating_sub(first)) as f64 / speed) as u64,
    )
    .max(std::time::Duration::from_millis(1));
    let streams: Vec<StreamSpec> = plan
        .streams
        .iter()
        .filter(|s| s.judged)
        .map(|s| {
            let frames: Vec<u64> = s
                .bursts
                .iter()
                .map(|b| b.bytes)
                .filter(|b| *b > 0)
                .collect();
            StreamSpec {
                name: s.name.clone(),
                fps: s.fps * speed,
                sizes: FrameSizes::Fixed {
                    bytes: frames.iter().sum::<u64>() / frames.len().max(1) as u64,
                },
            }
        })
        .collect();
    let label = format!(
        "replay of {name}: {} recorder thread(s) writing, frames by {}{}",
        streams.len(),
        plan.grouping,
        if speed != 1.0 {
            format!(", at {speed}x")
        } else {
            String::new()
        }
    );
    let direct = plan.streams.iter().any(|s| s.direct);
    // The recorder's own calls: its write mode and one writer per recorder thread.
    let record = RecordConfig {
        write_mode: if direct {
            sinkrate_model::record::WriteMode::Direct
        } else {
            sinkrate_model::record::WriteMode::Buffered
        },
        shared_writer: false,
        replay: Some(std::sync::Arc::new(plan)),
        replay_speed: speed,
        ..record_config(args, streams, duration)
    };
    with_system_flags(args, record, label)
}

/// The one place a recording's config is built from record's arguments: its streams and
/// length, and everything the arguments say alike for a recording and a replay; what only
/// one of them sets (the replay's plan, a recording's syncs, segments and power cut) is
/// set over it by that one.
fn record_config(
    args: &RecordArgs,
    streams: Vec<StreamSpec>,
    duration: std::time::Duration,
) -> RecordConfig {
    RecordConfig {
        dir: args.dir.clone(),
        streams,
        buffers: args.buffers,
        write_mode: args.write_mode.into(),
        queue_depth: args.queue_depth,
        shared_writer: args.writers == Writers::Shared,
        write_size: None,
        fdatasync_every_frames: None,
        fdatasync_every: None,
        prealloc_mode: args.preallocate_mode.into(),
        preallocate: None,
        duration,
        stall_threshold: args.stall_threshold,
        seed: args.seed,
        keep: args.keep,
        frame_records: true,
        segments: sinkrate_model::record::SegmentPolicy {
            every: None,
            bytes: None,
            loop_fill_pct: None,
        },
        power_cut_at: None,
        verify_every: None,
        run_tag: 0,
        replay: None,
        replay_speed: 1.0,
    }
}

/// The session of `record`, with the flags every recording has beside its streams: the
/// endurance, the dirty limits and the board's RAM.
fn with_system_flags(args: &RecordArgs, record: RecordConfig, label: String) -> Result<Session> {
    let (endurance, hours_per_day) = super::values::endurance(&args.endurance)?;
    Ok(Session {
        power_switch: None,
        endurance: sinkrate_record::session::EnduranceFrom::given(endurance),
        hours_per_day,
        record,
        label,
        dirty_limits: dirty_limits(args)?,
        sustained_bytes_per_s: None,
        board_ram_bytes: args
            .ram_limit
            .as_deref()
            .map(|r| size("ram-limit", r))
            .transpose()?,
        kernel_events_off: args
            .no_kernel_events
            .then(|| "--no-kernel-events was given".to_string()),
    })
}

/// Every record flag, checked, as a session. Nothing is written or changed here.
pub fn session(args: &RecordArgs) -> Result<Session> {
    if let Some(trace) = &args.replay {
        return replay_session(args, trace);
    }
    if args.speed.is_some() {
        return Err(anyhow!("--speed: it sets the pace of a --replay"));
    }
    let (streams, label, profile_sync) = streams(args)?;
    let duration = args.duration.unwrap_or(DEFAULT_DURATION);
    if duration.is_zero() {
        return Err(anyhow!("--duration: must be above zero (e.g. 30s)"));
    }
    if args.stall_threshold.is_zero() {
        return Err(anyhow!(
            "--stall-threshold: must be above zero (e.g. 100ms)"
        ));
    }
    if args.buffers == 0 || args.buffers > 4096 {
        return Err(anyhow!(
            "--buffers: {} is out of range (1 to 4096)",
            args.buffers
        ));
    }
    if args.queue_depth == 0 || args.queue_depth > 1024 {
        return Err(anyhow!(
            "--queue-depth: {} is out of range (1 to 1024)",
            args.queue_depth
        ));
    }
    if args.fdatasync_frames == Some(0) {
        return Err(anyhow!(
            "--fdatasync-frames: 0 is out of range (1 or more frames; leave it out for none)"
        ));
    }
    if !args.dir.is_dir() {
        return Err(anyhow!(
            "--dir {}: not a directory (create it, or point --dir at the recording medium)",
            args.dir.display()
        ));
    }
    let time = |flag: &str, t: &Option<String>| -> Result<Option<std::time::Duration>> {
        t.as_deref()
            .map(|t| super::values::duration(flag, t))
            .transpose()
    };
    let segments = sinkrate_model::record::SegmentPolicy {
        every: time("segment-time", &args.segment_time)?,
        bytes: args
            .segment_size
            .as_deref()
            .map(|s| size("segment-size", s))
            .transpose()?,
        loop_fill_pct: args.loop_fill,
    };
    if let Some(p) = segments.loop_fill_pct {
        if !segments.segmented() {
            return Err(anyhow!(
                "--loop-fill needs segments to delete (add --segment-time or --segment-size)"
            ));
        }
        if !(1.0..=99.0).contains(&p) {
            return Err(anyhow!(
                "--loop-fill: {p} is out of range (1 to 99 percent)"
            ));
        }
    }
    if segments.every.is_some_and(|t| t.is_zero()) || segments.bytes == Some(0) {
        return Err(anyhow!(
            "--segment-time and --segment-size must be above zero"
        ));
    }
    let record = RecordConfig {
        write_size: args
            .write_size
            .as_deref()
            .map(|w| size("write-size", w))
            .transpose()?,
        fdatasync_every_frames: args.fdatasync_frames,
        fdatasync_every: time("fdatasync-every", &args.fdatasync_every)?.or(profile_sync),
        preallocate: args
            .preallocate
            .as_deref()
            .map(|p| size("preallocate", p))
            .transpose()?,
        segments,
        power_cut_at: args.power_cut_at,
        verify_every: args.verify_every,
        ..record_config(args, streams, duration)
    };
    if let Some(every) = record.verify_every {
        if every.is_zero() || every >= record.duration {
            return Err(anyhow!(
                "--verify-every {}s: must be above 0 and shorter than --duration {}s (the segments closed in the run are read back at that interval)",
                every.as_secs_f64(),
                record.duration.as_secs_f64()
            ));
        }
        if !record.segments.segmented() {
            return Err(anyhow!(
                "--verify-every reads back closed segments: give --segment-time or --segment-size too"
            ));
        }
        if record.write_mode == sinkrate_model::record::WriteMode::Null {
            return Err(anyhow!(
                "--verify-every and --write-mode null: nothing is written to read back"
            ));
        }
    }
    if let Some(at) = record.power_cut_at {
        if at.is_zero() || at >= record.duration {
            return Err(anyhow!(
                "--power-cut-at {}s: must fall inside the recording (above 0 and below --duration {}s)",
                at.as_secs_f64(),
                record.duration.as_secs_f64()
            ));
        }
        power_cut_fits(&record, "--power-cut-at")?;
        if args.find_max.is_some() {
            return Err(anyhow!(
                "--power-cut-at and --find-max: one cut per recording; run them separately"
            ));
        }
    }
    if record.write_size == Some(0) {
        return Err(anyhow!("--write-size: must be above zero (e.g. 4K)"));
    }
    with_system_flags(args, record, label)
}

/// The `sinkrate record` flags a user gave after `--` to a command that runs a recording for
/// its own ends (check's recording test, tune search, a suite's recordings): parsed once, by
/// the same definitions as `sinkrate record` itself, into typed arguments, with which of them
/// the user gave (clap's value source: `--fps=30`, `--fps 30` and a flag's alias alike). The
/// command then fills its own choices into the typed arguments, never into the text.
pub struct RecordFlags {
    pub args: RecordArgs,
    given: Vec<String>,
}

/// Record flags that describe the streams (their argument ids): given after `--`, they
/// replace the command's default profile.
const STREAM_ARGS: &[&str] = &[
    "profile",
    "fps",
    "frame_size",
    "bitrate",
    "streams",
    "gop",
    "replay",
];

/// Record flags every command that runs a recording session for its own ends sets itself:
/// where it records, what it prints and keeps.
const SESSION_ARGS: &[&str] = &[
    "dir",
    "output",
    "output_format",
    "live",
    "keep",
    "find_max",
    "frames_log",
];

impl RecordFlags {
    /// Parses `flags` (what followed `--`) and refuses, naming it, the first flag that the
    /// command (`who`) sets itself: the session flags, and its own `also` (argument ids).
    pub fn parse(flags: &[String], also: &[&str], who: &str) -> Result<RecordFlags> {
        use clap::{CommandFactory, FromArgMatches, Parser};
        #[derive(Parser)]
        #[command(name = "record flags after --", no_binary_name = true)]
        struct Flags {
            #[command(flatten)]
            args: RecordArgs,
        }
        if let Some(e) = super::negative_value(flags) {
            return Err(anyhow!("after --: {e}"));
        }
        let after = |e: clap::Error| anyhow!("after --: {}", super::first_line(&e.to_string()));
        let matches = Flags::command()
            .try_get_matches_from(flags)
            .map_err(after)?;
        let given: Vec<String> = matches
            .ids()
            .filter(|id| {
                matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
            })
            .map(|id| id.as_str().to_string())
            .collect();
        let args = Flags::from_arg_matches(&matches).map_err(after)?.args;
        let parsed = RecordFlags { args, given };
        let own = SESSION_ARGS.iter().chain(also).find(|id| parsed.given(id));
        if let Some(id) = own {
            return Err(anyhow!(
                "--{} after --: {who} sets it itself (accepted there: the stream, pool and write flags of sinkrate record, e.g. --buffers 8)",
                id.replace('_', "-")
            ));
        }
        Ok(parsed)
    }

    /// Whether the user gave the argument `id` (its field's name: `write_mode`).
    pub fn given(&self, id: &str) -> bool {
        self.given.iter().any(|g| g == id)
    }

    /// Whether the flags name the streams (and so replace the command's default profile).
    pub fn names_streams(&self) -> bool {
        STREAM_ARGS.iter().any(|id| self.given(id))
    }

    /// The command's default streams, where the flags name none: a built-in profile.
    pub fn default_profile(&mut self, name: &str) {
        if !self.names_streams() {
            self.args.profile = Some(name.to_string());
        }
    }
}
