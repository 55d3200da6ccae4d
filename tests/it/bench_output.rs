//! Output formats: fio-compatible JSON inside the sinkrate schema, terse, fio-style text
//! (layout snapshot with timing fields masked), fio-format logs, help, man page, completions.

use crate::common;
use crate::common::FioOutput;

use common::{sinkrate, sinkrate_json};

#[test]
fn json_has_the_schema_and_fio_keys() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--size=64m",
        ],
    );
    assert_eq!(v["schema"], "sinkrate.run/1");
    assert!(v["tool"]["version"].is_string());
    assert!(v["host"]["cpu_count"].as_u64().is_some_and(|c| c >= 1));
    assert!(v["host"]["kernel"].is_string());
    assert!(v["timestamp_ms"].as_u64().is_some());
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "n");
    let read = job["read"]["io_bytes"].as_u64().expect("read io_bytes");
    let write = job["write"]["io_bytes"].as_u64().expect("write io_bytes");
    assert_eq!(read + write, 64 << 20);
    for key in [
        "iops",
        "bw",
        "bw_bytes",
        "runtime",
        "total_ios",
        "io_kbytes",
    ] {
        assert!(job["read"][key].is_number(), "read.{key}");
    }
    for key in ["min", "max", "mean", "stddev", "N"] {
        assert!(job["read"]["clat_ns"][key].is_number(), "clat_ns.{key}");
        assert!(job["read"]["lat_ns"][key].is_number(), "lat_ns.{key}");
    }
    assert!(job["read"]["clat_ns"]["percentile"]["99.000000"].is_number());
    for key in ["usr_cpu", "sys_cpu", "ctx", "job_runtime"] {
        assert!(job[key].is_number(), "{key}");
    }
    assert!(job["iodepth_level"]["1"].is_number());
    assert!(job["latency_us"]["2"].is_number());
    assert_eq!(
        v["config"]["jobs"][0]["options"]["bs"],
        serde_json::json!([4096, 4096, 4096])
    );
}

#[test]
fn json_plus_has_histogram_bins_and_terse_has_fio_fields() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = sinkrate()
        .current_dir(d.path())
        .args([
            "--name=n",
            "--ioengine=null",
            "--size=8m",
            "--output-format=json+",
        ])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let bins = v["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .expect("bins");
    let total: u64 = bins.values().filter_map(|c| c.as_u64()).sum();
    assert_eq!(total, 2048);
    let out = sinkrate()
        .current_dir(d.path())
        .args([
            "--name=n",
            "--ioengine=null",
            "--size=8m",
            "--output-format=terse",
        ])
        .output()
        .expect("runs");
    let line = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = line.trim().split(';').collect();
    assert_eq!(fields.len(), 121);
    assert_eq!(fields[0], "3");
    assert_eq!(fields[2], "n");
    assert_eq!(fields[5], "8192", "read KiB");
}

/// Masks every number except the exact I/O counts, so the snapshot pins the layout.
fn mask(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("target:"))
        .map(|l| {
            if l.contains("issued rwts") {
                return l.to_string();
            }
            let mut out = String::new();
            let mut in_number = false;
            for c in l.chars() {
                if c.is_ascii_digit() || (in_number && c == '.') {
                    if !in_number {
                        out.push('N');
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    out.push(c);
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn text_output_layout_is_fio_like() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = sinkrate()
        .current_dir(d.path())
        .args([
            "--name=snap",
            "--ioengine=null",
            "--rw=write",
            "--bs=64k",
            "--size=64m",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let masked = mask(&String::from_utf8_lossy(&out.stdout));
    let lines: Vec<&str> = masked.lines().collect();
    // Headings and their order, as fio prints them.
    let expected_prefixes = [
        "snap: (groupid=N, jobs=N): err= N: pid=N:",
        "  write: IOPS=N",
        "    clat (",
        "     lat (",
        "    clat percentiles (",
        "     |  Nth=[   N],  Nth=[   N], Nth=[   N], Nth=[   N],",
    ];
    for (i, p) in expected_prefixes.iter().enumerate() {
        assert!(
            lines[i].starts_with(p),
            "line {i}: '{}' does not start with '{p}'\n{masked}",
            lines[i]
        );
    }
    assert!(masked.contains("  cpu          : usr=N%, sys=N%, ctx=N, majf=N, minf=N"));
    assert!(masked.contains("  IO depths    : N=N%, N=N%, N=N%, N=N%, N=N%, N=N%, >=N=N%"));
    assert!(masked.contains("     issued rwts: total=0,1024,0,0 short=0,0,0,0 dropped=0,0,0,0"));
    assert!(masked.contains("Run status group N (all jobs):"));
    assert!(
        masked.contains("  WRITE: bw=NMiB/s (NMB/s)")
            || masked.contains("  WRITE: bw=NGiB/s (NGB/s)"),
        "{masked}"
    );
}

#[test]
fn logs_are_in_fio_format() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = sinkrate()
        .current_dir(d.path())
        .args([
            "--name=lg",
            "--ioengine=null",
            "--size=1g",
            "--time_based",
            "--runtime=1",
            "--write_bw_log=lg",
            "--write_lat_log=lg",
            "--write_iops_log=lg",
            "--log_avg_msec=200",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    for kind in ["bw", "iops", "lat", "clat", "slat"] {
        let text = std::fs::read_to_string(d.path().join(format!("lg_{kind}.1.log"))).expect(kind);
        if kind == "slat" {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 3, "{kind}: {text}");
        for l in &lines {
            let cols: Vec<&str> = l.split(", ").collect();
            assert_eq!(cols.len(), 5, "{kind}: {l}");
            assert!(cols.iter().all(|c| c.parse::<u64>().is_ok()), "{kind}: {l}");
        }
        let times: Vec<u64> = lines
            .iter()
            .map(|l| {
                l.split(", ")
                    .next()
                    .and_then(|t| t.parse().ok())
                    .expect("time")
            })
            .collect();
        // Whole windows are logged at their ticks on the job's clock (as fio's helper
        // thread logs them), however late the I/O that closed them: 200, 400, 600, 800 ms
        // (one the machine kept the job from may be missing, never moved). The tick at
        // 1000 ms is the job's end, which logs no rate window; a latency log adds its last,
        // partial window at the end.
        let whole = if kind == "bw" || kind == "iops" {
            times.len()
        } else {
            assert!(times[times.len() - 1] >= 1000, "{kind}: {times:?}");
            times.len() - 1
        };
        assert!(whole >= 1, "{kind}: {times:?}");
        for t in &times[..whole] {
            assert!(t % 200 == 0 && *t < 1000, "{kind}: {times:?}");
        }
        for pair in times[..whole].windows(2) {
            assert!(pair[1] > pair[0], "{kind}: {times:?}");
        }
    }
}

#[test]
fn help_man_and_completions_are_generated() {
    let help = assert_cmd::Command::cargo_bin("sinkrate")
        .expect("bin")
        .args(["bench", "--help"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Examples:") && text.contains("sinkrate bench job.fio"),
        "{text}"
    );
    let man = assert_cmd::Command::cargo_bin("sinkrate")
        .expect("bin")
        .arg("man")
        .output()
        .expect("runs");
    let roff = String::from_utf8_lossy(&man.stdout);
    assert!(roff.contains(".TH sinkrate") && roff.contains("sinkrate-bench"));
    let comp = assert_cmd::Command::cargo_bin("sinkrate")
        .expect("bin")
        .args(["completions", "bash"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&comp.stdout).contains("_sinkrate"));
}

#[test]
fn direct_io_on_tmpfs_is_flagged_as_memory() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        common::skip(
            "direct_io_on_tmpfs_is_flagged_as_memory",
            "no /dev/shm tmpfs here",
        );
        return;
    }
    let d = tempfile::tempdir_in(shm).expect("tempdir on tmpfs");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=t",
            "--rw=write",
            "--bs=64k",
            "--size=4m",
            "--direct=1",
        ],
    );
    let ids: Vec<&str> = v["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["id"].as_str())
        .collect();
    // Either tmpfs accepted O_DIRECT (it measures RAM) or refused it (the job ran buffered).
    assert!(
        ids.contains(&"direct.no_device") || ids.contains(&"direct.fell_back"),
        "{ids:?}"
    );
    assert_eq!(v["targets"][0]["fs_type"], "tmpfs");
}

#[test]
fn eta_always_writes_status_lines_off_a_terminal_and_auto_does_not() {
    let d = tempfile::tempdir().expect("tmp");
    let run = |eta: &str| {
        let out = std::process::Command::new(common::sinkrate_path())
            .current_dir(d.path())
            .args([
                "bench",
                &format!("--eta={eta}"),
                "--name=e",
                "--rw=write",
                "--size=8m",
                "--rate=8m",
                "--filename=e.dat",
            ])
            .output()
            .expect("runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let always = run("always");
    let lines: Vec<&str> = always
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("Jobs: "))
        .collect();
    assert!(!lines.is_empty(), "no status line: {always:?}");
    assert!(
        !always.contains('\x1b'),
        "escape codes off a terminal: {always:?}"
    );
    // Every line's rate is the job's (8 MiB/s), the first one too.
    for l in &lines {
        if let Some(rate) = l.split("[w=").nth(1).and_then(|r| r.split(']').next()) {
            assert!(
                rate.ends_with("MiB/s") || rate.ends_with("KiB/s"),
                "{l}: {rate}"
            );
        }
    }
    assert!(
        !run("auto").contains("Jobs: "),
        "auto off a terminal draws nothing"
    );
}

/// Standard error stays as silent as fio's when it is not a terminal (harnesses, fio's own
/// among them, take any line there for a failure): sinkrate's notes and warnings are in the
/// results, the text's closing lines and the JSON's `notices` and `warnings`, and on
/// standard error with `--notes`. fio beside runs the same job as silently.
#[test]
fn standard_error_is_as_silent_as_fios_and_notes_stay_in_the_results() {
    let job = [
        "--name=q",
        "--filename=q",
        "--rw=write",
        "--bs=64k",
        "--size=1m",
        "--write_bw_log=q",
    ];
    let run = |extra: &[&str]| {
        let d = tempfile::tempdir().expect("tempdir");
        let out = sinkrate()
            .current_dir(d.path())
            .args(job)
            .args(extra)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (text, err) = run(&[]);
    assert_eq!(err, "", "nothing on standard error");
    assert!(text.contains("note: job 'q': wrote log"), "{text}");
    assert!(text.contains("warning ["), "{text}");
    let (json, err) = run(&["--output-format=json"]);
    assert_eq!(err, "", "nothing on standard error");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert!(v["notices"].to_string().contains("wrote log"), "{v}");
    assert!(!v["warnings"].as_array().expect("warnings").is_empty());
    let (_, err) = run(&["--output-format=json", "--notes"]);
    assert!(err.contains("sinkrate: note: job 'q': wrote log"), "{err}");
    assert!(err.contains("sinkrate: warning ["), "{err}");
    if common::fio_or_skip("standard_error_is_as_silent_as_fios (fio beside)") {
        let d = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new("fio")
            .current_dir(d.path())
            .args(job)
            .fio_output();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "fio's standard error"
        );
    }
}

/// json+ as fio writes it: `bins` for slat, clat and lat wherever their percentiles are on,
/// keyed by fio's bin values. The write clat bins hold exactly the job's own per-I/O clat
/// log binned as fio bins it; a key names a bin as fio's run of the same job names it;
/// fio's `fio_jsonplus_clat2csv` turns the document into CSV with every latency's columns
/// filled, and validates them against it.
#[test]
fn json_plus_bins_are_fios_for_every_latency() {
    if !common::fio_or_skip("json_plus_bins_are_fios_for_every_latency") {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let job = [
        "--name=p",
        "--ioengine=io_uring",
        "--iodepth=4",
        "--rw=write",
        "--bs=4k",
        "--size=4m",
        "--slat_percentiles=1",
        "--lat_percentiles=1",
        "--write_lat_log=p",
        "--unlink=1",
    ];
    let ours_path = d.path().join("ours.json");
    let out = sinkrate()
        .current_dir(d.path())
        .args(job)
        .arg("--output-format=json+")
        .arg(format!("--output={}", ours_path.display()))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&ours_path).expect("json+")).expect("json");
    let write = &ours["jobs"][0]["write"];
    for lat in ["slat_ns", "clat_ns", "lat_ns"] {
        let total: u64 = write[lat]["bins"]
            .as_object()
            .unwrap_or_else(|| panic!("{lat} bins in {}", write[lat]))
            .values()
            .filter_map(serde_json::Value::as_u64)
            .sum();
        assert_eq!(total, 1024, "{lat}");
    }
    // The clat bins against the per-I/O clat log.
    let mut from_log = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(d.path().join("p_clat.1.log"))
        .expect("clat log")
        .lines()
    {
        let ns: u64 = line
            .split(", ")
            .nth(1)
            .and_then(|v| v.parse().ok())
            .expect("clat");
        *from_log.entry(common::fio_bin(ns)).or_insert(0u64) += 1;
    }
    let mut from_bins = std::collections::BTreeMap::new();
    for (key, count) in write["clat_ns"]["bins"].as_object().expect("bins") {
        let key: u64 = key.parse().expect("a number");
        *from_bins.entry(common::fio_bin(key)).or_insert(0u64) += count.as_u64().expect("count");
    }
    assert_eq!(from_bins, from_log);
    // A bin's name is fio's: the same key for the same bin in fio's json+ of the same job.
    let fio_dir = tempfile::tempdir().expect("tempdir");
    let fio = common::fio_json(
        fio_dir.path(),
        &[&job[..], &["--output-format=json+"]].concat(),
    );
    let fio_keys: std::collections::BTreeMap<u64, u64> = ["slat_ns", "clat_ns", "lat_ns"]
        .iter()
        .flat_map(|lat| {
            fio["jobs"][0]["write"][lat]["bins"]
                .as_object()
                .map(|b| b.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .filter_map(|k| k.parse::<u64>().ok())
        .map(|k| (common::fio_bin(k), k))
        .collect();
    let mut shared = 0;
    for lat in ["slat_ns", "clat_ns", "lat_ns"] {
        for key in write[lat]["bins"].as_object().expect("bins").keys() {
            let key: u64 = key.parse().expect("a number");
            if let Some(theirs) = fio_keys.get(&common::fio_bin(key)) {
                assert_eq!(key, *theirs, "{lat}: bin {}", common::fio_bin(key));
                shared += 1;
            }
        }
    }
    assert!(shared > 0, "no bin in common with fio's run");
    // fio's own reader: every latency's columns, validated against the document.
    let csv = d.path().join("p.csv");
    for validate in [false, true] {
        let mut cmd = std::process::Command::new("fio_jsonplus_clat2csv");
        cmd.arg(&ours_path).arg(&csv);
        if validate {
            cmd.arg("--validate");
        }
        let out = cmd.output().expect("fio_jsonplus_clat2csv runs");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(d.path().join("p_job0.csv")).expect("CSV");
    let header: Vec<&str> = text.lines().next().expect("header").split(", ").collect();
    let filled = |column: &str| {
        let at = header
            .iter()
            .position(|h| h.trim() == column)
            .unwrap_or_else(|| panic!("{column} in {header:?}"));
        text.lines()
            .skip(1)
            .any(|l| l.split(',').nth(at).is_some_and(|v| !v.trim().is_empty()))
    };
    for column in [
        "write_slat_ns_count",
        "write_clat_ns_count",
        "write_lat_ns_count",
    ] {
        assert!(filled(column), "{column} is empty");
    }
}

/// unified_rw_reporting, beside fio: `mixed` alone (read, write and trim left out) sums
/// the directions; `both` writes all four; terse puts the sum in the read slot and has no
/// write slot; the text has a `mixed:` block and a `MIXED:` group line.
#[test]
fn unified_rw_reporting_sums_the_directions_as_fio_does() {
    let base = [
        "--name=u",
        "--rw=randrw",
        "--size=2m",
        "--bs=4k",
        "--ioengine=null",
    ];
    for mode in ["mixed", "both"] {
        let arg = format!("--unified_rw_reporting={mode}");
        let args: Vec<&str> = base.iter().copied().chain([arg.as_str()]).collect();
        let fio_dir = tempfile::tempdir().expect("tempdir");
        let ours_dir = tempfile::tempdir().expect("tempdir");
        let fio = common::fio_json(fio_dir.path(), &args);
        let ours = sinkrate_json(ours_dir.path(), &args);
        let keys = |v: &serde_json::Value| -> Vec<&str> {
            ["read", "write", "trim", "mixed"]
                .into_iter()
                .filter(|k| v["jobs"][0].get(*k).is_some())
                .collect()
        };
        assert_eq!(keys(&ours), keys(&fio), "{mode}");
        let j = &ours["jobs"][0];
        assert_eq!(j["mixed"]["io_bytes"], 2 << 20, "{mode}");
        assert_eq!(j["mixed"]["total_ios"], 512, "{mode}");
        assert_eq!(j["mixed"]["clat_ns"]["N"], 512, "{mode}");
    }
    let terse = |tool: &str| -> usize {
        let d = tempfile::tempdir().expect("tempdir");
        let mut all: Vec<&str> = base.to_vec();
        all.extend(["--unified_rw_reporting=mixed", "--output-format=terse"]);
        let out = if tool == "fio" {
            std::process::Command::new("fio")
                .current_dir(d.path())
                .args(&all)
                .fio_output()
        } else {
            sinkrate()
                .current_dir(d.path())
                .args(&all)
                .output()
                .expect("runs")
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text.lines().find(|l| l.starts_with("3;")).unwrap_or("");
        // The null engine has no disk: no utilisation fields at the end.
        line.split(';').count()
    };
    assert_eq!(terse("sinkrate"), terse("fio"));
    let d = tempfile::tempdir().expect("tempdir");
    let out = sinkrate()
        .current_dir(d.path())
        .args(base)
        .arg("--unified_rw_reporting=1")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  mixed: IOPS="), "{text}");
    assert!(text.contains("  MIXED: bw="), "{text}");
    assert!(!text.contains("  read: IOPS="), "{text}");
}
