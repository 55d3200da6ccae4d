//! `sinkrate compare` on real results: recordings made here, grouped by what differs and
//! rendered in every format; fio's own JSON beside sinkrate bench's; bad inputs named one
//! line each while the others are still compared; a CI gate that fails on a worse run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::sinkrate_path;

fn compare(args: &[&str]) -> (Option<i32>, String, String) {
    common::sinkrate_sub("compare", args)
}

/// Real recordings, all at once, each into a directory of its own (`dir/NAME` for the JSON
/// file `dir/NAME.json`), with the given `--buffers`. 11 s each: two a side hold the 20 s
/// from which compare tests over time (fewer seconds give no test, "too little data").
fn record_all(dir: &Path, runs: &[(&Path, &str)]) {
    let children: Vec<(PathBuf, std::process::Child)> = runs
        .iter()
        .map(|(json, buffers)| {
            let own = json.with_extension("d");
            std::fs::create_dir(&own).expect("a directory for the recording");
            let child = Command::new(sinkrate_path())
                .args(["record", "--dir"])
                .arg(&own)
                .args(["--streams", "1", "--fps", "20", "--frame-size", "32k"])
                .args([
                    "--duration",
                    "11s",
                    "--buffers",
                    buffers,
                    "--live",
                    "never",
                    "--output-format",
                    "json",
                ])
                .current_dir(dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("record runs");
            (json.to_path_buf(), child)
        })
        .collect();
    for (json, child) in children {
        let out = child.wait_with_output().expect("record ends");
        // A verdict either way (0 keeps up, 1 drops; never 2, a run that failed): a disk
        // still writing back earlier tests' data may make a recording drop, and the
        // comparison needs runs, not runs that kept up.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&json, &out.stdout).expect("json");
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

#[test]
fn recordings_group_by_what_differs_in_every_format_and_a_worse_run_fails_the_gate() {
    // Storage, not tmpfs: a recording refuses a directory with no device behind it.
    let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let files: Vec<PathBuf> = ["a1", "b1", "a2", "b2"]
        .iter()
        .map(|n| dir.path().join(format!("{n}.json")))
        .collect();
    let runs: Vec<(&Path, &str)> = files
        .iter()
        .map(PathBuf::as_path)
        .zip(["4", "16", "4", "16"])
        .collect();
    record_all(dir.path(), &runs);
    let args: Vec<&str> = files.iter().map(|f| s(f)).collect();
    let (code, out, err) = compare(&args);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("configuration") && lines[0].contains("p99 ms"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("buffers=4") && lines[1].ends_with("(baseline)"),
        "{out}"
    );
    assert!(lines[2].starts_with("buffers=16"), "{out}");
    // Two runs a side: the seconds of both runs, in blocks within each.
    assert!(
        out.contains("buffers=16: ")
            && out.contains("[block bootstrap over time (5 s blocks within runs; ")
            && out.contains(" s in 2 run(s) vs "),
        "{out}"
    );
    let (code, md, _) = compare(&[args[0], args[1], "--format", "markdown"]);
    assert_eq!(code, Some(0));
    assert!(md.starts_with("| configuration | runs | dropped |"), "{md}");
    assert!(md.contains("|---|---:|"), "{md}");
    assert!(md.contains("\n- buffers=16: "), "{md}");
    let (code, csv, _) = compare(&[args[0], args[1], "--output-format", "csv"]);
    assert_eq!(code, Some(0));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    assert!(header.iter().any(|h| h == "p99 ms") && header.iter().any(|h| h == "verdict"));
    assert_eq!(reader.records().count(), 2);
    let (code, json, _) = compare(&[args[0], args[1], "--output-format", "json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["kind"], "compare");
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["rows"][0]["config"]["buffers"], "4");

    // The same two recordings, constructed to drop half their frames every second: known
    // to be worse, so the gate fails (exit 1) and the line says so.
    let half_dropped = |n: usize| {
        let mut worse: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files[n]).expect("read")).expect("json");
        let mut dropped = 0;
        for i in worse["intervals"].as_array_mut().expect("intervals") {
            let half = i["frames_captured"].as_u64().expect("captured") / 2;
            i["frames_dropped"] = half.into();
            dropped += half;
        }
        worse["totals"]["frames_dropped"] = dropped.into();
        let worse_file = dir.path().join(format!("worse{n}.json"));
        std::fs::write(&worse_file, serde_json::to_vec(&worse).expect("json")).expect("write");
        worse_file
    };
    let (w0, w2) = (half_dropped(0), half_dropped(2));
    let gate = |extra: &[&str]| {
        let mut a = vec![args[0], args[2], s(&w0), s(&w2)];
        for l in ["as recorded", "as recorded", "half dropped", "half dropped"] {
            a.extend(["--label", l]);
        }
        a.extend_from_slice(extra);
        compare(&a)
    };
    let (code, out, err) = gate(&["--fail-if-worse"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("half dropped: drops more frames than the baseline"),
        "{out}"
    );
    // Without the gate the same comparison exits 0.
    let (code, _, _) = gate(&[]);
    assert_eq!(code, Some(0));
    // One run a side is too little recording to test: the figures, no significance, and
    // the gate does not fail on it.
    let (code, out, err) = compare(&[
        args[0],
        s(&w0),
        "--label",
        "as recorded",
        "--label",
        "half dropped",
        "--fail-if-worse",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("too little data to tell"), "{out}");

    // Bad inputs: one line each naming the file, the others still compared, exit 2.
    let not_json = dir.path().join("notes.txt");
    std::fs::write(&not_json, "dashcam notes\n").expect("write");
    let truncated = dir.path().join("truncated.json");
    let text = std::fs::read(&files[1]).expect("read");
    std::fs::write(&truncated, &text[..text.len() / 2]).expect("write");
    let mut future: serde_json::Value = serde_json::from_slice(&text).expect("json");
    future["schema"] = "sinkrate.run/9".into();
    let future_file = dir.path().join("future.json");
    std::fs::write(&future_file, serde_json::to_vec(&future).expect("json")).expect("write");
    let audit = dir.path().join("audit.json");
    let out = Command::new(sinkrate_path())
        .args(["audit", "--output-format", "json"])
        .arg(dir.path())
        .output()
        .expect("audit");
    std::fs::write(&audit, &out.stdout).expect("write");
    let (code, out, err) = compare(&[
        args[0],
        s(&not_json),
        s(&truncated),
        s(&future_file),
        s(&audit),
        args[1],
    ]);
    assert_eq!(code, Some(2), "{err}");
    let bad: Vec<&str> = err.lines().collect();
    assert_eq!(bad.len(), 4, "{err}");
    assert!(bad[0].contains("notes.txt: not JSON"), "{err}");
    assert!(bad[1].contains("truncated.json: not JSON"), "{err}");
    assert!(
        bad[2].contains("future.json") && bad[2].contains("sinkrate.run/9"),
        "{err}"
    );
    assert!(
        bad[3].contains("audit.json: a audit result has no runs"),
        "{err}"
    );
    assert!(
        out.contains("buffers=16"),
        "the readable two compared: {out}"
    );
    assert!(out.contains("not read: "), "{out}");
    // A baseline that is no row, and labels that do not fit the files.
    let (code, _, err) = compare(&[args[0], args[1], "--baseline", "buffers=8"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("buffers=4, buffers=16"), "{err}");
    let (code, _, err) = compare(&[args[0], args[1], "--label", "one"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("give one per file"), "{err}");
}

#[test]
fn fio_json_and_sinkrate_bench_json_compare_side_by_side() {
    if !common::have("fio") {
        common::skip(
            "fio_json_and_sinkrate_bench_json_compare_side_by_side",
            "needs 'fio' (scripts/install-deps.sh --test installs it)",
        );
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let job = [
        "--name=cam",
        "--rw=write",
        "--bs=64k",
        "--size=16m",
        "--end_fsync=1",
    ];
    // A directory each: fio keeps its cam.0.0, and sinkrate writes into no file that was
    // there before it unless the job names it.
    let (fio_dir, ours_dir) = (dir.path().join("fio"), dir.path().join("sinkrate"));
    std::fs::create_dir(&fio_dir).expect("mkdir");
    std::fs::create_dir(&ours_dir).expect("mkdir");
    let fio = common::fio_json(&fio_dir, &job);
    let ours = common::sinkrate_json(&ours_dir, &job);
    let (f1, f2) = (
        dir.path().join("fio.json"),
        dir.path().join("sinkrate.json"),
    );
    std::fs::write(&f1, serde_json::to_vec(&fio).expect("json")).expect("write");
    std::fs::write(&f2, serde_json::to_vec(&ours).expect("json")).expect("write");
    // The same job by both tools: one configuration, one row that names both tools.
    let (code, out, err) = compare(&[s(&f1), s(&f2), "--output-format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["kind"], "fio + bench");
    assert_eq!(rows[0]["runs"], 2);
    assert!(
        out.contains("1 run(s) by fio, 1 by sinkrate bench, of the same job"),
        "{out}"
    );
    // A label per file splits them, a row per tool.
    let (code, out, err) = compare(&[
        s(&f1),
        s(&f2),
        "--label",
        "fio",
        "--label",
        "sinkrate",
        "--output-format",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0]["kind"], "fio");
    assert_eq!(rows[1]["kind"], "bench");
    // Each row's throughput is its own file's, as fio wrote it.
    let fio_bw = fio["jobs"][0]["write"]["bw_bytes"].as_f64().expect("bw") / 1e6;
    let got = rows[0]["metrics"]["app_mb_s"].as_f64().expect("app");
    assert!((got - fio_bw).abs() < 1e-6, "{got} vs {fio_bw}");
    let ours_p99 = ours["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"]
        .as_f64()
        .expect("p99")
        / 1e6;
    let got = rows[1]["metrics"]["write_p99_ms"].as_f64().expect("p99");
    assert!((got - ours_p99).abs() < 1e-9, "{got} vs {ours_p99}");
    let (code, text, _) = compare(&[s(&f1), s(&f2)]);
    assert_eq!(code, Some(0));
    assert!(text.contains("IOPS") && !text.contains("dropped"), "{text}");
}

/// A lab's results tree (`results/HOST/...json`, as a playbook fetches it) from the record
/// fixture: each copy a run of its own (its start moved) on the host it names.
fn results_tree(root: &Path, runs: &[(&str, &str, u64)]) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/record.json");
    let base: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture).expect("fixture")).expect("json");
    for (k, (folder, hostname, dropped)) in runs.iter().enumerate() {
        let mut v = base.clone();
        v["host"]["hostname"] = (*hostname).into();
        v["timestamp_ms"] = (v["timestamp_ms"].as_u64().expect("start") + 1000 * k as u64).into();
        v["started_at"] = format!("2026-11-27T05:00:{k:02}Z").into();
        v["totals"]["frames_dropped"] = (*dropped).into();
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).expect("folder");
        std::fs::write(dir.join(format!("record-{k}.json")), v.to_string()).expect("write");
    }
    // What else a lab's tree holds is left alone: a note, and results with no runs (an
    // audit beside the recordings).
    std::fs::write(root.join("README.txt"), "fetched by the qualify play\n").expect("write");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/audit.json"),
        root.join(runs[0].0).join("audit.json"),
    )
    .expect("copy the audit");
}

#[test]
fn a_results_tree_is_compared_by_folder_host_or_any_field() {
    let d = tempfile::tempdir().expect("tempdir");
    let results = d.path().join("results");
    results_tree(
        &results,
        &[
            ("board-1", "cam-a", 0),
            ("board-1", "cam-a", 1),
            ("board-2", "cam-b", 40),
            ("board-3", "cam-a", 2),
        ],
    );
    let rows = |args: &[&str]| -> serde_json::Value {
        let mut all = vec![s(&results)];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--output-format", "json"]);
        let (code, out, err) = compare(&all);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&out).expect("json")
    };
    let by_dir = rows(&["--by", "dir"]);
    let labels: Vec<(&str, u64)> = by_dir["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["label"].as_str().expect("label"),
                r["runs"].as_u64().expect("runs"),
            )
        })
        .collect();
    assert_eq!(labels, [("board-1", 2), ("board-2", 1), ("board-3", 1)]);
    assert_eq!(by_dir["grouped_by"], "dir");
    // board-1's two runs dropped 0 and 1 frames: its spread; board-2 ran once, none.
    assert_eq!(by_dir["rows"][0]["spread"]["frames_dropped"]["min"], 0.0);
    assert_eq!(by_dir["rows"][0]["spread"]["frames_dropped"]["max"], 1.0);
    assert!(by_dir["rows"][1]["spread"].is_null());
    let by_host = rows(&["--by", "host"]);
    let hosts: Vec<&str> = by_host["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["label"].as_str().expect("label"))
        .collect();
    assert_eq!(hosts, ["cam-a", "cam-b"]);
    assert_eq!(by_host["rows"][0]["runs"], 3);
    // Any field, by JSON pointer: every run has the fixture's kernel.
    let by_kernel = rows(&["--by", "/host/kernel"]);
    assert_eq!(by_kernel["rows"].as_array().map(Vec::len), Some(1));
    // The text table says what its rows are; the audit is left out with a note.
    let (code, text, err) = compare(&[s(&results), "--by", "dir"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("left out 1 audit result(s)"), "{err}");
    assert!(text.starts_with("dir "), "{text}");
    assert!(text.contains("board-2"), "{text}");

    // One page of them all, each run named by its folder; beside the tree, not in it.
    let with_slash = format!("{}/", s(&results));
    let (code, _, err) = common::sinkrate_sub("report", &[&with_slash, "--by", "dir"]);
    assert_eq!(code, Some(0), "{err}");
    let page = std::fs::read_to_string(d.path().join("results.html")).expect("results.html");
    for run in [
        "board-1: record-0",
        "board-1: record-1",
        "board-2: record-2",
        "board-3: record-3",
    ] {
        assert!(page.contains(run), "{run} not in the page");
    }
    assert!(common::files_in(&results.join("board-1"))
        .iter()
        .all(|f| f.ends_with(".json")));

    // Bad input: one line, exit 2.
    let (code, _, err) = compare(&[s(&results), "--by", "hostname"]);
    assert_eq!(code, Some(2));
    assert_eq!(common::error_lines(&err).len(), 1, "{err}");
    assert!(err.contains("--by hostname: not a key"), "{err}");
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let (code, _, err) = compare(&[s(&empty)]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no result (*.json) under this directory"),
        "{err}"
    );
}
