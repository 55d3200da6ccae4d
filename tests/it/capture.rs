//! `sinkrate capture`: a recorder's file calls, checked against what did not come from
//! sinkrate: the files themselves, strace's count of the same recorder's syncs, and fio
//! replaying the trace.

use crate::common;
use common::hand_sidecar as sidecar;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A recorder of the kind a dashcam runs: two streams of 30 frames a second, each frame
/// written as it comes, an fdatasync every 15 frames, segments written as `.tmp` and renamed
/// at their end, an index file rewritten in place. Its calls are fixed by its arguments, so
/// two runs (one captured, one under strace) make the same ones.
const RECORDER: &str = r#"
import os, sys, time, threading
d, secs = sys.argv[1], float(sys.argv[2])
def stream(s):
    t0 = time.monotonic(); k = 0; seg = 0
    fd = os.open(f"{d}/cam{s}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while k < secs * 30:
        dt = t0 + k / 30 - time.monotonic()
        if dt > 0: time.sleep(dt)
        os.write(fd, bytes([k % 251]) * (60000 + 97 * (k % 13)))
        k += 1
        if k % 15 == 0: os.fdatasync(fd)
        if k % 60 == 0:
            os.fsync(fd); os.close(fd)
            os.rename(f"{d}/cam{s}.tmp", f"{d}/cam{s}-{seg:03}.mp4"); seg += 1
            fd = os.open(f"{d}/cam{s}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
ts = [threading.Thread(target=stream, args=(s,), daemon=True) for s in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
idx = os.open(f"{d}/index", os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(idx, b"segments\n", 0); os.fsync(idx); os.close(idx)
"#;

fn recorder(dir: &Path, secs: &str) -> Vec<String> {
    vec![
        "python3".into(),
        "-c".into(),
        RECORDER.into(),
        dir.display().to_string(),
        secs.into(),
    ]
}

#[test]
fn a_recorder_on_an_emulated_card_is_captured_and_fio_replays_it() {
    common::with_root(
        "a_recorder_on_an_emulated_card_is_captured_and_fio_replays_it",
        &["python3", "strace", "fio", "nbdkit"],
        || {
            let card = common::SlowDev::new(&["--model", "sd-uhs1-u3", "--size", "256M"]);
            let work = tempfile::tempdir().expect("tempdir");
            let trace = work.path().join("rec.iolog");
            let rec = card.path().join("rec");
            std::fs::create_dir(&rec).expect("rec");
            let out = Command::new(common::sinkrate_path())
                .args(["capture", "--output-format", "json", "--output"])
                .arg(&trace)
                .arg("--")
                .args(recorder(&rec, "4"))
                .output()
                .expect("capture runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(report["kind"], "capture");
            // Each file's bytes and size as the trace has them, against the file itself.
            let files = report["files"].as_array().expect("files");
            let mut names: Vec<String> = common::files_in(&rec);
            names.sort();
            assert_eq!(names.len(), 2 * 2 + 2 + 1, "{names:?}"); // 2 segments + .tmp each, index
            for name in &names {
                let path = rec.join(name);
                let f = files
                    .iter()
                    .find(|f| f["file"].as_str() == Some(path.to_str().expect("utf8")))
                    .unwrap_or_else(|| panic!("{name} not in the capture: {report}"));
                let size = std::fs::metadata(&path).expect("stat").len();
                assert_eq!(f["size"], size, "{name}");
                if name.ends_with(".mp4") {
                    assert_eq!(f["bytes"], size, "{name}");
                    assert!(f["earlier_names"][0]
                        .as_str()
                        .is_some_and(|n| n.ends_with(".tmp")));
                }
            }
            // The syncs against strace's count of the same recorder (a run of its own: one
            // tracer per process).
            let strace_dir = card.path().join("strace");
            std::fs::create_dir(&strace_dir).expect("dir");
            let strace_out = work.path().join("strace.txt");
            let counted = Command::new("strace")
                .args(["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o"])
                .arg(&strace_out)
                .args(recorder(&strace_dir, "4"))
                .status()
                .expect("strace runs");
            assert!(counted.success());
            let strace_text = std::fs::read_to_string(&strace_out).expect("strace output");
            // Each call's line, whole or `<unfinished ...>` (threads interleave); none failed.
            let by_strace = |call: &str| {
                strace_text
                    .lines()
                    .filter(|l| l.contains(&format!(" {call}(")) && !l.contains("= -"))
                    .count() as u64
            };
            let sum = |key: &str| {
                files
                    .iter()
                    .map(|f| f[key].as_u64().unwrap_or(0))
                    .sum::<u64>()
            };
            assert_eq!(sum("fsyncs"), by_strace("fsync"), "{strace_text}");
            assert_eq!(sum("fdatasyncs"), by_strace("fdatasync"), "{strace_text}");
            assert!(sum("fdatasyncs") >= 14, "{report}");
            // The sidecar names the renames and each call's thread and duration.
            let sidecar = std::fs::read_to_string(work.path().join("rec.iolog.calls.jsonl"))
                .expect("sidecar");
            let calls: Vec<serde_json::Value> = sidecar
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            assert_eq!(
                calls.iter().filter(|c| c["op"] == "rename").count(),
                4,
                "two segments a stream"
            );
            let threads: std::collections::BTreeSet<i64> = calls
                .iter()
                .filter(|c| c["op"] == "write")
                .filter_map(|c| c["tid"].as_i64())
                .collect();
            assert!(threads.len() >= 2, "the streams' threads: {threads:?}");
            assert!(calls.last().is_some_and(|c| c["end"]["exit_code"] == 0));
            // fio replays the iolog as it is, and writes the same bytes.
            for name in &names {
                std::fs::remove_file(rec.join(name)).expect("rm");
            }
            let fio = common::fio_json(
                work.path(),
                &[
                    "--name=replay",
                    &format!("--read_iolog={}", trace.display()),
                    "--ioengine=psync",
                ],
            );
            let job = &fio["jobs"][0];
            assert_eq!(job["error"], 0, "{fio}");
            assert_eq!(
                job["write"]["io_bytes"].as_u64(),
                Some(sum("bytes")),
                "{fio}"
            );
            // (fio's `sync` counts its fsyncs; its fdatasyncs are not in that figure.)
            assert_eq!(
                job["sync"]["total_ios"].as_u64(),
                Some(sum("fsyncs")),
                "{fio}"
            );
            // fio wrote on the card, where the recorder did: nothing left in the checkout.
            for name in common::files_in(&rec) {
                std::fs::remove_file(rec.join(name)).expect("rm");
            }
        },
    );
}

/// `sinkrate capture ARGS` run in `dir`.
fn capture(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::sinkrate_path())
        .current_dir(dir)
        .arg("capture")
        .args(args)
        .output()
        .expect("sinkrate runs")
}

/// `sinkrate capture ARGS` in `dir` is refused: exit 2, one error line holding `expect`, and
/// nothing made in `dir`.
fn refused(dir: &Path, args: &[&str], expect: &str) {
    let before = common::files_in(dir);
    let out = capture(dir, args);
    let line = common::one_error_line(&out, &args);
    assert!(line.contains(expect), "{args:?}: '{line}' lacks '{expect}'");
    assert_eq!(common::files_in(dir), before, "{args:?} made files");
}

#[test]
fn bad_input_gets_one_line_and_no_trace_is_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A command that does not exist: refused before any file is made.
    refused(
        d,
        &["--", "no-such-recorder-here", "-x"],
        "no-such-recorder-here: command not found",
    );
    refused(d, &[], "COMMAND");
    // A trace there already: kept, unless --force.
    let trace = d.join("t.iolog");
    std::fs::write(&trace, "mine\n").expect("write");
    refused(d, &["--output", "t.iolog", "--", "true"], "t.iolog exists");
    assert_eq!(std::fs::read_to_string(&trace).expect("read"), "mine\n");
    common::succeeded(&capture(
        d,
        &["--force", "--output", "t.iolog", "--", "true"],
    ));
    assert!(std::fs::read_to_string(&trace)
        .expect("read")
        .starts_with("fio version 3 iolog\n"));
    // The default name is taken: the next free one.
    for expect in ["capture.iolog", "capture-2.iolog"] {
        common::succeeded(&capture(d, &["--", "true"]));
        assert!(d.join(expect).is_file(), "{expect}");
        assert!(d.join(format!("{expect}.calls.jsonl")).is_file());
    }
    // A recorder that fails at once: its exit code, and the summary says it wrote nothing.
    let out = capture(d, &["--output", "f.iolog", "--", "false"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no file was written"));
}

/// The sidecar of a capture cut short: its calls so far, every line whole.
fn calls_so_far(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("sidecar")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("every line whole"))
        .collect()
}

#[test]
fn a_capture_interrupted_or_a_recorder_killed_leaves_a_readable_trace() {
    if !common::have("python3") {
        common::skip(
            "a_capture_interrupted_or_a_recorder_killed_leaves_a_readable_trace",
            "needs python3",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // Ctrl-C reaches the whole foreground group: sinkrate and the recorder in it.
    let child = Command::new(common::sinkrate_path())
        .current_dir(dir.path())
        .args([
            "capture",
            "--output",
            "int.iolog",
            "--output-format",
            "json",
            "--",
        ])
        .args(recorder(dir.path(), "30"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("capture starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(dir.path().join("int.iolog"))
        .unwrap_or_default()
        .contains(" write ")
    {
        assert!(Instant::now() < deadline, "no write captured");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill sends a signal to the process group the test made.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let out = child.wait_with_output().expect("capture ends");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["interrupted"], true, "{report}");
    let calls = calls_so_far(&dir.path().join("int.iolog.calls.jsonl"));
    assert!(calls.iter().any(|c| c["op"] == "write"));
    assert_eq!(
        calls.last().map(|c| &c["end"]["interrupted"]),
        Some(&serde_json::json!(true))
    );

    // The recorder killed under capture: its end said, the trace whole up to there.
    let out = capture(
        dir.path(),
        &[
            "--output",
            "kill.iolog",
            "--",
            "sh",
            "-c",
            "dd if=/dev/zero of=part bs=4k count=5 conv=fdatasync status=none; kill -9 $$",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(137),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("killed by signal 9"));
    let calls = calls_so_far(&dir.path().join("kill.iolog.calls.jsonl"));
    let written: u64 = calls
        .iter()
        .filter(|c| c["op"] == "write")
        .filter_map(|c| c["len"].as_u64())
        .sum();
    assert_eq!(written, 5 * 4096);
    assert_eq!(
        calls.last().map(|c| &c["end"]["signal"]),
        Some(&serde_json::json!(9))
    );
}

/// `sinkrate record ARGS` in `dir` is refused: exit 2, one line holding `expect`, nothing made.
fn record_refused(dir: &Path, args: &[&str], expect: &str) {
    let before = common::files_in(dir);
    let out = Command::new(common::sinkrate_path())
        .current_dir(dir)
        .arg("record")
        .args(args)
        .output()
        .expect("sinkrate runs");
    let line = common::one_error_line(&out, &args);
    assert!(line.contains(expect), "{args:?}: '{line}' lacks '{expect}'");
    assert_eq!(common::files_in(dir), before, "{args:?} made files");
}

#[test]
fn a_replay_refuses_bad_traces_and_flags_it_cannot_honour() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let out = d.join("out");
    std::fs::create_dir(&out).expect("out");
    let o = out.to_str().expect("utf8");
    let write = r#"{"t_ns":1000,"dur_ns":10,"tid":5,"op":"write","file":"/rec/a.mp4","fd":3,"offset":0,"len":4096,"call":"write"}"#;
    let good = sidecar(d, "good.iolog", 1, &[write]);
    let g = good.to_str().expect("utf8");
    let newer = sidecar(d, "newer.iolog", 9, &[write]);
    record_refused(
        d,
        &["--replay", newer.to_str().expect("utf8"), "--dir", o],
        "trace format 9, newer",
    );
    let empty = d.join("empty.iolog");
    std::fs::write(format!("{}.calls.jsonl", empty.display()), "").expect("empty");
    record_refused(
        d,
        &["--replay", empty.to_str().expect("utf8"), "--dir", o],
        "empty trace",
    );
    let bad = sidecar(d, "bad.iolog", 1, &[write, "{\"t_ns\":2,", write]);
    record_refused(
        d,
        &["--replay", bad.to_str().expect("utf8"), "--dir", o],
        "line 3: not JSON",
    );
    let outside = sidecar(
        d,
        "outside.iolog",
        1,
        &[&write.replace("/rec/a.mp4", "/rec/../../etc/a.mp4")],
    );
    record_refused(
        d,
        &["--replay", outside.to_str().expect("utf8"), "--dir", o],
        "'..'",
    );
    let nothing = sidecar(d, "nothing.iolog", 1, &[]);
    record_refused(
        d,
        &["--replay", nothing.to_str().expect("utf8"), "--dir", o],
        "no file written",
    );
    record_refused(
        d,
        &["--replay", "missing.iolog", "--dir", o],
        "missing.iolog.calls.jsonl",
    );
    // Far more than any file system here holds: refused with the figures, nothing written.
    let huge = sidecar(
        d,
        "huge.iolog",
        1,
        &[&write.replace("\"len\":4096", "\"len\":900000000000000")],
    );
    record_refused(
        d,
        &["--replay", huge.to_str().expect("utf8"), "--dir", o],
        "MB free",
    );
    // Flags that shape emulated streams say the replay's calls decide.
    for flag in [
        &["--profile", "dual-1080p30"][..],
        &["--duration", "10s"],
        &["--write-mode", "direct"],
        &["--segment-time", "10s"],
        &["--find-max", "fps"],
    ] {
        let mut args = vec!["--replay", g, "--dir", o];
        args.extend_from_slice(flag);
        record_refused(d, &args, "a replay runs the recorder's own calls");
    }
    record_refused(
        d,
        &["--replay", g, "--dir", o, "--speed", "0"],
        "--speed 0: out of range",
    );
    record_refused(
        d,
        &["--dir", o, "--speed", "2x"],
        "--speed: it sets the pace of a --replay",
    );
    assert!(common::files_in(&out).is_empty());
}

#[test]
fn a_captured_recorder_replays_on_its_card_with_its_frames_syncs_and_files() {
    common::with_root(
        "a_captured_recorder_replays_on_its_card_with_its_frames_syncs_and_files",
        &["python3", "strace", "nbdkit"],
        || {
            let card = common::SlowDev::new(&["--model", "emmc", "--size", "256M"]);
            let work = tempfile::tempdir().expect("tempdir");
            let trace = work.path().join("rec.iolog");
            let rec = card.path().join("rec");
            std::fs::create_dir(&rec).expect("rec");
            let out = Command::new(common::sinkrate_path())
                .args(["capture", "--output-format", "json", "--output"])
                .arg(&trace)
                .arg("--")
                .args(recorder(&rec, "3"))
                .output()
                .expect("capture runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let captured: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let sizes: std::collections::BTreeMap<String, u64> = common::files_in(&rec)
                .into_iter()
                .map(|n| {
                    let len = std::fs::metadata(rec.join(&n)).expect("stat").len();
                    (n, len)
                })
                .collect();
            for n in sizes.keys() {
                std::fs::remove_file(rec.join(n)).expect("rm");
            }
            // The replay on the same card, under strace: its syncs against the trace's.
            let replay_dir = card.path().join("replay");
            std::fs::create_dir(&replay_dir).expect("dir");
            let strace_out = work.path().join("strace.txt");
            let out = Command::new("strace")
                .args(["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o"])
                .arg(&strace_out)
                .arg(common::sinkrate_path())
                .args([
                    "record",
                    "--live=never",
                    "--output-format",
                    "json",
                    "--keep",
                    "--replay",
                ])
                .arg(&trace)
                .arg("--dir")
                .arg(&replay_dir)
                .output()
                .expect("replay runs");
            let report: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
            let totals = &report["totals"];
            let frames = report["replay"]["frames"].as_u64().expect("frames");
            // The frames the trace holds, counted here from its calls by the documented rule
            // (a thread's writes separated by idle gaps of 1 ms or more; the threads with 10
            // frames or more judged): two streams of 3 s at 30 fps, fewer where a loaded
            // machine made the recorder write two frames back to back.
            let expected = bursts_in(&format!("{}.calls.jsonl", trace.display()));
            assert_eq!(frames, expected, "{report}");
            assert_eq!(
                report["streams"].as_array().map(Vec::len),
                Some(2),
                "{report}"
            );
            assert_eq!(totals["frames_offered"].as_u64(), Some(frames), "{report}");
            assert_eq!(
                totals["frames_written"].as_u64().unwrap_or(0)
                    + totals["frames_dropped"].as_u64().unwrap_or(0),
                frames
            );
            // Each call's line, whole or `<unfinished ...>` (threads interleave); none failed.
            let calls = |kind: &str| {
                std::fs::read_to_string(&strace_out)
                    .expect("strace output")
                    .lines()
                    .filter(|l| l.contains(&format!(" {kind}(")) && !l.contains("= -"))
                    .count() as u64
            };
            let files = captured["files"].as_array().expect("files");
            let sum = |key: &str| {
                files
                    .iter()
                    .map(|f| f[key].as_u64().unwrap_or(0))
                    .sum::<u64>()
            };
            // Kept (--keep): the files under the run's own directory.
            let run_dir = common::files_in(&replay_dir);
            assert_eq!(run_dir.len(), 1, "{run_dir:?}");
            let kept = replay_dir.join(&run_dir[0]);
            if totals["frames_dropped"] == 0 {
                // Every sync of the recorder's, and the final one record makes of its files.
                assert!(calls("fdatasync") >= sum("fdatasyncs"), "{report}");
                assert!(calls("fsync") >= sum("fsyncs"), "{report}");
                // As the recorder left them.
                for (name, len) in &sizes {
                    let got = std::fs::metadata(kept.join(name))
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                        .len();
                    assert_eq!(got, *len, "{name}");
                }
            }
            std::fs::remove_dir_all(&kept).expect("rm kept");
            // Without --keep nothing is left behind.
            let out = Command::new(common::sinkrate_path())
                .args([
                    "record",
                    "--live=never",
                    "--output-format",
                    "json",
                    "--replay",
                ])
                .arg(&trace)
                .arg("--dir")
                .arg(&replay_dir)
                .output()
                .expect("replay runs");
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(common::files_in(&replay_dir).is_empty());
        },
    );
}

/// The files a strace of `argv` (with `-y`: each descriptor's path) saw the program open for
/// writing under `dir`, and its syncs of them: the independent count of one run.
fn strace_counts(argv: &[String], dir: &Path, log: &Path, registry: &Path) -> (usize, usize) {
    let ok = Command::new("strace")
        .env("GST_REGISTRY", registry)
        .args([
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=openat,fsync,fdatasync",
            "-o",
        ])
        .arg(log)
        .args(argv)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("strace runs")
        .success();
    assert!(ok, "{argv:?} under strace");
    let text = std::fs::read_to_string(log).expect("strace output");
    let d = dir.to_str().expect("utf8");
    let opens = text
        .lines()
        .filter(|l| {
            l.contains("openat(") && l.contains(d) && l.contains("O_CREAT") && !l.contains("= -")
        })
        .count();
    // Each call's line, whole or `<unfinished ...>` (threads interleave); none failed.
    let syncs = text
        .lines()
        .filter(|l| {
            (l.contains(" fsync(") || l.contains(" fdatasync("))
                && l.contains(d)
                && !l.contains("= -")
        })
        .count();
    (opens, syncs)
}

/// A trace's frames as a replay groups them: each thread's calls (failed ones left out), in
/// bursts apart by idle gaps of 1 ms or more (from the latest end so far to the next call's
/// start), a burst with bytes written being a frame; counted for the threads with 10 frames
/// or more.
fn bursts_in(sidecar: &str) -> u64 {
    let mut by_thread: std::collections::BTreeMap<i64, Vec<(u64, u64, bool)>> = Default::default();
    for line in std::fs::read_to_string(sidecar).expect("calls").lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(t), Some(dur), Some(tid)) =
            (v["t_ns"].as_u64(), v["dur_ns"].as_u64(), v["tid"].as_i64())
        else {
            continue;
        };
        if !v["errno"].is_null() || (v["op"] == "write" && v["len"].as_u64() == Some(0)) {
            continue;
        }
        let writes = v["op"] == "write";
        by_thread.entry(tid).or_default().push((t, t + dur, writes));
    }
    by_thread
        .values_mut()
        .map(|calls| {
            calls.sort_by_key(|c| c.0);
            let (mut frames, mut in_burst) = (0u64, false);
            let mut last_end: Option<u64> = None;
            for &(t, end, writes) in calls.iter() {
                if last_end.is_none_or(|e| t.saturating_sub(e) >= 1_000_000) {
                    in_burst = false;
                }
                if writes && !in_burst {
                    frames += 1;
                    in_burst = true;
                }
                last_end = Some(last_end.map_or(end, |e| e.max(end)));
            }
            frames
        })
        .filter(|f| *f >= 10)
        .sum()
}

/// A real recorder captured for a minute on an emulated card, checked against what did not
/// come from sinkrate: each file's size, strace's count of a second run on a card of the same
/// model (the files opened for writing and their syncs), and fio replaying the trace. Then
/// the trace replayed by record on the same card, at 4x: every frame offered and no file
/// left behind (how closely the replay keeps the recorder's timing is bench/capture's
/// figure: it depends on a quiet machine).
fn a_real_recorder(test: &str, tool: &str, argv: impl Fn(&Path) -> Vec<String>) {
    common::with_root(test, &[tool, "strace", "fio", "nbdkit"], || {
        let card = common::SlowDev::new(&["--model", "sd-uhs1-u3", "--size", "256M"]);
        let twin = common::SlowDev::new(&["--model", "sd-uhs1-u3", "--size", "256M"]);
        let work = tempfile::tempdir().expect("tempdir");
        let trace = work.path().join("rec.iolog");
        let rec = card.path().join("rec");
        let rec2 = twin.path().join("rec");
        std::fs::create_dir(&rec).expect("rec");
        std::fs::create_dir(&rec2).expect("rec");
        // GStreamer's registry cache in a file of the test's own, built before either run:
        // on a machine where GStreamer never ran, the first run writes and fsyncs it, which
        // the trace (and fio's replay of it) would carry and the machine's own cache would
        // take a replay's bytes.
        let registry = work.path().join("gst-registry.bin");
        if tool.starts_with("gst-") {
            let built = Command::new("gst-inspect-1.0")
                .arg("coreelements")
                .env("GST_REGISTRY", &registry)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("gst-inspect-1.0 runs");
            assert!(
                built.success() && registry.exists(),
                "the registry is built"
            );
        }
        // The capture and strace's run side by side, on cards of their own.
        let strace_log = work.path().join("strace.txt");
        let twin_argv = argv(&rec2);
        let twin_registry = registry.clone();
        let counted = std::thread::spawn(move || {
            strace_counts(&twin_argv, &rec2, &strace_log, &twin_registry)
        });
        let out = Command::new(common::sinkrate_path())
            .env("GST_REGISTRY", &registry)
            .args(["capture", "--output-format", "json", "--output"])
            .arg(&trace)
            .arg("--")
            .args(argv(&rec))
            .output()
            .expect("capture runs");
        let (strace_opens, strace_syncs) = counted.join().expect("strace's run");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(
            report["duration_s"].as_f64().is_some_and(|s| s >= 60.0),
            "{report}"
        );
        let files = report["files"].as_array().expect("files");
        let names = common::files_in(&rec);
        assert!(names.len() >= 3, "segments: {names:?}");
        let mut bytes = 0;
        for name in &names {
            let path = rec.join(name);
            let f = files
                .iter()
                .find(|f| f["file"].as_str() == path.to_str())
                .unwrap_or_else(|| panic!("{name} not in the capture: {report}"));
            let len = std::fs::metadata(&path).expect("stat").len();
            assert_eq!(f["size"], len, "{name}: {f}");
            bytes += f["bytes"].as_u64().expect("bytes");
        }
        let opens = std::fs::read_to_string(work.path().join("rec.iolog.calls.jsonl"))
            .expect("calls")
            .lines()
            .filter(|l| l.contains("\"op\":\"open\"") && l.contains(rec.to_str().expect("utf8")))
            .count();
        // The syncs of the files in the recording's directory, as strace's are counted: a
        // recorder syncs other files too (GStreamer's registry cache, rebuilt and fsynced
        // by its first run on a machine).
        let syncs: u64 = files
            .iter()
            .filter(|f| {
                f["file"]
                    .as_str()
                    .is_some_and(|p| p.starts_with(rec.to_str().expect("utf8")))
            })
            .map(|f| f["fsyncs"].as_u64().unwrap_or(0) + f["fdatasyncs"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(
            opens, strace_opens,
            "files opened for writing, against strace's run"
        );
        assert_eq!(syncs as usize, strace_syncs, "syncs, against strace's run");
        // A dynamically linked recorder: its writes to its segments came through the
        // interposer, without a stop, and the checks above held all the same.
        let writes: u64 = files
            .iter()
            .filter(|f| {
                f["file"]
                    .as_str()
                    .is_some_and(|p| p.starts_with(rec.to_str().expect("utf8")))
            })
            .map(|f| f["writes"].as_u64().unwrap_or(0))
            .sum();
        assert!(
            report["cost"]["interposed_calls"].as_u64() >= Some(writes) && writes > 0,
            "{writes} writes: {}",
            report["cost"]
        );
        // fio replays the trace's writes, without its pauses, onto the same paths.
        for name in &names {
            std::fs::remove_file(rec.join(name)).expect("rm");
        }
        let fio = common::fio_json(
            work.path(),
            &[
                "--name=replay",
                &format!("--read_iolog={}", trace.display()),
                "--replay_no_stall=1",
                "--ioengine=psync",
            ],
        );
        assert_eq!(fio["jobs"][0]["error"], 0, "{fio}");
        assert_eq!(
            fio["jobs"][0]["write"]["io_bytes"].as_u64(),
            Some(bytes),
            "{fio}"
        );
        for name in common::files_in(&rec) {
            std::fs::remove_file(rec.join(name)).expect("rm");
        }
        // record replays it on the same card.
        let out = Command::new(common::sinkrate_path())
            .args([
                "record",
                "--live=never",
                "--output-format",
                "json",
                "--speed",
                "4x",
                "--replay",
            ])
            .arg(&trace)
            .arg("--dir")
            .arg(&rec)
            .output()
            .expect("replay runs");
        let replayed: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert!(replayed["verdict"] != "failed", "{replayed}");
        assert_eq!(
            replayed["totals"]["frames_offered"],
            replayed["replay"]["frames"]
        );
        assert!(replayed["totals"]["bytes_written"]
            .as_u64()
            .is_some_and(|b| b > 0));
        assert!(common::files_in(&rec).is_empty(), "the replay left files");
    });
}

#[test]
fn gstreamer_splitmuxsink_is_captured_checked_and_replayed() {
    a_real_recorder(
        "gstreamer_splitmuxsink_is_captured_checked_and_replayed",
        "gst-launch-1.0",
        |dir| {
            let mut v: Vec<String> = [
                "gst-launch-1.0",
                "-q",
                "-e",
                "videotestsrc",
                "is-live=true",
                "num-buffers=1830",
                "!",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            v.extend(
                [
                    "video/x-raw,width=320,height=240,framerate=30/1",
                    "!",
                    "x264enc",
                    "tune=zerolatency",
                    "speed-preset=ultrafast",
                    "bitrate=2000",
                    "key-int-max=30",
                    "!",
                    "splitmuxsink",
                    "max-size-time=10000000000",
                ]
                .iter()
                .map(|s| s.to_string()),
            );
            v.push(format!("location={}/seg%05d.mp4", dir.display()));
            v
        },
    );
}

#[test]
fn ffmpeg_segment_muxer_is_captured_checked_and_replayed() {
    a_real_recorder(
        "ffmpeg_segment_muxer_is_captured_checked_and_replayed",
        "ffmpeg",
        |dir| {
            let mut v: Vec<String> = [
                "ffmpeg",
                "-nostdin",
                "-hide_banner",
                "-loglevel",
                "error",
                "-re",
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=320x240:rate=30",
                "-t",
                "61",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-tune",
                "zerolatency",
                "-g",
                "30",
                "-f",
                "segment",
                "-segment_time",
                "10",
                "-reset_timestamps",
                "1",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            v.push(format!("{}/seg%03d.mp4", dir.display()));
            v
        },
    );
}

#[test]
fn a_running_recorder_is_captured_by_pid_and_let_go_on_ctrl_c() {
    common::with_root(
        "a_running_recorder_is_captured_by_pid_and_let_go_on_ctrl_c",
        &["python3"],
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            // 150 frames at 30 fps: five seconds, its file 150 x 50 KB.
            let mut recorder = Command::new("python3")
                .arg("-c")
                .arg(
                    "import os,sys,time\nfd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_TRUNC)\n\
                     t0=time.monotonic()\nfor i in range(150):\n    d=t0+i/30-time.monotonic()\n    \
                     if d>0: time.sleep(d)\n    os.write(fd,b'x'*50000)\n    \
                     if i%30==29: os.fdatasync(fd)\nos.close(fd)\n",
                )
                .arg(dir.path().join("rec.bin"))
                .spawn()
                .expect("recorder starts");
            let capture = Command::new(common::sinkrate_path())
                .current_dir(dir.path())
                .args([
                    "capture",
                    "--output-format",
                    "json",
                    "--output",
                    "pid.iolog",
                    "--pid",
                ])
                .arg(recorder.id().to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .expect("capture starts");
            let deadline = Instant::now() + Duration::from_secs(20);
            while !std::fs::read_to_string(dir.path().join("pid.iolog"))
                .unwrap_or_default()
                .contains(" write ")
            {
                if Instant::now() > deadline {
                    // SAFETY: kill sends a signal to the process group the test made.
                    unsafe { libc::kill(-(capture.id() as i32), libc::SIGINT) };
                    let out = capture.wait_with_output().expect("capture ends");
                    panic!(
                        "no write captured in 20 s; the recorder's state: {:?}; capture said: {} {}; its trace: {:?}",
                        std::fs::read_to_string(format!("/proc/{}/stat", recorder.id())),
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr),
                        std::fs::read_to_string(dir.path().join("pid.iolog"))
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill sends a signal to the process group the test made.
            unsafe { libc::kill(-(capture.id() as i32), libc::SIGINT) };
            let out = capture.wait_with_output().expect("capture ends");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(report["interrupted"], true);
            assert!(report["calls"].as_u64().is_some_and(|c| c > 0), "{report}");
            // Let go, the recorder runs on to its end: every frame in its file.
            assert!(recorder.wait().expect("recorder ends").success());
            assert_eq!(
                std::fs::metadata(dir.path().join("rec.bin"))
                    .expect("stat")
                    .len(),
                150 * 50_000
            );
            let bad = Command::new(common::sinkrate_path())
                .current_dir(dir.path())
                .args(["capture", "--pid", "999999999"])
                .output()
                .expect("runs");
            assert!(common::one_error_line(&bad, &"--pid").contains("no such running process"));
        },
    );
}
