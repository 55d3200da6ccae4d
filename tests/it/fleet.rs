//! The fleet's metrics (`watch --prometheus`) read by the real engines: promtool checks the
//! textfile, and node_exporter serves it beside its own `node_disk_*` series, whose counts
//! of the same device must be sinkrate's (the kernel's counter, read by a program that is
//! not sinkrate). The device is an emulated card that holds every write 600 ms: requests in
//! flight with none completed, the stall that `sinkrate_disk_stalls_total` counts.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A node_exporter on a loopback port serving `textfile_dir` and every disk's diskstats,
/// stopped on drop.
struct NodeExporter {
    child: Child,
    port: u16,
}

impl NodeExporter {
    /// With `only_disks_and_textfile`, node_exporter's other collectors stay off.
    fn start(textfile_dir: &Path, only_disks_and_textfile: bool) -> NodeExporter {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let mut cmd = Command::new("prometheus-node-exporter");
        if only_disks_and_textfile {
            cmd.arg("--collector.disable-defaults");
        }
        let child = cmd
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                textfile_dir.display()
            ))
            .arg("--collector.diskstats")
            // Its default leaves loop devices out; this one leaves out nothing.
            .arg("--collector.diskstats.device-exclude=^$")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus-node-exporter starts");
        NodeExporter { child, port }
    }

    /// GET /metrics, retried while the exporter comes up.
    fn scrape(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.get() {
                Ok(body) => return body,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("node_exporter on port {} never answered: {e}", self.port),
            }
        }
    }

    fn get(&self) -> std::io::Result<String> {
        http_get(self.port, "/metrics")
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the series `name{device="device"}` (or `name` alone) in a scrape.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The device's bytes written, from /proc/diskstats (sectors of 512 bytes).
fn kernel_written_bytes(device: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/diskstats").expect("diskstats");
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&device))
        .and_then(|f| f.get(9)?.parse::<u64>().ok())
        .expect("the device in /proc/diskstats")
        * 512
}

#[test]
fn node_exporter_serves_the_fleet_metrics_and_its_disk_counts_agree() {
    common::with_root(
        "node_exporter_serves_the_fleet_metrics_and_its_disk_counts_agree",
        &[
            "nbdkit",
            "nbdfuse",
            "fusermount3",
            "dd",
            "promtool",
            "prometheus-node-exporter",
        ],
        || {
            // A raw card (no filesystem, so nothing but the test writes to it) whose every
            // write request takes 600 ms.
            let card = common::SlowDev::new(&[
                "--fs",
                "none",
                "--size",
                "64M",
                "--write-rate",
                "20M",
                "--write-latency",
                "600ms",
            ]);
            let device = card.device_name();
            let before = kernel_written_bytes(&device);
            let dir = tempfile::tempdir().expect("tempdir");
            let prom = dir.path().join("sinkrate.prom");
            let target = format!("of=/dev/{device}");
            let started = Instant::now();
            let out = Command::new(common::sinkrate_path())
                .args(["watch", "--device", &device, "--interval", "50ms"])
                .arg("--prometheus")
                .arg(&prom)
                .args(["--prometheus-every", "1s", "--live", "never"])
                .args(["--output-format", "json", "--"])
                .args(["dd", "if=/dev/zero", &target, "bs=1M", "count=3"])
                .args(["oflag=direct", "status=none"])
                .output()
                .expect("watch runs");
            let took = started.elapsed().as_secs_f64();
            common::succeeded(&out);
            let text = std::fs::read_to_string(&prom).expect("the textfile");
            // promtool, Prometheus' own linter of the exposition format.
            let mut lint = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("promtool runs");
            lint.stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("to promtool");
            let lint = lint.wait_with_output().expect("promtool ends");
            assert!(
                lint.status.success(),
                "promtool: {}{}\n{text}",
                String::from_utf8_lossy(&lint.stdout),
                String::from_utf8_lossy(&lint.stderr)
            );

            let node = NodeExporter::start(dir.path(), true);
            let served = node.scrape();
            let on = |name: &str| format!("{name}{{device=\"{device}\"}}");
            assert_eq!(value(&served, "node_textfile_scrape_error"), Some(0.0));
            assert_eq!(value(&served, "sinkrate_watch_running"), Some(0.0));
            let ours = value(&served, &on("sinkrate_disk_written_bytes_total"))
                .expect("sinkrate's series for the card, served");
            let theirs = value(&served, &on("node_disk_written_bytes_total"))
                .expect("node_exporter's own series for the card");
            // The card was idle after dd: both read the kernel's final count.
            assert_eq!(ours, theirs, "{served}");
            assert_eq!(
                ours as u64,
                before + (3 << 20),
                "dd wrote 3 MiB, nothing else"
            );
            let busy = value(&served, &on("sinkrate_disk_io_time_seconds_total")).expect("io time");
            let node_busy =
                value(&served, &on("node_disk_io_time_seconds_total")).expect("node io time");
            assert!((busy - node_busy).abs() < 1e-6, "{busy} vs {node_busy}");
            // Every write waited 600 ms with none completed: at least one stall of 250 ms
            // or more, none longer than the whole run, and no more than the writes.
            let stalls = value(&served, &on("sinkrate_disk_stalls_total")).expect("stalls");
            let longest =
                value(&served, &on("sinkrate_disk_longest_stall_seconds")).expect("longest");
            let writes = value(&served, &on("node_disk_writes_completed_total"))
                .expect("node's writes completed");
            eprintln!("{stalls} stalls, the longest {longest} s, in a run of {took:.2} s");
            assert!(
                stalls >= 1.0 && stalls <= writes,
                "{stalls} stalls, {writes} writes"
            );
            assert!(
                longest >= 0.25 && longest <= took,
                "longest {longest} s of {took} s"
            );
            let updated =
                value(&served, "sinkrate_last_update_timestamp_seconds").expect("last update");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs_f64();
            assert!(
                updated <= now && now - updated < took + 60.0,
                "{updated} {now}"
            );
        },
    );
}

/// The command line of the shipped systemd unit (continuation lines joined).
fn unit_exec_start() -> Vec<String> {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd/sinkrate-watch.service"),
    )
    .expect("the unit file");
    let joined = unit.replace("\\\n", " ");
    let line = joined
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_shipped_service_runs_and_leaves_a_file_that_says_it_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let textfile_dir = "/var/lib/prometheus/node-exporter";
    let args: Vec<String> = unit_exec_start()
        .into_iter()
        .skip(1)
        .map(|a| a.replace(textfile_dir, &dir.path().to_string_lossy()))
        .collect();
    let prom = dir.path().join("sinkrate.prom");
    let mut child = Command::new(common::sinkrate_path())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the unit's command runs");
    // The first rewrite comes with the first sample.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !prom.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let running = std::fs::read_to_string(&prom).expect("the textfile while it runs");
    assert!(running.contains("sinkrate_watch_running 1\n"), "{running}");
    // systemd stops a service with SIGTERM.
    // SAFETY: kill with a child's pid and a valid signal.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("the watch ends");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    // The unit counts 130 (ended by a signal) as a success.
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd/sinkrate-watch.service"),
    )
    .expect("unit");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(unit.contains("SuccessExitStatus=130"));
    let left = std::fs::read_to_string(&prom).expect("the textfile left");
    assert!(left.contains("sinkrate_watch_running 0\n"), "{left}");
    assert!(!left.contains("sinkrate_dirty_bytes"), "{left}");
    assert_eq!(common::files_in(dir.path()), ["sinkrate.prom"]);
}

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs promtool with `args`; its output on failure.
fn promtool(args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The metric names (sinkrate_* and node_*) a text mentions.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let starts = (i == 0 || !word(bytes[i - 1]))
            && (text[i..].starts_with("sinkrate_") || text[i..].starts_with("node_"));
        if starts {
            let end = (i..bytes.len())
                .find(|&j| !word(bytes[j]))
                .unwrap_or(bytes.len());
            names.insert(text[i..end].to_string());
            i = end;
        } else {
            i += 1;
        }
    }
    names
}

/// The names of the series a scrape holds.
fn served_names(scrape: &str) -> std::collections::BTreeSet<String> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_alert_rules_and_the_dashboard_use_only_metrics_that_are_served() {
    common::with_root(
        "the_alert_rules_and_the_dashboard_use_only_metrics_that_are_served",
        &["promtool", "prometheus-node-exporter"],
        || {
            let rules = repo("deploy/prometheus/sinkrate-rules.yml");
            let rules_text = std::fs::read_to_string(&rules).expect("rules");
            promtool(&["check", "rules", &rules.to_string_lossy()]);
            promtool(&[
                "test",
                "rules",
                &repo("deploy/prometheus/sinkrate-rules.test.yml").to_string_lossy(),
            ]);

            // Every query of the dashboard parses: promtool checks them as recording rules,
            // with Grafana's variables given values.
            let dashboard: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(repo("deploy/grafana/sinkrate-dashboard.json"))
                    .expect("dashboard"),
            )
            .expect("the dashboard is JSON");
            let exprs: Vec<String> = dashboard["panels"]
                .as_array()
                .expect("panels")
                .iter()
                .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
                .map(|t| t["expr"].as_str().expect("expr").to_string())
                .collect();
            assert!(exprs.len() >= 8, "{exprs:?}");
            let dir = tempfile::tempdir().expect("tempdir");
            let mut as_rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
            for (i, e) in exprs.iter().enumerate() {
                let e = e
                    .replace("$__rate_interval", "1m")
                    .replace("$__range", "1h")
                    .replace("$instance", ".*")
                    .replace("$device", ".*");
                as_rules.push_str(&format!(
                    "      - record: dashboard:panel{i}\n        expr: {}\n",
                    serde_json::to_string(&e).expect("quoted")
                ));
            }
            let as_rules_path = dir.path().join("dashboard-rules.yml");
            std::fs::write(&as_rules_path, as_rules).expect("write");
            promtool(&["check", "rules", &as_rules_path.to_string_lossy()]);

            // What is served: a running watch's file and node_exporter's own collectors.
            let prom = dir.path().join("sinkrate.prom");
            let mut watch = KilledAtEnd(
                Command::new(common::sinkrate_path())
                    .args(["watch", "--interval", "100ms", "--live", "never"])
                    .arg("--prometheus")
                    .arg(&prom)
                    .args(["--output-format", "json"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("watch runs"),
            );
            let deadline = Instant::now() + Duration::from_secs(20);
            while !prom.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let node = NodeExporter::start(dir.path(), false);
            let scrape = node.scrape();
            // SAFETY: kill with a child's pid and a valid signal.
            unsafe { libc::kill(watch.0.id() as i32, libc::SIGINT) };
            let _ = watch.0.wait();
            let served = served_names(&scrape);
            assert!(served.contains("sinkrate_disk_stalled_seconds"), "{scrape}");
            let used: std::collections::BTreeSet<String> = metric_names(&rules_text)
                .into_iter()
                .chain(exprs.iter().flat_map(|e| metric_names(e)))
                .collect();
            assert!(used.len() >= 10, "{used:?}");
            let missing: Vec<&String> = used.iter().filter(|n| !served.contains(*n)).collect();
            assert!(missing.is_empty(), "used but not served: {missing:?}");
        },
    );
}

/// Now, in Unix seconds (Prometheus' time).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// GET `path` from a server on a loopback port: the body of a 200 answer.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.contains(" 200 ") => Ok(body.to_string()),
        _ => Err(std::io::Error::other(format!("answer: {text:.300}"))),
    }
}

/// A query string's value, percent-encoded.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus on a loopback port, scraping node_exporter every second and evaluating
/// `rules` every second, stopped on drop.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &Path, node_port: u16, rules: &str) -> Prometheus {
        std::fs::write(dir.join("rules.yml"), rules).expect("rules");
        std::fs::write(
            dir.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files: [rules.yml]\n\
                 scrape_configs:\n  - job_name: board\n    static_configs:\n      \
                 - targets: ['127.0.0.1:{node_port}']\n        labels: {{board: cam1}}\n"
            ),
        )
        .expect("config");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_get(port, "/-/ready").is_err() {
            assert!(Instant::now() < deadline, "prometheus never became ready");
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The state of the alert `name` ("firing", "pending"), or None.
    fn alert(&self, name: &str) -> Option<String> {
        let body = http_get(self.port, "/api/v1/alerts").ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["alerts"]
            .as_array()?
            .iter()
            .find(|a| a["labels"]["alertname"] == name)
            .and_then(|a| a["state"].as_str().map(str::to_string))
    }

    /// One number from an instant query evaluated at `at` (Unix time).
    fn value_at(&self, query: &str, at: f64) -> Option<f64> {
        let path = format!("/api/v1/query?query={}&time={at:.3}", encode(query));
        let body = http_get(self.port, &path).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
    }

    /// A query evaluated at `at`, asked again for up to 15 s until it has a value: a busy
    /// machine delays scrapes, and the samples of the moment come in late.
    fn value_when_scraped(&self, query: &str, at: f64) -> Option<f64> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let v = self.value_at(query, at);
            if v.is_some() || Instant::now() > deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Waits up to `within` for `pred` on the alert's state.
    fn wait_alert(
        &self,
        name: &str,
        within: Duration,
        pred: impl Fn(Option<&str>) -> bool,
    ) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if pred(self.alert(name).as_deref()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shipped rules with their times divided by 15 (two minutes become eight seconds), so
/// that a test sees them fire and clear in seconds; the expressions are the shipped ones.
/// (Divided by 30, a rate over 4 s of 1 s scrapes lost its samples when a busy machine
/// delayed two scrapes, and the alert did not fire in a busy CI run: 8 s hold eight.)
fn rules_fifteen_times_faster() -> String {
    let text =
        std::fs::read_to_string(repo("deploy/prometheus/sinkrate-rules.yml")).expect("rules");
    let mut out = text;
    for (from, to) in [
        ("[2m]", "[8s]"),
        ("[10m]", "[40s]"),
        ("for: 2m", "for: 8s"),
        ("for: 1m", "for: 4s"),
        ("for: 5m", "for: 20s"),
        ("> 60", "> 4"),
    ] {
        out = out.replace(from, to);
    }
    assert!(
        !out.contains("m]") && !out.contains("for: 1m"),
        "a time left unscaled: {out}"
    );
    out
}

fn tune_apply(settings: &[&str]) {
    let out = Command::new(common::sinkrate_path())
        .args(["tune", "apply"])
        .args(settings)
        .output()
        .expect("tune apply");
    common::succeeded(&out);
}

/// `sinkrate tune restore` when dropped: the machine's settings back after the test, also
/// when it fails.
struct RestoreOnDrop;

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        let _ = Command::new(common::sinkrate_path())
            .args(["tune", "restore"])
            .output();
    }
}

/// A watch the test started: gone when the test ends, also when it fails half way (a failed
/// test left it running, writing into a removed directory).
struct KilledAtEnd(std::process::Child);

impl Drop for KilledAtEnd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn record_on(card: &Path, seconds: u32) -> Child {
    Command::new(common::sinkrate_path())
        .args(["record", "--dir"])
        .arg(card)
        .args([
            "--streams",
            "1",
            "--fps",
            "30",
            "--frame-size",
            "100k",
            "--buffers",
            "4",
        ])
        .args(["--duration", &format!("{seconds}s"), "--live", "never"])
        .args(["--output-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("record runs")
}

#[test]
fn a_recording_at_risk_fires_the_alert_on_prometheus_and_the_fix_clears_it() {
    common::with_root(
        "a_recording_at_risk_fires_the_alert_on_prometheus_and_the_fix_clears_it",
        &[
            "prometheus",
            "prometheus-node-exporter",
            "nbdkit",
            "nbdfuse",
            "fusermount3",
            "mkfs.ext4",
        ],
        || {
            // A card that pauses a second after every 8 MB, as garbage collection does.
            let card = common::SlowDev::new(&[
                "--write-rate",
                "20MB",
                "--gc-pauses",
                "1s/8M",
                "--size",
                "512M",
            ]);
            let device = card.device_name();
            let dir = tempfile::tempdir().expect("tempdir");
            let textfile = dir.path().join("textfile");
            std::fs::create_dir(&textfile).expect("textfile dir");
            // The setting at fault, a page cache that absorbs under a second of the stream,
            // set as a user would (tune apply, journaled), and put back by tune restore when
            // the test ends, also if it fails.
            let _restore = RestoreOnDrop;
            tune_apply(&[
                "vm.dirty_bytes=4194304",
                "vm.dirty_background_bytes=2097152",
            ]);
            let mut watch = KilledAtEnd(
                Command::new(common::sinkrate_path())
                    .args(["watch", "--device", &device, "--interval", "100ms"])
                    .arg("--prometheus")
                    .arg(textfile.join("sinkrate.prom"))
                    .args([
                        "--prometheus-every",
                        "1s",
                        "--live",
                        "never",
                        "--output-format",
                        "json",
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("watch runs"),
            );
            let node = NodeExporter::start(&textfile, true);
            let prometheus =
                Prometheus::start(dir.path(), node.port, &rules_fifteen_times_faster());

            // The recording drops frames, and the alert fires while it runs.
            let first = record_on(card.path(), 30);
            let fired =
                prometheus.wait_alert("SinkrateWritersThrottled", Duration::from_secs(30), |s| {
                    s == Some("firing")
                });
            let first = first.wait_with_output().expect("record ends");
            let first_ended = unix_now();
            let v: serde_json::Value = serde_json::from_slice(&first.stdout).expect("record json");
            assert!(
                fired,
                "the alert never fired; the recording: {}",
                v["verdict_text"]
            );
            assert_eq!(v["verdict"], "drops", "{}", v["verdict_text"]);
            // How long the writers were throttled over the first recording (its 30 seconds),
            // as Prometheus has it. (Over its last 20 seconds, an idle CI run once found no
            // value at all: too few scrapes in so short a window when they come late.)
            let throttled = "increase(sinkrate_throttled_seconds_total[30s])";
            let before = prometheus
                .value_when_scraped(throttled, first_ended)
                .unwrap_or_else(|| {
                    panic!(
                        "no value for {throttled} at the first recording's end; the counter's last minute: {:?}",
                        prometheus.value_at(
                            "count_over_time(sinkrate_throttled_seconds_total[60s])",
                            first_ended
                        )
                    )
                });

            // The fix check prints for this (the page cache absorbing 10 s of the stream).
            tune_apply(&[
                "vm.dirty_bytes=60000000",
                "vm.dirty_background_bytes=30000000",
            ]);
            let second = record_on(card.path(), 30);
            let cleared =
                prometheus.wait_alert("SinkrateWritersThrottled", Duration::from_secs(25), |s| {
                    s.is_none()
                });
            let second = second.wait_with_output().expect("record ends");
            let second_ended = unix_now();

            // SAFETY: kill with a child's pid and a valid signal.
            unsafe { libc::kill(watch.0.id() as i32, libc::SIGINT) };
            let _ = watch.0.wait();
            let v: serde_json::Value = serde_json::from_slice(&second.stdout).expect("record json");
            assert!(
                cleared,
                "the alert stayed; the second recording: {}",
                v["verdict_text"]
            );
            // Prometheus has the throttling the alert fired on: over a second in the first
            // recording, which this card and the 4 MB limit cause on any machine. What it has after the fix is printed, not compared: vm.dirty_bytes is
            // the whole machine's, and tests writing beside this one are throttled under it
            // too (an idle CI run saw 2.45 s before and 2.44 s after in 10 s windows, with
            // the alert cleared).
            let late = prometheus.value_when_scraped(throttled, second_ended);
            eprintln!("throttled {before} s in the 30 s before the fix, {late:?} s after");
            assert!(
                before > 1.0,
                "throttled {before} s in the 30 s before the fix"
            );
        },
    );
}
