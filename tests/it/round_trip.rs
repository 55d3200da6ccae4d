//! Every result kind reads back through the types that wrote it: the real command's JSON,
//! deserialized and serialized again, is the same document. Results written as
//! `sinkrate.run/1` before durations carried their unit in the key still load.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sinkrate_model::audit::AuditReport;
use sinkrate_model::check::CheckReport;
use sinkrate_model::fio::BenchReport;
use sinkrate_model::record::{FindMaxReport, RecordReport, RecordRun};
use sinkrate_model::watch::WatchReport;
use sinkrate_model::{Envelope, RunKind, Verdict};

use common::sinkrate_path;

fn run_json(args: &[&str]) -> Vec<u8> {
    let out = Command::new(sinkrate_path())
        .args(args)
        .output()
        .expect("sinkrate runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Reads `bytes` as a run of `kind` and checks that writing it again gives the same JSON.
fn round_trip<T: Serialize + DeserializeOwned>(bytes: &[u8], kind: RunKind) -> Envelope<T> {
    let run: Envelope<T> = Envelope::from_json(bytes, kind).expect("reads as its type");
    let again = serde_json::to_value(&run).expect("serializes");
    let original: serde_json::Value = serde_json::from_slice(bytes).expect("json");
    assert_eq!(
        again, original,
        "{kind:?} changed on the way through its type"
    );
    run
}

#[test]
fn record_results_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf8");
    for mode in ["null", "buffered"] {
        let bytes = run_json(&[
            "record",
            "--dir",
            d,
            "--fps",
            "20",
            "--frame-size",
            "64k",
            "--duration",
            "1s",
            "--write-mode",
            mode,
            "--output-format",
            "json",
            "--live",
            "never",
        ]);
        let run: RecordRun = round_trip(&bytes, RunKind::Record);
        let r = &run.result;
        assert_eq!(r.totals.frames_offered, 20, "{mode}");
        assert_eq!(r.config.duration.as_secs(), 1);
        assert_eq!(r.frames[0].capture_us.len(), 20, "one row per frame");
        assert_eq!(r.intervals.len(), 1);
        assert!(
            r.totals
                .write_latency_ns
                .histogram
                .iter()
                .map(|b| b.1)
                .sum::<u64>()
                > 0
        );
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("\"secs\"") && !text.contains("\"nanos\""));
    }
}

#[test]
fn check_results_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("check.json");
    let out = Command::new(sinkrate_path())
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--progress", "never", "--output"])
        .arg(&report)
        .args(["--", "--fps", "10", "--frame-size", "64k"])
        .output()
        .expect("runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&report).expect("report");
    let run: Envelope<CheckReport> = round_trip(&bytes, RunKind::Check);
    let c = &run.result;
    let record = c.record.as_ref().expect("the recording test's result");
    assert_eq!(c.verdict, record.result.verdict, "one verdict, record's");
    assert_eq!(
        record.result.sustained_bytes_per_s, c.raw_write.bytes_per_s,
        "the recording was judged with the sustained rate"
    );
    assert_eq!(c.stream.bytes_per_s, 655_360.0, "10 fps x 64 KiB");
}

#[test]
fn audit_results_round_trip() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysroot");
    for (name, target) in [
        ("arm-sbc-usb3-drive-on-usb2", "/media/usb0"),
        ("x86-laptop-nvme", "/srv/videos"),
    ] {
        let tree = root.join(name);
        let bytes = run_json(&[
            "audit",
            target,
            "--sysroot",
            tree.to_str().expect("utf8"),
            "--output-format",
            "json",
        ]);
        let run: Envelope<AuditReport> = round_trip(&bytes, RunKind::Audit);
        assert!(run.host.is_none(), "a fixture tree is not this host");
        assert!(!run.result.audit.findings.is_empty());
    }
}

#[test]
fn watch_results_round_trip() {
    let bytes = run_json(&[
        "watch",
        "--duration",
        "500ms",
        "--interval",
        "50ms",
        "--output-format",
        "json",
        "--live",
        "never",
    ]);
    let run: Envelope<WatchReport> = round_trip(&bytes, RunKind::Watch);
    assert!(run.result.timeline.len() >= 5);
}

#[test]
fn tune_results_round_trip() {
    // A dry run: planned from the live settings, nothing changed, no root needed.
    let bytes = run_json(&[
        "tune",
        "apply",
        "--dry-run",
        "vm.dirty_expire_centisecs=100",
        "--output-format",
        "json",
    ]);
    let run: Envelope<sinkrate_model::settings::TuneReport> = round_trip(&bytes, RunKind::Tune);
    assert!(run.result.dry_run);
    assert_eq!(run.result.changes.len(), 1);
    // The report shows it as a tune run: what would change, from what to what.
    let dir = tempfile::tempdir().expect("tempdir");
    let html = common::report_html(dir.path(), &bytes);
    let from = &run.result.changes[0].from;
    for words in [
        "1 setting(s) would change (dry run)",
        "Would change",
        "vm.dirty_expire_centisecs",
        from.as_str(),
    ] {
        assert!(html.contains(words), "the report lacks {words:?}");
    }
}

#[test]
fn compare_results_round_trip_and_report_their_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf8");
    // Two configurations of a null recording (nothing written): 4 and 16 capture buffers.
    let mut inputs = Vec::new();
    for buffers in ["4", "16"] {
        let bytes = run_json(&[
            "record",
            "--dir",
            d,
            "--fps",
            "20",
            "--frame-size",
            "64k",
            "--duration",
            "1s",
            "--write-mode",
            "null",
            "--buffers",
            buffers,
            "--output-format",
            "json",
            "--live",
            "never",
        ]);
        let file = dir.path().join(format!("rec{buffers}.json"));
        std::fs::write(&file, bytes).expect("test setup");
        inputs.push(file.to_str().expect("utf8").to_string());
    }
    let bytes = run_json(&["compare", &inputs[0], &inputs[1], "--output-format", "json"]);
    let run: Envelope<sinkrate_model::compare::CompareReport> =
        round_trip(&bytes, RunKind::Compare);
    let r = &run.result;
    assert_eq!(r.rows.len(), 2, "{:?}", r.rows);
    assert_eq!(r.baseline, 0);
    assert!(r.rows[0].against_baseline.is_none());
    let verdict = &r.rows[1]
        .against_baseline
        .as_ref()
        .expect("row 2 against row 1")
        .text;
    // The report shows it as a compare run: each row, and each verdict in its words.
    let html = common::report_html(dir.path(), &bytes);
    for words in [
        "compare run",
        "Runs by configuration",
        "the baseline",
        "row(s) against",
        r.rows[0].label.as_str(),
        r.rows[1].label.as_str(),
        verdict.as_str(),
    ] {
        let escaped = words
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(html.contains(&escaped), "the report lacks {words:?}");
    }
}

#[test]
fn capture_results_round_trip_and_report_their_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(sinkrate_path())
        .current_dir(dir.path())
        .args([
            "capture",
            "--output",
            "t.iolog",
            "--output-format",
            "json",
            "--",
            "dd",
            "if=/dev/zero",
            "of=seg.mp4",
            "bs=64k",
            "count=8",
            "conv=fdatasync",
            "status=none",
        ])
        .output()
        .expect("sinkrate runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Envelope<sinkrate_model::capture::CaptureReport> =
        round_trip(&out.stdout, RunKind::Capture);
    let r = &run.result;
    let seg = r
        .files
        .iter()
        .find(|f| f.file.ends_with("seg.mp4"))
        .expect("the file dd wrote");
    // Against the file's own size and dd's arguments.
    assert_eq!(seg.bytes, 8 * 65536);
    assert_eq!(
        seg.size,
        std::fs::metadata(dir.path().join("seg.mp4"))
            .expect("stat")
            .len()
    );
    assert_eq!(seg.fdatasyncs, 1, "conv=fdatasync");
    let html = common::report_html(dir.path(), &out.stdout);
    for words in [
        "capture run",
        "captured: dd if=/dev/zero",
        "Files written",
        seg.file.as_str(),
        "512 KiB",
        "the recorder: exit 0",
    ] {
        assert!(html.contains(words), "the report lacks {words:?}");
    }
}
#[test]
fn find_max_results_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf8");
    let bytes = run_json(&[
        "record",
        "--dir",
        d,
        "--write-mode",
        "null",
        // 10 frames a stream a probe: fewer are too few to judge.
        "--fps",
        "50",
        "--frame-size",
        "4k",
        "--duration",
        "200ms",
        "--find-max",
        "streams",
        "--output-format",
        "json",
    ]);
    let run: Envelope<FindMaxReport> = round_trip(&bytes, RunKind::FindMax);
    // What the search found depends on the CPU spare (null writes: 64, the limit, on a
    // quiet machine; 63 once beside a busy core); the result reads back whole either way,
    // and says it reached the limit exactly when it did.
    let max = run.result.max.expect("a largest count that kept up");
    assert!((1.0..=64.0).contains(&max), "{max}");
    assert_eq!(run.result.at_limit, max == 64.0);
    assert!(!run.result.probes.is_empty());
}

#[test]
fn results_written_before_units_were_in_the_keys_still_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results");
    let read = |name: &str| std::fs::read(dir.join(name)).expect("fixture");
    let record: RecordRun =
        Envelope::from_json(&read("record-before-units.json"), RunKind::Record).expect("record");
    assert_eq!(record.result.config.duration.as_secs(), 1);
    assert_eq!(record.result.verdict, Verdict::KeepsUp);
    assert_eq!(record.result.totals.frames_offered, 10);
    let audit: Envelope<AuditReport> =
        Envelope::from_json(&read("audit-before-units.json"), RunKind::Audit).expect("audit");
    assert_eq!(audit.result.stream.bytes_per_s, 3_000_000.0);
    let watch: Envelope<WatchReport> =
        Envelope::from_json(&read("watch-before-units.json"), RunKind::Watch).expect("watch");
    assert!(!watch.result.timeline.is_empty());
    let check: Envelope<CheckReport> =
        Envelope::from_json(&read("check-before-units.json"), RunKind::Check).expect("check");
    assert!(check.result.record.is_some());
    let find_max: Envelope<FindMaxReport> =
        Envelope::from_json(&read("find-max-before-units.json"), RunKind::FindMax)
            .expect("find-max");
    assert!(find_max.result.max.is_some());
}

#[test]
fn documents_of_another_kind_or_schema_are_refused_by_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results");
    let bytes = std::fs::read(dir.join("watch-before-units.json")).expect("fixture");
    let err = Envelope::<RecordReport>::from_json(&bytes, RunKind::Record)
        .expect_err("a watch is not a record");
    assert_eq!(err.to_string(), "a watch result, not a record result");
    let err =
        Envelope::<RecordReport>::from_json(b"{\"schema\": \"sinkrate.run/7\"}", RunKind::Record)
            .expect_err("unknown schema");
    assert!(err.to_string().contains("sinkrate.run/7"), "{err}");
}

#[test]
fn bench_results_round_trip_and_keep_fio_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = format!("--directory={}", dir.path().display());
    for format in ["json", "json+"] {
        let bytes = run_json(&[
            "bench",
            "--name=rt",
            "--rw=write",
            "--bs=4k",
            "--size=4m",
            "--runtime=2",
            &d,
            &format!("--output-format={format}"),
        ]);
        let run: Envelope<BenchReport> = round_trip(&bytes, RunKind::Bench);
        let job = &run.result.jobs[0];
        assert_eq!(job.write.io_bytes, 4 << 20, "{format}");
        assert_eq!(job.write.clat_ns.bins.is_some(), format == "json+");
        assert!(job.write.clat_ns.percentile.is_some());
        assert!(
            job.sinkrate.flush.is_some(),
            "buffered writes carry the flush"
        );
        let options: sinkrate_jobspec::JobOptions =
            serde_json::from_value(run.result.config.jobs[0].options.clone())
                .expect("the resolved options read back typed");
        assert_eq!(
            options.size,
            Some(sinkrate_jobspec::options::SizeSpec::Bytes(4 << 20))
        );
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("\"secs\"") && !text.contains("\"nanos\""));
        assert!(text.contains("\"fio version\""));
    }
}

#[test]
fn bench_results_written_before_units_were_in_the_keys_still_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results");
    let bytes = std::fs::read(dir.join("bench-before-units.json")).expect("fixture");
    let run: Envelope<BenchReport> = Envelope::from_json(&bytes, RunKind::Bench).expect("bench");
    assert_eq!(run.result.jobs[0].write.io_bytes, 4 << 20);
    let options: sinkrate_jobspec::JobOptions =
        serde_json::from_value(run.result.config.jobs[0].options.clone()).expect("typed");
    assert!(options.ramp_time.is_zero());
}
