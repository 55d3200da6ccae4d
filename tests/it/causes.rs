//! Why a write stalled, from the kernel's own events: each real cause produced on a real
//! kernel here and named by the breakdown (asserting the cause, not timings), and the same
//! run observed by trace-cmd agreeing on the throttle pauses, the journal commits and the
//! device's service times.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, SlowDev, Sysctl};

/// The run's JSON, with the kernel's account checked to come from the kernel.
fn record(dir: &Path, extra: &[&str]) -> serde_json::Value {
    record_by(Command::new(common::sinkrate_path()), dir, extra)
}

/// [`record`] by another binary of sinkrate's (an ARM one under qemu-user).
pub(crate) fn record_by(mut sinkrate: Command, dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "record",
        "--dir",
        dir.to_str().expect("utf-8 path"),
        "--streams",
        "1",
        "--fps",
        "30",
        "--live",
        "never",
        "--output-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = sinkrate.args(&args).output().expect("sinkrate record runs");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "record's JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        run["kernel"]["inferred_because"].is_null(),
        "the kernel's events were read: {}",
        run["kernel"]
    );
    assert!(
        !run["stalls"].as_array().expect("stalls").is_empty(),
        "the recording stalled: {}",
        run["verdict_text"]
    );
    run
}

/// The cause that took the most time over all of the run's stalls.
pub(crate) fn largest_cause(run: &serde_json::Value) -> String {
    let seconds = run["kernel"]["stall_seconds"]
        .as_object()
        .expect("stall_seconds");
    let (name, _) = seconds
        .iter()
        .max_by(|a, b| {
            a.1.as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.1.as_f64().unwrap_or(0.0))
        })
        .expect("causes");
    name.trim_end_matches("_s").to_string()
}

/// Every stall's parts add up to its duration (what no event explains is a part too).
pub(crate) fn parts_add_up(run: &serde_json::Value) {
    for st in run["stalls"].as_array().expect("stalls") {
        let total: f64 = st["causes"]["seconds"]
            .as_object()
            .expect("a breakdown per stall")
            .values()
            .filter_map(|v| v.as_f64())
            .sum();
        let took = st["duration_ms"].as_f64().expect("duration") / 1e3;
        assert!(
            (total - took).abs() < 0.002,
            "the parts ({total:.4} s) add up to the call ({took:.4} s): {st}"
        );
    }
}

/// A trace instance of the test's own (never sinkrate's), read by trace-cmd at the end: the
/// independent account of the same run. trace-cmd's own `record` cannot run in this
/// container (it writes /proc/sys/kernel/ftrace_enabled and opens set_ftrace_pid, both
/// refused here), so the events are enabled by plain writes and `trace-cmd extract` reads
/// and decodes the instance's ring buffers.
pub(crate) struct PeerTrace {
    dir: PathBuf,
    name: String,
    _top_level_untouched_elsewhere: common::LanesLock,
}

impl PeerTrace {
    pub(crate) fn start(events: &[(&str, Option<String>)]) -> PeerTrace {
        let turn = common::trace_cmd_runs_here();
        let root = Path::new("/sys/kernel/tracing");
        if !root.join("instances").is_dir() {
            let _ = Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status();
        }
        let name = format!("peer-causes-{}", std::process::id());
        let dir = root.join("instances").join(&name);
        std::fs::create_dir(&dir).expect("a trace instance for trace-cmd");
        std::fs::write(dir.join("buffer_size_kb"), "8192").expect("buffer size");
        std::fs::write(dir.join("trace_clock"), "mono").expect("trace clock");
        for (event, filter) in events {
            let e = dir.join("events").join(event);
            if let Some(f) = filter {
                std::fs::write(e.join("filter"), f).expect("filter");
            }
            std::fs::write(e.join("enable"), "1").expect("enable");
        }
        PeerTrace {
            dir,
            name,
            _top_level_untouched_elsewhere: turn,
        }
    }

    /// trace-cmd's report of the instance, one event per line.
    pub(crate) fn finish(self, at: &Path) -> String {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        let dat = at.join("peer.dat");
        let out = Command::new("trace-cmd")
            .args(["extract", "-B", &self.name, "-o"])
            .arg(&dat)
            .output()
            .expect("trace-cmd extract runs");
        assert!(
            dat.exists(),
            "trace-cmd extract: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new("trace-cmd")
            .args(["report", "-i"])
            .arg(&dat)
            .output()
            .expect("trace-cmd report runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for PeerTrace {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("events/enable"), "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The card may hold 16 MB of dirty data and no more (strict: even while the machine is
/// under its own limit), until dropped. max_ratio is restored after max_bytes, which the
/// kernel keeps as a ratio.
pub(crate) fn per_device_limit(bdi: &str) -> Vec<Sysctl> {
    per_device_limit_of(bdi, 16 << 20)
}

/// As [`per_device_limit`], a cap of `bytes`.
pub(crate) fn per_device_limit_of(bdi: &str, bytes: u64) -> Vec<Sysctl> {
    let class = format!("/sys/class/bdi/{bdi}");
    let ratio = std::fs::read_to_string(format!("{class}/max_ratio")).expect("ratio");
    // Set as ratio (unchanged, to be put back), bytes, strict; put back in the opposite
    // order (a Vec drops front to back), the ratio last.
    let ratio = Sysctl::set(&format!("{class}/max_ratio"), ratio.trim());
    // The kernel keeps max_bytes as a share of the machine's dirty limit and refuses more
    // than all of it (EINVAL): a lane that lowered vm.dirty_bytes under 16 MiB has made the
    // whole limit smaller than the cap already, and the device's share stays at all of it.
    let bytes = Sysctl::try_set(&format!("{class}/max_bytes"), &bytes.to_string());
    let strict = Sysctl::set(&format!("{class}/strict_limit"), "1");
    [Some(strict), bytes, Some(ratio)]
        .into_iter()
        .flatten()
        .collect()
}

/// `7:0` and the kernel's dev_t of a block device by name.
pub(crate) fn dev_of(name: &str) -> (String, u64) {
    let text = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).expect("dev");
    let (ma, mi) = text.trim().split_once(':').expect("major:minor");
    let (ma, mi): (u64, u64) = (ma.parse().expect("major"), mi.parse().expect("minor"));
    (format!("{ma}:{mi}"), (ma << 20) | mi)
}

/// A field of a trace-cmd report line (`name=value`).
pub(crate) fn field(line: &str, name: &str) -> Option<i64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.trim_end_matches(',').parse().ok())
}

/// The event's time in nanoseconds and the thread, from trace-cmd's
/// `instance: comm-TID [cpu] secs.usecs: event: ...`.
fn stamp(line: &str) -> Option<(u64, i64)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let cpu = words.iter().position(|w| {
        w.starts_with('[') && w.ends_with(']') && w[1..w.len() - 1].parse::<u32>().is_ok()
    })?;
    let tid = words
        .get(cpu.checked_sub(1)?)?
        .rsplit('-')
        .next()?
        .parse()
        .ok()?;
    let secs = words.get(cpu + 1)?.trim_end_matches(':');
    let (s, us) = secs.split_once('.')?;
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1_000;
    Some((ns, tid))
}

#[test]
fn a_throttled_writer_is_named_throttled_and_trace_cmd_agrees() {
    common::with_root(
        "causes::a_throttled_writer_is_named_throttled_and_trace_cmd_agrees",
        &["trace-cmd"],
        || {
            let card = SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let (bdi, dev) = dev_of(&card.device_name());
            let _limit = per_device_limit(&bdi);
            let dev_filter = Some(format!("dev == {dev}"));
            let peer = PeerTrace::start(&[
                ("writeback/balance_dirty_pages", None),
                ("jbd2/jbd2_start_commit", dev_filter.clone()),
                ("block/block_rq_issue", dev_filter.clone()),
                ("block/block_rq_complete", dev_filter),
            ]);
            let run = record(
                card.path(),
                &[
                    "--bitrate",
                    "120M",
                    "--write-mode",
                    "buffered",
                    "--duration",
                    "6s",
                ],
            );
            let work = tempfile::tempdir().expect("tempdir");
            let report = peer.finish(work.path());
            parts_add_up(&run);
            // The run is named throttled, on this card: most of its stalls' time, and the
            // longest of the stalls named so, with the card's bdi as the evidence. (The
            // single worst stall may be a journal commit waiting on the same saturated card,
            // 0.75 s on one machine, its commit in the kernel's events: named journal.)
            let stalls = run["stalls"].as_array().expect("stalls");
            let longest = |cause: &str| {
                stalls
                    .iter()
                    .filter(|s| s["causes"]["largest"] == cause)
                    .max_by(|a, b| {
                        a["duration_ms"]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&b["duration_ms"].as_f64().unwrap_or(0.0))
                    })
            };
            assert_eq!(largest_cause(&run), "throttled", "{}", run["kernel"]);
            let throttled = longest("throttled").expect("a stall named throttled");
            assert_eq!(
                throttled["causes"]["throttle"]["bdi"],
                bdi.as_str(),
                "{throttled}"
            );
            if let Some(journal) = longest("journal") {
                assert!(
                    journal["causes"]["journal"]["took_ms"].as_f64().is_some(),
                    "a journal stall carries its commit: {journal}"
                );
            }
            let k = &run["kernel"];
            let window = k["traced_mono_ns"].as_array().expect("the traced window");
            let (from, to) = (
                window[0].as_u64().expect("from"),
                window[1].as_u64().expect("to"),
            );
            let inside = |ns: u64| ns >= from && ns <= to;
            // trace-cmd's throttle pauses of the writer thread sinkrate names.
            let mut pauses: HashMap<i64, f64> = HashMap::new();
            let mut commits = 0u64;
            let mut issued: HashMap<(String, bool), Vec<u64>> = HashMap::new();
            let mut service: Vec<u64> = Vec::new();
            for line in report.lines() {
                let Some((ns, tid)) = stamp(line) else {
                    continue;
                };
                if !inside(ns) {
                    continue;
                }
                if line.contains(" balance_dirty_pages: ") {
                    if let Some(p) = field(line, "pause").filter(|p| *p > 0) {
                        *pauses.entry(tid).or_default() += p as f64 / 1e3;
                    }
                } else if line.contains(" jbd2_start_commit: ") {
                    commits += 1;
                } else if let Some(rest) = line.split(" block_rq_issue: ").nth(1) {
                    // "7,0 WS 1310720 () 123456 + 2560 ..."; a flush has 0 sectors.
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    let sector = w.get(4).copied().unwrap_or("").to_string();
                    let sectors = w.get(6).copied().unwrap_or("0");
                    let flush = sectors == "0";
                    let key = (if flush { String::new() } else { sector }, flush);
                    let q = issued.entry(key).or_default();
                    if !flush {
                        q.clear();
                    }
                    q.push(ns);
                } else if let Some(rest) = line.split(" block_rq_complete: ").nth(1) {
                    // "7,0 WS () 123456 + 2560 ..."; a flush completes at sector -1.
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    let sector = w.get(3).copied().unwrap_or("");
                    let sectors = w.get(5).copied().unwrap_or("0");
                    let flush = sector == "18446744073709551615";
                    if sectors == "0" && !flush {
                        continue;
                    }
                    let key = (
                        if flush {
                            String::new()
                        } else {
                            sector.to_string()
                        },
                        flush,
                    );
                    if let Some(q) = issued.get_mut(&key).filter(|q| !q.is_empty()) {
                        service.push(ns - q.remove(0));
                    }
                }
            }
            let threads = k["throttled_threads"].as_array().expect("threads");
            assert!(!threads.is_empty(), "{k}");
            for t in threads {
                let tid = t["tid"].as_i64().expect("tid");
                let ours = t["pause_s"].as_f64().expect("pause_s");
                let theirs = pauses.get(&tid).copied().unwrap_or(0.0);
                let stamps: Vec<(u64, i64)> = report
                    .lines()
                    .filter(|l| l.contains(" balance_dirty_pages: "))
                    .filter_map(stamp)
                    .collect();
                assert!(
                    (ours - theirs).abs() <= (0.05 * theirs).max(0.004),
                    "thread {tid}: sinkrate {ours:.3} s of pauses, trace-cmd {theirs:.3} s \
                     (trace-cmd's report: {} lines, {} balance_dirty_pages events, the first \
                     and last {:?} {:?}, sinkrate's window {from}-{to}; its pauses by thread \
                     in the window {pauses:?})",
                    report.lines().count(),
                    stamps.len(),
                    stamps.first(),
                    stamps.last()
                );
            }
            assert_eq!(
                k["journal_commits"].as_u64(),
                Some(commits),
                "journal commits on {bdi}: sinkrate against trace-cmd"
            );
            service.sort_unstable();
            assert!(!service.is_empty(), "trace-cmd saw the card's requests");
            let rank = ((0.99 * service.len() as f64).ceil() as usize).clamp(1, service.len());
            let theirs = service[rank - 1] as f64 / 1e6;
            let ours = k["device_service_p99_ms"].as_f64().expect("p99");
            assert!(
                (ours - theirs).abs() <= 0.05 * theirs,
                "device p99: sinkrate {ours:.2} ms, trace-cmd {theirs:.2} ms"
            );
        },
    );
}

/// The issue's case as a user meets it: `check` on a card with a per-device dirty limit
/// names the kernel's throttling with its evidence (where the sampler alone saw "never"),
/// and `record` puts the throttling's fix first.
#[test]
fn check_and_record_name_a_per_device_limit_s_throttling_and_put_its_fix_first() {
    common::with_root(
        "causes::check_and_record_name_a_per_device_limit_s_throttling_and_put_its_fix_first",
        &[],
        || {
            let card = SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let (bdi, _) = dev_of(&card.device_name());
            let _limit = per_device_limit(&bdi);
            let work = tempfile::tempdir().expect("tempdir");
            let out = Command::new(common::sinkrate_path())
                .current_dir(work.path())
                .arg("check")
                .arg(card.path())
                .args(["--quick", "--bitrate", "120M", "--progress", "never"])
                .output()
                .expect("check runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let row = |name: &str| {
                text.lines()
                    .find(|l| l.trim_start().starts_with(name))
                    .unwrap_or_else(|| panic!("no '{name}' row: {text}"))
                    .to_string()
            };
            let why = row("why (kernel events)");
            assert!(
                why.contains("throttled") && why.contains(&format!("bdi {bdi}")),
                "{why}"
            );
            let throttled = row("writers throttled by the page cache");
            assert!(
                throttled.contains("balance_dirty_pages pauses") && !throttled.contains("never"),
                "{throttled}"
            );
            let out = Command::new(common::sinkrate_path())
                .args(["record", "--dir"])
                .arg(card.path())
                .args(["--streams", "1", "--bitrate", "120M", "--duration", "5s"])
                .args(["--write-mode", "buffered", "--live", "never"])
                .output()
                .expect("record runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            assert!(
                lines.any(|l| l.starts_with("what to try, by the stall time")),
                "{text}"
            );
            let first = lines.next().unwrap_or_default();
            assert!(first.trim_start().starts_with("throttled ("), "{text}");
        },
    );
}

/// A recorder of the user's own under `capture`: its slow writes are listed with their
/// causes from the kernel's events (traced from before it started, on every device, judged
/// against the card it wrote to), with no change to what the capture records.
#[test]
fn capture_explains_a_recorder_s_slow_writes_by_the_card_they_went_to() {
    common::with_root(
        "causes::capture_explains_a_recorder_s_slow_writes_by_the_card_they_went_to",
        &["python3"],
        || {
            let card = SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let (bdi, _) = dev_of(&card.device_name());
            let _limit = per_device_limit(&bdi);
            let work = tempfile::tempdir().expect("tempdir");
            let out_file = card.path().join("own.bin");
            // 15 MB/s at 30 writes a second, for 5 s: over the card's 10 MB/s; and beside it
            // a thread of its own (the kernel throttles a task by the device of the write
            // that crossed its ratelimit) writing twice as much to a log on the machine's
            // own disk, the file the recorder writes most to.
            let writer = "import sys, threading, time\nbuf = b'\\xab' * 500_000\ndef side():\n    with open('side.log', 'wb') as log:\n        for i in range(150):\n            log.write(buf + buf)\n            time.sleep(1 / 30)\nthreading.Thread(target=side).start()\nwith open(sys.argv[1], 'wb') as f:\n    t = time.monotonic()\n    for i in range(150):\n        f.write(buf)\n        t += 1 / 30\n        time.sleep(max(0, t - time.monotonic()))\n";
            let capture = |extra: &[&str], name: &str| {
                let out = Command::new(common::sinkrate_path())
                    .current_dir(work.path())
                    .args(["capture", "--output", name, "--output-format", "json"])
                    .args(extra)
                    .args(["--", "python3", "-c", writer])
                    .arg(&out_file)
                    .output()
                    .expect("capture runs");
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
                v
            };
            let r = capture(&[], "explained.iolog");
            assert!(r["kernel"]["inferred_because"].is_null(), "{}", r["kernel"]);
            let slow = r["slow_calls"].as_array().expect("slow calls");
            assert!(!slow.is_empty(), "the card throttled the writer: {r}");
            for c in slow {
                assert!(c["duration_ms"].as_f64() >= Some(100.0), "{c}");
            }
            assert_eq!(largest_cause(&r), "throttled", "{}", r["kernel"]);
            assert!(
                slow.iter()
                    .any(|c| c["causes"]["throttle"]["bdi"] == bdi.as_str()),
                "the card's bdi is the evidence: {slow:?}"
            );
            // Each card write is explained by the card's requests, though the recorder
            // wrote most to the log on another disk.
            let with_requests: Vec<&serde_json::Value> = slow
                .iter()
                .filter(|c| c["file"] == out_file.to_str().expect("utf-8"))
                .filter(|c| !c["causes"]["device"].is_null())
                .collect();
            assert!(!with_requests.is_empty(), "{slow:?}");
            for c in with_requests {
                assert_eq!(c["causes"]["device"]["dev"], bdi.as_str(), "{c}");
            }
            // The same capture without the kernel's events: no causes, and why.
            let r = capture(&["--no-kernel-events"], "plain.iolog");
            assert_eq!(
                r["kernel"]["inferred_because"], "--no-kernel-events was given",
                "{}",
                r["kernel"]
            );
            assert!(r["slow_calls"].as_array().expect("list").is_empty());
            assert_eq!(r["files"][0]["writes"], 150, "{r}");
        },
    );
}

/// The kernel's buffer overrun (the run stopped while a noisy writer filled its device's
/// trace buffer): the loss is counted, and every breakdown is marked partial rather than
/// silently short.
#[test]
fn a_ring_buffer_overrun_is_counted_and_marks_the_breakdown_partial() {
    common::with_root(
        "causes::a_ring_buffer_overrun_is_counted_and_marks_the_breakdown_partial",
        &["mkfs.ext4", "dd"],
        || {
            let fs = common::ScratchFs::new("512M", "ext4", "");
            let dir = fs.path().to_str().expect("utf-8").to_string();
            let recorder = Command::new(common::sinkrate_path())
                .args(["record", "--dir", &dir, "--streams", "1", "--fps", "30"])
                .args([
                    "--bitrate",
                    "40M",
                    "--write-mode",
                    "buffered",
                    "--duration",
                    "7s",
                ])
                .args(["--live", "never", "--output-format", "json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("record runs");
            let pid = recorder.id() as i32;
            let signal = |sig: libc::c_int| {
                // SAFETY: kill(2) on the test's own child.
                assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {sig}");
            };
            std::thread::sleep(std::time::Duration::from_millis(1500));
            // 4 KiB direct writes on the same device: two block events each, far more than
            // a megabyte of trace buffer per CPU holds while the reader is stopped.
            let mut noise = Command::new("dd")
                .args([
                    "if=/dev/zero",
                    "bs=4k",
                    "count=40000",
                    "oflag=direct",
                    "status=none",
                ])
                .arg(format!("of={dir}/noise.bin"))
                .spawn()
                .expect("dd runs");
            signal(libc::SIGSTOP);
            let _ = noise.wait();
            std::thread::sleep(std::time::Duration::from_millis(500));
            signal(libc::SIGCONT);
            let out = recorder.wait_with_output().expect("record ends");
            let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "record's JSON ({e}): {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            let k = &run["kernel"];
            assert!(k["inferred_because"].is_null(), "{k}");
            assert!(
                k["lost_events"].as_u64() > Some(0) || k["lost_unknown"] == true,
                "the overrun is counted: {k}"
            );
            for st in run["stalls"].as_array().expect("stalls") {
                if !st["causes"].is_null() {
                    assert_eq!(st["causes"]["partial"], true, "{st}");
                }
            }
        },
    );
}

#[test]
fn a_journal_bound_writer_waits_for_its_commits() {
    common::with_root(
        "causes::a_journal_bound_writer_waits_for_its_commits",
        &[],
        || {
            // ext4 data=journal with a one-second commit: every O_DSYNC write forces a
            // commit of its data through the journal, on a card that takes 20 ms a request.
            let card = SlowDev::new(&[
                "--write-rate",
                "10MB",
                "--write-latency",
                "20ms",
                "--size",
                "512M",
                "--mount-opts",
                "data=journal,commit=1",
            ]);
            let run = record(
                card.path(),
                &[
                    "--frame-size",
                    "16k",
                    "--write-mode",
                    "dsync",
                    "--duration",
                    "4s",
                    "--stall-threshold",
                    "20ms",
                ],
            );
            parts_add_up(&run);
            assert_eq!(largest_cause(&run), "journal", "{}", run["kernel"]);
            assert!(run["kernel"]["journal_commits"].as_u64() > Some(0));
            let named = run["stalls"]
                .as_array()
                .expect("stalls")
                .iter()
                .find(|s| s["causes"]["largest"] == "journal")
                .expect("a stall named journal");
            assert!(
                named["causes"]["journal"]["transaction"].is_u64(),
                "the commit it waited for is named: {named}"
            );
        },
    );
}

/// A filesystem without a journal on a slow card: an O_DSYNC write waits for its own pages
/// to come back from writeback (folio_wait_writeback), and an O_DIRECT write for the
/// device's requests.
fn card_without_journal() -> SlowDev {
    SlowDev::new(&[
        "--write-rate",
        "10MB",
        "--size",
        "512M",
        "--mkfs-opts=-O ^has_journal",
    ])
}

#[test]
fn a_dsync_writer_waits_on_pages_under_writeback() {
    common::with_root(
        "causes::a_dsync_writer_waits_on_pages_under_writeback",
        &[],
        || {
            let card = card_without_journal();
            let run = record(
                card.path(),
                &[
                    "--frame-size",
                    "1M",
                    "--write-mode",
                    "dsync",
                    "--duration",
                    "4s",
                    "--stall-threshold",
                    "20ms",
                ],
            );
            parts_add_up(&run);
            assert_eq!(largest_cause(&run), "writeback_wait", "{}", run["kernel"]);
        },
    );
}

#[test]
fn a_direct_writer_waits_for_the_device() {
    common::with_root("causes::a_direct_writer_waits_for_the_device", &[], || {
        let card = card_without_journal();
        let run = record(
            card.path(),
            &[
                "--frame-size",
                "1M",
                "--write-mode",
                "direct",
                "--duration",
                "4s",
                "--stall-threshold",
                "20ms",
            ],
        );
        parts_add_up(&run);
        assert_eq!(largest_cause(&run), "device", "{}", run["kernel"]);
        let worst = &run["stalls"][0]["causes"]["device"];
        assert!(
            worst["requests"].as_u64() > Some(0),
            "the requests in flight are named: {worst}"
        );
    });
}

/// A CPU controller's group of this test's own, removed on drop (its tasks are gone by then).
struct CpuGroup {
    dir: PathBuf,
}

impl CpuGroup {
    /// A group allowed `quota_us` of CPU every 100 ms, on cgroup v2 or v1's cpu controller.
    fn new(quota_us: u64) -> Option<CpuGroup> {
        let name = format!("sinkrate-causes-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
        let v2_root = if v2.exists() {
            Some(PathBuf::from("/sys/fs/cgroup"))
        } else {
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
                .filter(|p| p.join("cgroup.controllers").exists())
                .filter(|p| {
                    std::fs::read_to_string(p.join("cgroup.controllers"))
                        .is_ok_and(|c| c.contains("cpu"))
                })
        };
        if let Some(root) = v2_root {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
            let dir = root.join(&name);
            std::fs::create_dir(&dir).ok()?;
            if std::fs::write(dir.join("cpu.max"), format!("{quota_us} 100000")).is_ok() {
                return Some(CpuGroup { dir });
            }
            let _ = std::fs::remove_dir(&dir);
        }
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let dir = v1.join(&name);
        std::fs::create_dir(&dir).ok()?;
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000").ok()?;
        std::fs::write(dir.join("cpu.cfs_quota_us"), quota_us.to_string()).ok()?;
        Some(CpuGroup { dir })
    }

    /// A shell line that moves itself into the group before it runs `command`.
    fn enter(&self) -> String {
        let procs = if self.dir.join("cgroup.procs").exists() {
            "cgroup.procs"
        } else {
            "tasks"
        };
        format!("echo $$ > {}/{procs} && exec ", self.dir.display())
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn a_writer_without_cpu_waits_for_a_cpu() {
    common::with_root("causes::a_writer_without_cpu_waits_for_a_cpu", &[], || {
        // The recorder confined to 20 ms of CPU every 100 ms beside a busy loop in the
        // same group: its 4 MiB writes into memory (a tmpfs: no disk at all) take a few
        // milliseconds of CPU each, and one that the quota cuts off waits for the CPU.
        let Some(group) = CpuGroup::new(20_000) else {
            common::skip(
                "causes::a_writer_without_cpu_waits_for_a_cpu",
                "no CPU controller to confine the writer (cgroup v2 cpu.max or v1 cpu)",
            );
            return;
        };
        // Two loops, so that the group's quota is spent at once in every period even when
        // the rest of the machine keeps the cores busy (one loop that waits for a core
        // leaves the quota to the recorder).
        let mut busy: Vec<_> = (0..2)
            .map(|_| {
                Command::new("sh")
                    .arg("-c")
                    .arg(format!("{}sh -c 'while :; do :; done'", group.enter()))
                    .spawn()
                    .expect("a busy loop")
            })
            .collect();
        let parent = tempfile::tempdir().expect("tempdir");
        let memory = common::MemoryFs::new(&parent.path().join("mem"), "512M");
        let script = format!(
                "{}{} record --dir {} --streams 1 --fps 30 --frame-size 4M --write-mode buffered --duration 4s --stall-threshold 20ms --live never --output-format json",
                group.enter(),
                common::sinkrate_path().display(),
                memory.at.display()
            );
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .expect("sinkrate record runs");
        for b in &mut busy {
            let _ = b.kill();
            let _ = b.wait();
        }
        let run: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        assert!(
            run["kernel"]["inferred_because"].is_null(),
            "{}",
            run["kernel"]
        );
        assert!(!run["stalls"].as_array().expect("stalls").is_empty());
        parts_add_up(&run);
        assert_eq!(largest_cause(&run), "cpu", "{}", run["kernel"]);
    });
}

#[test]
fn without_the_kernel_s_events_causes_are_inferred_and_say_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(common::sinkrate_path())
        .args(["record", "--dir"])
        .arg(dir.path())
        .args([
            "--streams",
            "1",
            "--fps",
            "30",
            "--frame-size",
            "64k",
            "--duration",
            "1s",
            "--stall-threshold",
            "1us",
            "--no-kernel-events",
            "--live",
            "never",
        ])
        .output()
        .expect("sinkrate record runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{text}"
    );
    assert!(
        text.contains("causes inferred from /proc samples, not the kernel's events: --no-kernel-events was given"),
        "{text}"
    );
}

/// The trace instances of a sinkrate run with this pid, by name.
fn instances_of(pid: u32) -> Vec<String> {
    common::trace_instances()
        .into_iter()
        .filter(|n| n.starts_with(&format!("sinkrate-{pid}-")))
        .collect()
}

#[test]
fn a_killed_run_s_trace_instances_are_removed_by_the_next_run_and_named() {
    common::with_root(
        "causes::a_killed_run_s_trace_instances_are_removed_by_the_next_run_and_named",
        &[],
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            // A state directory of the test's own: the lane's other runs (each sweeps what
            // killed runs of its state directory left) never take the killed run's notes.
            let state = tempfile::tempdir().expect("tempdir");
            let mut killed = Command::new(common::sinkrate_path())
                .env("SINKRATE_STATE_DIR", state.path())
                .args(["record", "--dir"])
                .arg(dir.path())
                .args(["--duration", "30s", "--live", "never", "--fps", "30"])
                .args(["--frame-size", "64k", "--streams", "1"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("sinkrate record starts");
            let pid = killed.id();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while instances_of(pid).len() < 2 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let left = instances_of(pid);
            assert_eq!(left.len(), 2, "the run made its two instances");
            let _ = killed.kill();
            let _ = killed.wait();
            assert_eq!(instances_of(pid), left, "SIGKILL leaves them");
            let next = tempfile::tempdir().expect("tempdir");
            let out = Command::new(common::sinkrate_path())
                .env("SINKRATE_STATE_DIR", state.path())
                .args(["record", "--dir"])
                .arg(next.path())
                .args(["--duration", "1s", "--live", "never", "--fps", "30"])
                .args(["--frame-size", "64k", "--streams", "1"])
                .output()
                .expect("the next run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(instances_of(pid).is_empty(), "{left:?} were removed");
            for name in &left {
                assert!(
                    stderr.contains(&format!("removed the trace instance {name}")),
                    "the next run names {name}: {stderr}"
                );
            }
        },
    );
}

#[test]
fn another_tracer_s_top_level_buffer_is_left_as_it_was() {
    common::with_root(
        "causes::another_tracer_s_top_level_buffer_is_left_as_it_was",
        &[],
        || {
            let _alone = common::the_top_level_trace_is_set_here();
            let root = Path::new("/sys/kernel/tracing");
            // Another tracer's setup at the top level: an event on, a pid filter, a marker
            // already in its buffer.
            let event = root.join("events/sched/sched_process_exec/enable");
            let _on = Sysctl::set(event.to_str().expect("path"), "1");
            let _pids = Sysctl::set(
                root.join("set_event_pid").to_str().expect("path"),
                &std::process::id().to_string(),
            );
            let _tracing = Sysctl::set(root.join("tracing_on").to_str().expect("path"), "1");
            let marker = format!("another tracer's marker {}", std::process::id());
            std::fs::write(root.join("trace_marker"), &marker).expect("trace_marker");
            let clock = std::fs::read_to_string(root.join("trace_clock")).expect("clock");
            let dir = tempfile::tempdir().expect("tempdir");
            let run = record(
                dir.path(),
                &[
                    "--frame-size",
                    "64k",
                    "--duration",
                    "1s",
                    "--stall-threshold",
                    "1us",
                ],
            );
            assert!(run["kernel"]["events"].as_u64() > Some(0));
            assert_eq!(std::fs::read_to_string(&event).expect("enable").trim(), "1");
            assert_eq!(
                std::fs::read_to_string(root.join("set_event_pid"))
                    .expect("pids")
                    .trim(),
                std::process::id().to_string()
            );
            assert_eq!(
                std::fs::read_to_string(root.join("trace_clock")).expect("clock"),
                clock
            );
            let trace = std::fs::read_to_string(root.join("trace")).expect("trace");
            assert!(trace.contains(&marker), "the marker is still in its buffer");
        },
    );
}

#[test]
fn watch_pid_explains_a_gstreamer_recorder_s_slow_writes() {
    common::with_root(
        "causes::watch_pid_explains_a_gstreamer_recorder_s_slow_writes",
        &["gst-launch-1.0"],
        || {
            // A live 640x480 camera at 30 fps (13.8 MB/s raw) into a file on a 10 MB/s card
            // that may hold 16 MB of dirty data: GStreamer's own writes are throttled.
            let card = SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let name = card.device_name();
            let (bdi, _) = dev_of(&name);
            let _limit = per_device_limit(&bdi);
            let mut gst = Command::new("gst-launch-1.0")
                .args([
                    "-q",
                    "videotestsrc",
                    "is-live=true",
                    "num-buffers=240",
                    "!",
                    "video/x-raw,format=I420,width=640,height=480,framerate=30/1",
                    "!",
                    "filesink",
                ])
                .arg(format!(
                    "location={}",
                    card.path().join("cam.raw").display()
                ))
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("gst-launch-1.0 starts");
            std::thread::sleep(std::time::Duration::from_millis(300));
            let out = Command::new(common::sinkrate_path())
                .args(["watch", "--pid", &gst.id().to_string(), "--device", &name])
                .args([
                    "--duration",
                    "5s",
                    "--live",
                    "never",
                    "--output-format",
                    "json",
                ])
                .output()
                .expect("sinkrate watch runs");
            let _ = gst.kill();
            let _ = gst.wait();
            let run: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
            assert!(
                run["kernel"]["inferred_because"].is_null(),
                "{}",
                run["kernel"]
            );
            assert!(
                run["write_calls"].as_u64() > Some(10),
                "{}",
                run["write_calls"]
            );
            let slow = run["slow_calls"].as_array().expect("slow calls");
            let throttled: Vec<&serde_json::Value> = slow
                .iter()
                .filter(|c| c["causes"]["largest"] == "throttled")
                .collect();
            assert!(
                !throttled.is_empty(),
                "a slow write of GStreamer's is named throttled: {slow:?}"
            );
            let c = throttled[0];
            assert_eq!(c["pid"].as_u64(), Some(u64::from(gst.id())));
            assert!(
                c["call"].as_str().is_some_and(|s| s.contains("write")),
                "{c}"
            );
            assert!(!c["thread"].as_str().unwrap_or("").is_empty(), "{c}");
            assert_eq!(c["causes"]["throttle"]["bdi"], bdi.as_str(), "{c}");
        },
    );
}

/// A program that makes far more traced calls than a run kept events before (64,000) and only
/// then writes throttled: its slow writes at the end are still explained, because the
/// analysis explains each call as it comes and lets go of the events behind it.
#[test]
fn a_watch_past_a_burst_of_calls_still_explains_the_slow_writes_after_it() {
    common::with_root(
        "causes::a_watch_past_a_burst_of_calls_still_explains_the_slow_writes_after_it",
        &["python3"],
        || {
            let card = SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let name = card.device_name();
            let (bdi, _) = dev_of(&name);
            let _limit = per_device_limit(&bdi);
            // 40 bursts of 4,000 one-byte writes to /dev/null (320,000 traced events, paced
            // so that the kernel's 1 MB buffers hold each burst), then 48 MB onto the card.
            let program = format!(
                r#"
import os, time
null = os.open("/dev/null", os.O_WRONLY)
for _ in range(40):
    for _ in range(4000):
        os.write(null, b"x")
    time.sleep(0.1)
f = os.open("{}", os.O_WRONLY | os.O_CREAT, 0o600)
chunk = b"\0" * (1 << 20)
for _ in range(48):
    os.write(f, chunk)
os.close(f)
"#,
                card.path().join("after-burst.bin").display()
            );
            let out = Command::new(common::sinkrate_path())
                .args(["watch", "--device", &name, "--duration", "60s"])
                .args(["--live", "never", "--output-format", "json", "--"])
                .args(["python3", "-c", &program])
                .output()
                .expect("sinkrate watch runs");
            let run: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
            let kernel = &run["kernel"];
            assert!(kernel["inferred_because"].is_null(), "{kernel}");
            assert!(
                run["write_calls"].as_u64() > Some(100_000),
                "every burst's writes were paired: {}",
                run["write_calls"]
            );
            assert!(kernel["events"].as_u64() > Some(200_000), "{kernel}");
            eprintln!(
                "{} write calls, {} events ({} lost), {} slow calls",
                run["write_calls"],
                kernel["events"],
                kernel["lost_events"],
                run["slow_calls"].as_array().map_or(0, Vec::len)
            );
            assert_eq!(kernel["stalls_not_explained"].as_u64(), Some(0), "{kernel}");
            let slow = run["slow_calls"].as_array().expect("slow calls");
            assert!(
                slow.iter().any(|c| c["causes"]["largest"] == "throttled"
                    && c["causes"]["throttle"]["bdi"] == bdi.as_str()),
                "a write after the burst is explained as throttled on {bdi}: {slow:?}"
            );
        },
    );
}
