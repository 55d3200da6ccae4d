//! `sinkrate report` as a person sees it: reports of real runs of every kind (record,
//! check, bench, watch, audit, tune, compare, and fio's own JSON) rendered in headless
//! Chromium from a file:// path by scripts/render-report.sh, then checked from the
//! screenshot and the page: every chart drawn (coloured pixels on its canvas), its axes
//! labelled with units, no console message, no script error, no request leaving the page.
//! `--png` files decoded and looked at; `--report` on the commands; bad input one line each.

use crate::common;
use crate::common::FioOutput;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{sinkrate_path, sinkrate_sub};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs sinkrate with `args` in `dir`; its stdout, after checking it exited with one of
/// `codes`.
fn exits(dir: &Path, args: &[&str], codes: &[i32]) -> Vec<u8> {
    let out = Command::new(sinkrate_path())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("sinkrate runs");
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "sinkrate {args:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs sinkrate with `args` in `dir`; its stdout, after checking it succeeded.
fn ok(dir: &Path, args: &[&str]) -> Vec<u8> {
    exits(dir, args, &[0])
}

/// Runs a command that judges the storage (record, check) with `args` in `dir`; its stdout,
/// after checking it reached a verdict: exit 0 (keeps up) or 1 (does not), never 2 (a run
/// that failed). Which verdict depends on the machine's disk at that moment (writeback of
/// earlier tests can stall it), and the reports must draw either.
fn judged(dir: &Path, args: &[&str]) -> Vec<u8> {
    exits(dir, args, &[0, 1])
}

fn record_json(dir: &Path, name: &str, buffers: &str) -> PathBuf {
    let json = dir.join(name);
    let data = dir.join(format!("{name}.data"));
    std::fs::create_dir_all(&data).expect("data dir");
    let out = judged(
        dir,
        &[
            "record",
            "--dir",
            data.to_str().expect("utf-8"),
            "--streams",
            "2",
            "--fps",
            "30",
            "--frame-size",
            "64k",
            "--buffers",
            buffers,
            "--duration",
            "4s",
            "--output-format",
            "json",
        ],
    );
    std::fs::write(&json, out).expect("write json");
    json
}

/// What the browser saw of one report.
struct Rendered {
    selftest: Value,
    dom: String,
    console: Vec<String>,
    requests: Vec<String>,
    screenshot: PathBuf,
}

/// Chromium's own background services, which are not the page's requests.
fn browser_service(url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .and_then(|r| r.split(['/', ':', '?']).next())
        .unwrap_or("");
    ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"]
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

fn render(test: &str, html: &Path, out: &Path) -> Option<Rendered> {
    if !common::have("chromium") {
        common::skip(
            test,
            "needs chromium (scripts/install-deps.sh --test installs it)",
        );
        return None;
    }
    let status = Command::new("bash")
        .arg(repo().join("scripts/render-report.sh"))
        .arg(html)
        .arg(out)
        .status()
        .expect("render-report.sh runs");
    assert!(
        status.success(),
        "render-report.sh failed on {}",
        html.display()
    );
    let dom = std::fs::read_to_string(out.join("dom.html")).expect("dom");
    let start = dom.find("<pre id=\"selftest\"").expect("selftest element");
    let body = &dom[start..];
    let text = &body[body.find('>').expect(">") + 1..body.find("</pre>").expect("</pre>")];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let selftest: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the page measured nothing ({e}): {text:?}"));
    let log = std::fs::read_to_string(out.join("console.log")).expect("console log");
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    let netlog = std::fs::read_to_string(out.join("netlog.json")).expect("net log");
    let mut requests: Vec<String> = netlog
        .split("\"url\":\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|u| !browser_service(u))
        .map(str::to_string)
        .collect();
    requests.sort();
    requests.dedup();
    Some(Rendered {
        selftest,
        dom,
        console,
        requests,
        screenshot: out.join("screenshot.png"),
    })
}

/// A PNG's size, its clearly coloured pixels (not white, grey or black: the charts'
/// lines) and its inked ones (darker than light grey: text too).
fn coloured_pixels(png_path: &Path) -> (u32, u32, usize, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("png"));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{}: not an RGB image", png_path.display());
    let pixels = || buf[..info.buffer_size()].chunks(channels);
    let coloured = pixels()
        .filter(|p| {
            let hi = p[0].max(p[1]).max(p[2]);
            let lo = p[0].min(p[1]).min(p[2]);
            hi - lo > 60
        })
        .count();
    let inked = pixels().filter(|p| p[0].max(p[1]).max(p[2]) < 160).count();
    (info.width, info.height, coloured, inked)
}

/// The checks every rendered report passes; returns the ids of the charts drawn.
fn assert_seen_as_a_person_would(r: &Rendered, html: &Path) -> Vec<String> {
    let name = html.display();
    assert!(r.console.is_empty(), "{name}: console: {:?}", r.console);
    assert_eq!(r.selftest["errors"], Value::Array(vec![]), "{name}");
    let file_url = format!("file://{}", html.canonicalize().expect("path").display());
    let others: Vec<&String> = r
        .requests
        .iter()
        .filter(|u| !u.starts_with(&file_url))
        .collect();
    assert!(
        others.is_empty(),
        "{name}: requests left the page: {others:?}"
    );
    assert!(
        r.dom.contains("Content-Security-Policy"),
        "{name}: no policy forbidding requests"
    );
    let mut ids = Vec::new();
    for c in r.selftest["charts"].as_array().expect("charts") {
        let id = c["id"].as_str().expect("id").to_string();
        for axis in ["x_label", "y_label"] {
            let label = c[axis].as_str().unwrap_or("");
            let has_unit =
                label.contains('(') || ["%", "MB", "MB/s", "ms"].iter().any(|u| label.ends_with(u));
            assert!(has_unit, "{name}: chart {id}: {axis} {label:?} has no unit");
        }
        assert!(
            c["coloured_pixels"].as_u64().unwrap_or(0) > 50,
            "{name}: chart {id} is blank: {c}"
        );
        ids.push(id);
    }
    if !r.selftest["zoom_ms"].as_array().is_none_or(Vec::is_empty) {
        // A hand on the charts, as events: the zoom took, Ctrl+wheel zooms, shift-drag
        // pans, the other charts over time follow, a double-click zooms out, a drag zooms in.
        for what in [
            "zoom_applied",
            "wheel_zoomed",
            "panned",
            "followed",
            "reset",
            "drag_zoomed",
        ] {
            assert_eq!(r.selftest[what], true, "{name}: {what}: {}", r.selftest);
        }
    }
    let figures = r.dom.matches("<figure class=\"chart\"").count();
    assert_eq!(figures, ids.len(), "{name}: a figure without a chart");
    let (w, h, coloured, inked) = coloured_pixels(&r.screenshot);
    assert!(w >= 1000 && h >= 1000, "{name}: screenshot {w}x{h}");
    assert!(inked > 2000, "{name}: the screenshot is blank");
    assert!(
        coloured >= 500 * ids.len(),
        "{name}: the screenshot shows almost nothing coloured ({coloured} pixels)"
    );
    ids
}

fn report(dir: &Path, inputs: &[&Path], out: &Path) {
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(dir, &args);
}

#[test]
fn every_run_kind_renders_in_chromium() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let rec = record_json(dir, "rec.json", "4");
    let watch = dir.join("watch.json");
    std::fs::write(
        &watch,
        ok(
            dir,
            &[
                "watch",
                "--duration",
                "3s",
                "--interval",
                "100ms",
                "--output-format",
                "json",
            ],
        ),
    )
    .expect("watch");
    let bench = dir.join("bench.json");
    std::fs::write(
        &bench,
        ok(
            dir,
            &[
                "bench",
                "--name=seq",
                "--rw=write",
                "--bs=256k",
                "--size=64M",
                "--filename=bench.data",
                "--runtime=2s",
                "--time_based",
                "--output-format=json",
            ],
        ),
    )
    .expect("bench");
    let audit = dir.join("audit.json");
    std::fs::write(&audit, ok(dir, &["audit", ".", "--output-format", "json"])).expect("audit");
    let tune = dir.join("tune.json");
    std::fs::write(
        &tune,
        ok(dir, &["tune", "status", "--output-format", "json"]),
    )
    .expect("tune");
    let compare = dir.join("compare.json");
    let rec2 = record_json(dir, "rec16.json", "16");
    std::fs::write(
        &compare,
        ok(
            dir,
            &[
                "compare",
                rec.to_str().expect("utf-8"),
                rec2.to_str().expect("utf-8"),
                "--output-format",
                "json",
            ],
        ),
    )
    .expect("compare");
    let check = dir.join("check.json");
    judged(dir, &["check", ".", "--quick", "--output", "check.json"]);
    let mut kinds: Vec<(&str, PathBuf, &[&str])> = vec![
        (
            "record",
            rec.clone(),
            &[
                "throughput",
                "page_cache",
                "write_latency",
                "lateness",
                "write_cdf",
                "cpu",
                "device",
            ],
        ),
        ("watch", watch, &["page_cache", "cpu"]),
        ("bench", bench, &["job_latency_cdf", "page_cache"]),
        ("audit", audit, &[]),
        ("tune", tune, &[]),
        ("compare", compare, &[]),
        ("check", check, &[]),
    ];
    if common::have("fio") {
        let fio = dir.join("fio.json");
        let out = Command::new("fio")
            .current_dir(dir)
            .args([
                "--name=seq",
                "--rw=write",
                "--bs=256k",
                "--size=64M",
                "--filename=fio.data",
                "--output-format=json",
            ])
            .fio_output();
        assert!(out.status.success());
        std::fs::write(&fio, out.stdout).expect("fio json");
        kinds.push(("fio", fio, &["job_latency_cdf"]));
    } else {
        common::skip(
            "every_run_kind_renders_in_chromium (fio's JSON)",
            "needs fio (scripts/install-deps.sh --test installs it)",
        );
    }
    for (kind, json, expected) in kinds {
        let html = dir.join(format!("{kind}.html"));
        report(dir, &[&json], &html);
        let text = std::fs::read_to_string(&html).expect("html");
        assert!(
            text.contains(&format!("{kind} run")) || kind == "fio" || kind == "bench",
            "{kind}: the kind is not named"
        );
        let Some(r) = render(
            "every_run_kind_renders_in_chromium",
            &html,
            &dir.join(format!("{kind}-render")),
        ) else {
            return;
        };
        let ids = assert_seen_as_a_person_would(&r, &html);
        for id in expected {
            assert!(
                ids.iter().any(|i| i == id),
                "{kind}: no {id} chart in {ids:?}"
            );
        }
        match kind {
            "audit" | "check" => assert!(
                r.dom.contains("Findings and their fixes"),
                "{kind}: findings missing"
            ),
            "record" => {
                // The verdict the run reached (which a busy machine may move) is the one
                // the page shows.
                let run: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&json).expect("record json"))
                        .expect("record json parses");
                let verdict: sinkrate_model::verdict::Verdict =
                    serde_json::from_value(run["verdict"].clone()).expect("verdict");
                assert!(r.dom.contains(verdict.label()), "verdict {verdict:?}");
                assert!(r.dom.contains("Streams") && r.dom.contains("cam0"));
            }
            "fio" => assert!(r.dom.contains("fio-3"), "fio's version named"),
            "compare" => assert!(
                r.dom.contains("Runs by configuration") && r.dom.contains("the baseline"),
                "compare's rows as a table"
            ),
            _ => {}
        }
    }
}

#[test]
fn a_label_holding_script_markup_still_draws_every_chart() {
    // `<!--<script>` in a name left the page's inline JSON in the HTML parser's "double
    // escaped" state: it swallowed the rest of the page and no chart was drawn.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let a = record_json(dir, "a.json", "4");
    let html = dir.join("marked.html");
    let a = a.to_str().expect("utf-8");
    ok(
        dir,
        &[
            "report",
            a,
            a,
            "--label",
            "<!--<script>",
            "--label",
            "x</script><script>alert(1)</script>&\u{2028}",
            "-o",
            html.to_str().expect("utf-8"),
        ],
    );
    let Some(r) = render(
        "a_label_holding_script_markup_still_draws_every_chart",
        &html,
        &dir.join("render"),
    ) else {
        return;
    };
    let ids = assert_seen_as_a_person_would(&r, &html);
    assert!(ids.len() >= 5, "charts drawn: {ids:?}");
}

#[test]
fn runs_overlay_and_png_files_are_pictures() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let a = record_json(dir, "four.json", "4");
    let b = record_json(dir, "sixteen.json", "16");
    let html = dir.join("both.html");
    let png_dir = dir.join("png");
    ok(
        dir,
        &[
            "report",
            a.to_str().expect("utf-8"),
            b.to_str().expect("utf-8"),
            "-o",
            html.to_str().expect("utf-8"),
            "--png",
            png_dir.to_str().expect("utf-8"),
        ],
    );
    let text = std::fs::read_to_string(&html).expect("html");
    assert!(text.contains("four: written by the application"));
    assert!(text.contains("sixteen: written by the application"));
    for id in [
        "throughput",
        "page_cache",
        "write_latency",
        "lateness",
        "write_cdf",
        "cpu",
    ] {
        let p = png_dir.join(format!("{id}.png"));
        let (w, h, coloured, _) = coloured_pixels(&p);
        assert_eq!((w, h), (1200, 480), "{id}.png");
        assert!(
            coloured > 300,
            "{id}.png is blank ({coloured} coloured pixels)"
        );
    }
    // Existing PNG files are kept without --force.
    let again = sinkrate_sub(
        "report",
        &[
            a.to_str().expect("utf-8"),
            "-o",
            dir.join("again.html").to_str().expect("utf-8"),
            "--png",
            png_dir.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(again.0, Some(2), "{}", again.2);
    assert!(again.2.contains("--force"), "{}", again.2);
    let Some(r) = render(
        "runs_overlay_and_png_files_are_pictures",
        &html,
        &dir.join("render"),
    ) else {
        return;
    };
    assert_seen_as_a_person_would(&r, &html);
    let lateness = r.selftest["charts"]
        .as_array()
        .expect("charts")
        .iter()
        .find(|c| c["id"] == "lateness")
        .expect("lateness chart");
    assert_eq!(lateness["series"], 4, "two streams of each run: {lateness}");
}

#[test]
fn commands_write_their_report_at_the_end() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("data")).expect("data");
    judged(
        dir,
        &[
            "record",
            "--dir",
            "data",
            "--duration",
            "2s",
            "--report",
            "rec.html",
        ],
    );
    ok(
        dir,
        &["watch", "--duration", "1s", "--report", "watch.html"],
    );
    ok(
        dir,
        &[
            "bench",
            "--name=j",
            "--rw=write",
            "--size=16M",
            "--filename=b.data",
            "--report",
            "bench.html",
        ],
    );
    for (f, kind) in [("rec.html", "record"), ("watch.html", "watch")] {
        let text = std::fs::read_to_string(dir.join(f)).expect(f);
        assert!(text.starts_with("<!doctype html>"), "{f}");
        assert!(text.contains(&format!("{kind} run")), "{f}");
    }
    assert!(std::fs::read_to_string(dir.join("bench.html"))
        .expect("bench.html")
        .contains("Jobs (fio&#39;s figures)"));
    // A report path that cannot be written (a directory) is refused before the run.
    let data = dir.join("data");
    let (code, _, err) = sinkrate_sub(
        "record",
        &[
            "--dir",
            data.to_str().expect("utf-8"),
            "--duration",
            "1s",
            "--report",
            data.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--report"), "{err}");
}

#[test]
fn bad_inputs_get_one_line_each_and_the_rest_is_still_reported() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let good = record_json(dir, "good.json", "4");
    let cases: [(&str, &str, &str); 5] = [
        ("notjson.json", "hello", "not JSON"),
        ("array.json", "[1, 2]", "neither a sinkrate result"),
        (
            "future.json",
            r#"{"schema": "sinkrate.run/9", "kind": "record"}"#,
            "sinkrate.run/9",
        ),
        (
            "truncated.json",
            r#"{"schema": "sinkrate.run/1", "kind": "record", "config": {"#,
            "not JSON",
        ),
        (
            "notarun.json",
            r#"{"schema": "sinkrate.run/1", "kind": "record", "verdict": "keeps_up"}"#,
            "notarun.json",
        ),
    ];
    for (name, body, says) in cases {
        let p = dir.join(name);
        std::fs::write(&p, body).expect("write");
        let (code, _, err) = sinkrate_sub(
            "report",
            &[
                p.to_str().expect("utf-8"),
                "-o",
                dir.join("x.html").to_str().expect("utf-8"),
            ],
        );
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 2, "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(
            !dir.join("x.html").exists(),
            "{name}: a report from nothing"
        );
    }
    // One bad file among good ones: named, the report still made, exit 2.
    let out = dir.join("mixed.html");
    let (code, _, err) = sinkrate_sub(
        "report",
        &[
            good.to_str().expect("utf-8"),
            dir.join("notjson.json").to_str().expect("utf-8"),
            "-o",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("notjson.json"), "{err}");
    assert!(
        std::fs::read_to_string(&out)
            .expect("report")
            .contains("KEEPS UP")
            || out.exists()
    );
    // The default name sits beside the first input; an existing file needs --force, and an
    // input is never overwritten.
    let (code, _, err) = sinkrate_sub("report", &[good.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(dir.join("good.html").exists());
    let (code, _, err) = sinkrate_sub("report", &[good.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    let (code, _, _) = sinkrate_sub("report", &[good.to_str().expect("utf-8"), "--force"]);
    assert_eq!(code, Some(0));
    let before = std::fs::read(&good).expect("input");
    let (code, _, err) = sinkrate_sub(
        "report",
        &[
            good.to_str().expect("utf-8"),
            "-o",
            good.to_str().expect("utf-8"),
            "--force",
        ],
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("that is an input"), "{err}");
    assert_eq!(
        std::fs::read(&good).expect("input"),
        before,
        "the input was changed"
    );
}

#[test]
fn results_written_by_earlier_versions_still_make_reports() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fixtures = repo().join("tests/fixtures/results");
    for name in common::files_in(&fixtures) {
        if !name.ends_with(".json") {
            continue;
        }
        let out = tmp.path().join(name.replace(".json", ".html"));
        let (code, _, err) = sinkrate_sub(
            "report",
            &[
                fixtures.join(&name).to_str().expect("utf-8"),
                "-o",
                out.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(code, Some(0), "{name}: {err}");
        let html = std::fs::read_to_string(&out).expect("html");
        assert!(html.contains("class=\"verdict"), "{name}: no verdict line");
    }
}

#[test]
fn a_failed_run_is_reported_as_failed_never_as_keeping_up() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fixture = repo().join("tests/fixtures/results/record.json");
    let mut run: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture")).expect("json");
    run["verdict"] = Value::from("failed");
    run["error"] =
        serde_json::json!({"what": "write of 65536 bytes: Input/output error", "at_s": 3.5});
    let input = tmp.path().join("failed.json");
    std::fs::write(&input, run.to_string()).expect("write");
    let out = tmp.path().join("failed.html");
    let (code, _, err) = sinkrate_sub(
        "report",
        &[
            input.to_str().expect("utf-8"),
            "-o",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let html = std::fs::read_to_string(&out).expect("html");
    assert!(
        html.contains("class=\"verdict bad\">FAILED<"),
        "the verdict, no headroom"
    );
    assert!(html.contains("the run failed: write of 65536 bytes: Input/output error"));
    assert!(!html.contains("KEEPS UP"));
}
