//! Every input sinkrate reads from a user or the system, as one function per fuzz target:
//! job files and fio-style options, /proc files, superblocks and boot sectors, verify's block
//! headers and undo journals, and the JSON results `report` and `compare` read.
//!
//! The same functions run under libFuzzer (`fuzz/`, nightly, through `bench/fuzz`) and replay
//! the committed corpus in the ordinary test suite on stable (`tests/corpus.rs`), so a crash
//! once found stays a test. A target returns nothing: an error is a fine answer to a bad
//! input; a panic, a hang or an unbounded allocation is a finding.

use std::path::Path;

/// A fuzz target: its name (the corpus folder `fuzz/corpus/<name>/`) and its entry point.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "job_file",
        run: job_file,
    },
    Target {
        name: "job_options",
        run: job_options,
    },
    Target {
        name: "proc_files",
        run: proc_files,
    },
    Target {
        name: "disk_headers",
        run: disk_headers,
    },
    Target {
        name: "result_json",
        run: result_json,
    },
    Target {
        name: "trace_format",
        run: trace_format,
    },
    Target {
        name: "trace_page",
        run: trace_page,
    },
];

/// A tracefs `format` file (or `events/header_page`), as the kernel's tracing reader learns
/// it: the first byte picks the event kind and the word size.
pub fn trace_format(data: &[u8]) {
    #[cfg(target_os = "linux")]
    trace_format_linux(data);
    #[cfg(not(target_os = "linux"))]
    let _ = data;
}

#[cfg(target_os = "linux")]
fn trace_format_linux(data: &[u8]) {
    use sinkrate_procparse::trace::{Decoder, EventKind, PageLayout};
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let _ = PageLayout::parse(text, which & 0x80 != 0);
    let layout = PageLayout {
        long_bytes: if which & 0x40 != 0 { 4 } else { 8 },
        data_offset: if which & 0x40 != 0 { 12 } else { 16 },
        big_endian: which & 0x80 != 0,
    };
    let mut decoder = Decoder::new(&layout);
    let kind = EventKind::ALL[usize::from(which) % EventKind::ALL.len()];
    if decoder.learn(kind, text).is_ok() {
        // A record as long as the format's own fields claim, all bytes set.
        let bytes = vec![0xA5u8; 256];
        let record = sinkrate_procparse::trace::PageRecord {
            ts_ns: 0,
            data: &bytes,
        };
        let _ = decoder.decode(0, &record);
    }
}

/// A ring-buffer page as `trace_pipe_raw` returns it, decoded with every event the reader
/// knows taught from this kernel's formats (the fixtures' own), on 64- and 32-bit layouts.
pub fn trace_page(data: &[u8]) {
    #[cfg(target_os = "linux")]
    trace_page_linux(data);
    #[cfg(not(target_os = "linux"))]
    let _ = data;
}

#[cfg(target_os = "linux")]
fn trace_page_linux(data: &[u8]) {
    use sinkrate_procparse::trace::{decode_page, Decoder, EventKind, PageLayout};
    let Some((&which, page)) = data.split_first() else {
        return;
    };
    let layout = PageLayout {
        long_bytes: if which & 1 != 0 { 4 } else { 8 },
        data_offset: if which & 1 != 0 { 12 } else { 16 },
        big_endian: which & 2 != 0,
    };
    let mut decoder = Decoder::new(&layout);
    for (kind, format) in sinkrate_procparse::trace::fixtures::FORMATS_6_18 {
        let _ = decoder.learn(*kind, format);
    }
    let _ = EventKind::ALL;
    if let Ok(p) = decode_page(&layout, page) {
        for r in &p.records {
            let _ = decoder.decode(0, r);
        }
    }
}

/// The grammar's view of the world: `include` finds only `inc.fio` (the input itself, so
/// include cycles are reachable), one environment variable, fio's reserved words.
struct World<'a> {
    text: &'a str,
}

impl sinkrate_jobspec::SourceContext for World<'_> {
    fn read_file(&self, path: &Path) -> Result<String, String> {
        if path.file_name().is_some_and(|n| n == "inc.fio") {
            Ok(self.text.to_string())
        } else {
            Err("No such file or directory".into())
        }
    }
    fn env_var(&self, name: &str) -> Option<String> {
        (name == "SIZE").then(|| "4m".to_string())
    }
    fn reserved(&self, name: &str) -> Option<String> {
        match name {
            "pagesize" => Some("4096".into()),
            "ncpus" => Some("2".into()),
            "mb_memory" => Some("1024".into()),
            _ => None,
        }
    }
}

/// A fio job file, resolved into jobs as `sinkrate bench JOB.fio` does.
pub fn job_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let texts = [(Path::new("fuzz.fio").to_path_buf(), text.to_string())];
    let _ = sinkrate_jobspec::build_job_set(
        &sinkrate_jobspec::JobSources {
            files: &[],
            texts: &texts,
            cli_options: &[],
            ignore_unsupported: false,
        },
        &World { text },
    );
}

/// Command-line options, one per line (`--rw=randwrite`, `--name=a`, ...), resolved as
/// `sinkrate bench --key=value ...` does; and each line's value through the unit parsers
/// the other commands use for sizes, rates, durations and bitrates.
pub fn job_options(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options: Vec<String> = text.lines().map(str::to_string).collect();
    let _ = sinkrate_jobspec::build_job_set(
        &sinkrate_jobspec::JobSources {
            files: &[],
            texts: &[],
            cli_options: &options,
            ignore_unsupported: true,
        },
        &World { text },
    );
    use sinkrate_units::fio as units;
    for line in text.lines() {
        let value = line.split_once('=').map_or(line, |(_, v)| v);
        let _ = units::parse_size(value, units::KbBase::Compat1024);
        let _ = units::parse_size(value, units::KbBase::Si1000);
        let _ = units::parse_time(value, units::TimeUnit::Seconds);
        let _ = units::parse_percent(value);
        let _ = units::parse_bool(value);
        let _ = units::parse_int(value);
        let _ = sinkrate_units::product::parse_size(value);
        let _ = sinkrate_units::product::parse_rate(value);
        let _ = sinkrate_units::product::parse_latency(value);
        let _ = sinkrate_units::product::parse_bitrate(value);
    }
}

/// A /proc file: the first byte picks the parser, the rest is the file's text.
pub fn proc_files(data: &[u8]) {
    use sinkrate_procparse as p;
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 9 {
        0 => drop(p::meminfo::parse(text)),
        1 => drop(p::vmstat::parse(text)),
        2 => drop(p::mountinfo::parse(text)),
        3 => drop(p::pid::parse_stat(text)),
        4 => drop(p::pid::parse_io(text)),
        5 => drop(p::cpustat::parse(text)),
        6 => text.lines().for_each(|l| {
            let _ = p::diskstats::parse_line(l);
        }),
        7 => drop(p::pressure::parse(text)),
        _ => drop(p::vmsettings::VmSettings::parse_with(|name| {
            // Each line `name value` stands for the sysctl file of that name.
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(str::to_string)
        })),
    }
}

/// Bytes read from a device: an ext4 superblock, a FAT/exFAT boot sector, the signatures at
/// its start and end, a capacity probe's sector tag, a verify block header and an undo
/// journal; and fio's verify state file, which `verify_state_load` reads.
pub fn disk_headers(data: &[u8]) {
    let _ = sinkrate_formats::superblock::parse_ext4(data);
    // An image from its first byte: the superblock sits at 1024.
    let _ = sinkrate_formats::superblock::parse_ext4(data.get(1024..).unwrap_or_default());
    let _ = sinkrate_formats::superblock::parse_cluster_bytes(data);
    let _ = sinkrate_formats::signature::detect(data);
    // The device's size from the first bytes, so tails longer and shorter than it are tried.
    let size = data
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes);
    let _ = sinkrate_formats::signature::detect_tail(data, size);
    let _ = sinkrate_formats::signature::detect_tail(data, data.len() as u64);
    let _ = sinkrate_formats::capacity_tag::read_tag(data);
    let expected = sinkrate_formats::verify_block::Expected {
        run_id: 1,
        generation: 0,
        block: 0,
        offset: 0,
        total_blocks: 1,
    };
    let _ = sinkrate_formats::verify_block::check(data, &expected);
    let _ = sinkrate_formats::undo_journal::parse(data);
    if let Ok(state) = sinkrate_formats::fio_verify_state::decode(data) {
        let _ = state.read_goes_past(u64::MAX, u64::MAX, u64::MAX);
        let _ = state.read_goes_past(0, 0, 0);
    }
}

/// A result file as `sinkrate report` and `sinkrate compare` read it: parsed, turned into
/// compare's runs and compared, and rendered as the HTML page.
pub fn result_json(data: &[u8]) {
    let Ok(document) = sinkrate_model::document::Document::parse("fuzz.json", data) else {
        return;
    };
    let input = sinkrate_report::Input {
        file: "fuzz.json".into(),
        label: "fuzz".into(),
        document,
    };
    let page = sinkrate_report::page(std::slice::from_ref(&input));
    let _ = sinkrate_report::html::render(&page, "fuzz");
    if let Ok(runs) = sinkrate_compare::runs("fuzz.json", input.document) {
        let config = sinkrate_compare::CompareConfig {
            grouped_by: None,
            labels: Vec::new(),
            baseline: None,
        };
        let _ = sinkrate_compare::compare(runs, Vec::new(), &config, Vec::new());
    }
}
