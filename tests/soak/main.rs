//! The soaks: recordings of minutes on emulated cards with `--verify-every`, read back as
//! they go, in flat memory. A test binary of their own, small, so that `scripts/test.sh`
//! starts the ten-minute soak as soon as it is built, beside the build and the runs of
//! everything else (tests/it holds the rest of card endurance, in `endurance`).

#[path = "../it/common/mod.rs"]
mod common;

use std::process::Command;

use common::{
    card_account, error_lines, run_json as run, sinkrate_path, with_root, RecordArgs, SlowDev,
};

const TOOLS: &[&str] = &["nbdkit", "nbdfuse", "losetup", "mkfs.ext4"];

/// A soak's run: exit code, JSON, the kernel's account of its peak memory and CPU, and its
/// peak memory (VmHWM) at each of `moments` into the run, read from /proc while it runs.
fn soak_run(
    dir: &str,
    seconds: u64,
    every: &str,
    moments: [std::time::Duration; 2],
) -> (Option<i32>, serde_json::Value, libc::rusage, [u64; 2]) {
    let out_dir = tempfile::tempdir().expect("tempdir");
    let json = out_dir.path().join("soak.json");
    let duration = format!("{seconds}s");
    let record = RecordArgs::on(dir)
        .with("--frame-size", "16k")
        .with("--duration", &duration)
        .with("--segment-time", "30s")
        .with("--verify-every", every);
    let mut args = record.args();
    args.push("--keep");
    let file = std::fs::File::create(&json).expect("json file");
    let mut cmd = Command::new(sinkrate_path());
    cmd.current_dir(out_dir.path()).args(&args).stdout(file);
    // Reaped by wait4 below.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("runs");
    let pid = child.id() as i32;
    let peaks = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        moments.map(|at| {
            std::thread::sleep(at.saturating_sub(started.elapsed()));
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find(|l| l.starts_with("VmHWM:"))
                        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                })
                .unwrap_or(0)
        })
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for this child alone.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid; `status` and `usage` are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = {
        use std::os::unix::process::ExitStatusExt;
        std::process::ExitStatus::from_raw(status).code()
    };
    let v = serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("JSON");
    (code, v, usage, peaks.join().unwrap_or([0, 0]))
}

#[test]
fn a_soak_of_ten_minutes_reads_every_closed_segment_back_in_flat_memory() {
    with_root(
        "a_soak_of_ten_minutes_reads_every_closed_segment_back_in_flat_memory",
        TOOLS,
        || {
            let card = SlowDev::new(&["--write-rate", "100M", "--size", "1G"]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let minute = std::time::Duration::from_secs(60);
            let (code, v, usage, [early_kb, late_kb]) =
                soak_run(&dir, 600, "60s", [2 * minute, 9 * minute + minute / 2]);
            assert_ne!(code, Some(2), "{}", v["errors"]);
            assert_ne!(v["verdict"], "failed", "{}", v["verdict_text"]);
            let soak = &v["soak"];
            assert!(soak["failure"].is_null(), "{soak}");
            // Every segment was read back, the last once the recording ended: the files on
            // the card (kept) and their sizes are the filesystem's count.
            let mut files: Vec<String> = common::files_in(card.path())
                .into_iter()
                .filter(|f| f.starts_with("sinkrate-record-cam0-"))
                .collect();
            files.sort();
            assert!(files.len() >= 19, "{files:?}");
            let closed_bytes: u64 = files
                .iter()
                .map(|f| std::fs::metadata(card.path().join(f)).expect("size").len())
                .sum();
            assert_eq!(
                soak["segments_verified"].as_u64(),
                Some(files.len() as u64),
                "{soak}"
            );
            assert_eq!(
                soak["bytes_verified"].as_u64(),
                Some(closed_bytes),
                "{soak}"
            );
            // Six windows of 100 s that hold every frame written.
            let windows = v["windows"].as_array().expect("windows");
            assert_eq!(windows.len(), 6, "{windows:?}");
            let in_windows: u64 = windows
                .iter()
                .map(|w| w["bytes_written"].as_u64().expect("bytes"))
                .sum();
            assert_eq!(Some(in_windows), v["totals"]["bytes_written"].as_u64());
            // Flat: the peak memory at 9.5 minutes is no more than a few MB above the peak
            // after two (frame records and the sampler's timeline, both bounded). The end's
            // peak adds the report, built once from what was kept (bounded by the same
            // caps): printed, and held to a sanity bound.
            assert!(
                early_kb > 0 && late_kb > 0,
                "the recorder's memory was read"
            );
            let grew_kb = late_kb.saturating_sub(early_kb);
            assert!(
                grew_kb < 16 * 1024,
                "peak memory {late_kb} KiB at 9.5 minutes against {early_kb} KiB at 2"
            );
            let end_kb = usage.ru_maxrss.max(0) as u64;
            eprintln!("peak memory: {early_kb} KiB at 2 min, {late_kb} KiB at 9.5 min, {end_kb} KiB with the report");
            assert!(
                end_kb < late_kb + 128 * 1024,
                "the report took {end_kb} KiB against {late_kb} KiB while recording"
            );
            let cpu_s = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) as f64;
            assert!(cpu_s < 60.0, "{cpu_s} s of CPU for a 600 s recording");
        },
    );
}

#[test]
fn a_soak_on_a_card_that_loses_data_fails_when_it_happens_not_at_the_end() {
    with_root(
        "a_soak_on_a_card_that_loses_data_fails_when_it_happens_not_at_the_end",
        TOOLS,
        || {
            let card = SlowDev::new(&[
                "--write-rate",
                "100M",
                "--size",
                "512M",
                "--wear-out",
                "16M:stale",
            ]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let (code, v, stderr) = run(&RecordArgs::on(&dir)
                .with("--duration", "30s")
                .with("--segment-time", "2s")
                .with("--verify-every", "3s")
                .args());
            assert_eq!(code, Some(2), "{stderr}");
            assert_eq!(v["verdict"], "failed", "{v}");
            let failure = &v["soak"]["failure"];
            assert!(
                failure["holds"]
                    .as_str()
                    .is_some_and(|h| h.starts_with("zeros")),
                "{failure}"
            );
            // 64 KiB frames at 30 fps reach 16 MiB after about 8.5 s: found a segment and a
            // pass later, well before the 30 s are over.
            let found = failure["found_at_s"].as_f64().expect("found");
            assert!(found < 25.0, "found at {found} s");
            assert!(v["soak"]["segments_verified"].as_u64() >= Some(2), "{v}");
            assert!(
                card_account(&card)["wear_lost_bytes"].as_u64() > Some(0),
                "the card lost data"
            );
            let errors = error_lines(&stderr);
            assert_eq!(errors.len(), 1, "{stderr}");
            assert!(
                errors[0].contains("did not read back as written"),
                "{}",
                errors[0]
            );
        },
    );
}
