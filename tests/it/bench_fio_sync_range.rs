//! `sync_file_range=FLAGS:N` beside fio 3.33: the same number of calls (in the sync
//! latencies, out of `sync.total_ios`), and, checked on the device's own counters, the
//! written range reaches the device during the run instead of staying dirty in the page
//! cache, which is what recorders use it for.

use crate::common;

use common::{fio_json, refuses, sinkrate_json, with_root, ScratchFs};

/// Sectors the kernel has written to `device` (/sys/block/DEV/stat, field 7).
fn sectors_written(device: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/block/{device}/stat"))
        .expect("block stat")
        .split_whitespace()
        .nth(6)
        .and_then(|s| s.parse().ok())
        .expect("sectors written")
}

#[test]
fn sync_file_range_writes_back_the_range_as_fios_does() {
    with_root(
        "sync_file_range_writes_back_the_range_as_fios_does",
        &["fio"],
        || {
            let fs = ScratchFs::new("96M", "ext4", "");
            let dev = fs.device_name();
            let job = |sfr: Option<&str>| {
                let mut v = vec![
                    "--name=sfr".to_string(),
                    "--filename=rec".to_string(),
                    "--size=16m".to_string(),
                    "--bs=64k".to_string(),
                    "--rw=write".to_string(),
                ];
                v.extend(sfr.map(|s| format!("--sync_file_range={s}")));
                v
            };
            for (sfr, calls) in [("wait_before,write,wait_after:16", 15), ("write:8", 31)] {
                let args = job(Some(sfr));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let fio = fio_json(fs.path(), &args);
                std::fs::remove_file(fs.path().join("rec")).expect("rm");
                let ours = sinkrate_json(fs.path(), &args);
                let sync = |v: &serde_json::Value| {
                    (
                        v["jobs"][0]["sync"]["total_ios"].as_u64(),
                        v["jobs"][0]["sync"]["lat_ns"]["N"].as_u64(),
                    )
                };
                assert_eq!(sync(&ours), sync(&fio), "{sfr}");
                assert_eq!(sync(&ours), (Some(0), Some(calls)), "{sfr}");
            }
            // Independent of both tools: at 16 MiB/s, 0.7 s into the run, the device has
            // been written the synced range with sync_file_range, and next to nothing
            // without it (the dirty pages wait for dirty_expire).
            let mid_run = |sfr: Option<&str>| {
                let mut args = job(sfr);
                args.extend(["--rate=16m".to_string(), "--eta=never".to_string()]);
                std::fs::remove_file(fs.path().join("rec")).ok();
                let before = sectors_written(&dev);
                let mut child = std::process::Command::new(common::sinkrate_path())
                    .current_dir(fs.path())
                    .arg("bench")
                    .args(&args)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("sinkrate starts");
                std::thread::sleep(std::time::Duration::from_millis(700));
                let written = (sectors_written(&dev) - before) * 512;
                assert!(child.wait().expect("waits").success());
                written
            };
            let synced = mid_run(Some("write,wait_after:16"));
            // The control can only be raised by writeback nobody here asked for (another
            // process's sync, or dirty memory elsewhere on a shared machine passing the
            // background threshold, which flushes every device), never lowered; so its
            // least of three runs is the figure to compare.
            let mut dirty = u64::MAX;
            for _ in 0..3 {
                dirty = dirty.min(mid_run(None));
                if dirty < 3 << 20 {
                    break;
                }
            }
            assert!(
                synced >= 5 << 20 && dirty < 3 << 20,
                "0.7 s in: {synced} bytes on the device with sync_file_range, {dirty} without"
            );
        },
    );
}

#[test]
fn bad_sync_file_range_values_are_refused_in_one_line() {
    let d = tempfile::tempdir().expect("tmp");
    for (value, expect) in [
        ("now:3", "'now' is not a flag"),
        ("write:0", "every 1 or more"),
        ("write:x", "not a number of writes"),
        (":4", "no flag given"),
    ] {
        refuses(
            d.path(),
            &[
                "--name=t",
                "--filename=f",
                "--size=1m",
                "--rw=write",
                &format!("--sync_file_range={value}"),
            ],
            &["sync_file_range", expect],
        );
    }
}
