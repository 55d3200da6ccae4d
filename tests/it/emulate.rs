//! `sinkrate emulate`: the stack comes up and goes away leaving the machine as it was (also
//! after kill -9 of nbdkit), buffered writes take the time the rate implies, injected errors
//! reach a plain write, and bad input gets one line and exit 2.

use crate::common;

use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;
use std::time::Instant;

use common::{sinkrate_path, with_root, SlowDev};

const TOOLS: &[&str] = &["nbdkit", "nbdfuse", "fusermount3", "losetup", "mkfs.ext4"];

/// These tests compare machine-wide state (loop devices, mounts, processes): one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial(test: &str, f: impl FnOnce()) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    with_root(test, TOOLS, f);
}

/// Loop devices, mounts and processes of the stack, to compare before and after.
fn machine_state() -> (Vec<String>, Vec<String>, Vec<String>) {
    // What the runs of this test binary's state directory hold: the suite's other lanes,
    // each with a state directory of its own, make and remove devices meanwhile. Without
    // SINKRATE_STATE_DIR, everything on the machine.
    let mine = std::env::var("SINKRATE_STATE_DIR").unwrap_or_default();
    let losetup: Vec<String> = common::run("losetup", &["-a"])
        .lines()
        .filter(|l| l.contains(&mine))
        .map(str::to_string)
        .collect();
    let loops: Vec<String> = losetup
        .iter()
        .filter_map(|l| l.split(':').next().map(str::to_string))
        .collect();
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            let source = l.split(" - ").nth(1).and_then(|t| t.split(' ').nth(1));
            l.contains(&mine) || source.is_some_and(|s| loops.iter().any(|d| d == s))
        })
        .map(|l| l.split(' ').skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    let procs: Vec<String> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read(e.path().join("cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mine))
                })
                .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
                // "pid (comm) state ...": zombies are ended processes whose parent (init here)
                // has not reaped them yet; they hold nothing.
                .filter_map(|stat| {
                    let (head, rest) = stat.rsplit_once(')')?;
                    let comm = head.split_once('(')?.1.to_string();
                    let state = rest.split_whitespace().next()?.to_string();
                    (state != "Z").then_some(comm)
                })
                .filter(|c| c == "nbdkit" || c == "nbdfuse")
                .collect()
        })
        .unwrap_or_default();
    (losetup, mounts, procs)
}

fn emulate(args: &[&str]) -> std::process::Output {
    Command::new(sinkrate_path())
        .arg("emulate")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn up_then_down_leaves_the_machine_as_it_was() {
    serial("up_then_down_leaves_the_machine_as_it_was", || {
        let before = machine_state();
        {
            let dev = SlowDev::new(&["--write-rate", "50M", "--size", "128M"]);
            let (losetup, mounts, procs) = machine_state();
            assert_ne!(losetup, before.0, "a loop device is attached");
            assert!(mounts.len() > before.1.len(), "mounted");
            assert!(
                procs.iter().any(|p| p == "nbdkit") && procs.iter().any(|p| p == "nbdfuse"),
                "{procs:?}"
            );
            let listed = emulate(&["list", "--output-format=json"]);
            let v: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
            assert!(v
                .as_array()
                .expect("array")
                .iter()
                .any(|d| d["state"]["spec"]["mountpoint"]
                    == dev.path().to_string_lossy().as_ref()
                    && d["mounted"] == true));
            std::fs::write(dev.path().join("hello"), b"data").expect("the filesystem is writable");
        }
        assert_eq!(machine_state(), before);
    });
}

#[test]
fn a_filesystem_mounted_through_its_fuse_driver_comes_down_too() {
    // A kernel without vfat or exfat mounts them through fusefat or exfat-fuse, whose mount
    // names the driver, not the loop device: down took that for a user's mount on top,
    // refused, and the test's card stayed up.
    serial(
        "a_filesystem_mounted_through_its_fuse_driver_comes_down_too",
        || {
            let before = machine_state();
            for fs in ["vfat", "exfat"] {
                let base = tempfile::tempdir().expect("tempdir");
                let mp = base.path().join("card");
                let m = mp.to_str().expect("utf8");
                let up = emulate(&["up", m, "--size", "96M", "--write-rate", "200M", "--fs", fs]);
                assert!(
                    up.status.success(),
                    "{fs}: {}",
                    String::from_utf8_lossy(&up.stderr)
                );
                std::fs::write(mp.join("f"), b"data").expect("writable");
                let down = emulate(&["down", m]);
                assert!(
                    down.status.success(),
                    "{fs}: {}",
                    String::from_utf8_lossy(&down.stderr)
                );
                assert_eq!(machine_state(), before, "{fs}: all of it came down");
            }
        },
    );
}

#[test]
fn a_fuse_driver_that_stops_answering_is_killed_and_the_card_comes_down() {
    // fusefat looped for ever on a FAT chain a wrapping fake card's fill made circular, and
    // `emulate down` waited on its umount for as long. A stopped driver answers nothing
    // either: down must end, kill the stack's own driver, and say what that lost.
    serial(
        "a_fuse_driver_that_stops_answering_is_killed_and_the_card_comes_down",
        || {
            if !common::have("fusefat") {
                panic!("fusefat is missing (scripts/install-deps.sh --test installs it)");
            }
            let before = machine_state();
            let base = tempfile::tempdir().expect("tempdir");
            let mp = base.path().join("card");
            let m = mp.to_str().expect("utf8");
            let up = emulate(&[
                "up",
                m,
                "--size",
                "96M",
                "--write-rate",
                "200M",
                "--fs",
                "vfat",
            ]);
            assert!(
                up.status.success(),
                "{}",
                String::from_utf8_lossy(&up.stderr)
            );
            let fuse = mounts_of(m).iter().any(|t| t.starts_with("fuse"));
            if !fuse {
                // This kernel has vfat: nothing here is served by a FUSE driver.
                assert!(emulate(&["down", m]).status.success());
                common::skip(
                    "a_fuse_driver_that_stops_answering_is_killed_and_the_card_comes_down",
                    "the kernel mounts vfat itself",
                );
                return;
            }
            std::fs::write(mp.join("f"), vec![7u8; 4 << 20]).expect("writable");
            let driver = common::run("pgrep", &["-f", &format!("^fusefat .* {m}$")]);
            let pid: i32 = driver.trim().parse().expect("one fusefat for this card");
            // SAFETY: kill on the fusefat process this test's card runs.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
            let started = Instant::now();
            let down = emulate(&["down", m]);
            let took = started.elapsed();
            let err = String::from_utf8_lossy(&down.stderr);
            assert!(down.status.success(), "{err}");
            assert!(
                err.contains("the vfat driver did not answer umount for 20 s: it was killed"),
                "{err}"
            );
            assert!(took.as_secs() < 60, "down took {took:?}");
            assert!(mounts_of(m).is_empty(), "still mounted");
            assert_eq!(machine_state(), before, "all of it came down");
        },
    );
}

/// The filesystem types mounted at `path`, from mountinfo.
fn mounts_of(path: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .expect("mountinfo")
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (left.split(' ').nth(4)? == path)
                .then(|| right.split(' ').next().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn down_works_after_nbdkit_is_killed() {
    serial("down_works_after_nbdkit_is_killed", || {
        let _vanishing = common::a_card_vanishes_here();
        let before = machine_state();
        let dev = SlowDev::new(&["--write-rate", "50M", "--size", "64M"]);
        let listed = emulate(&["list", "--output-format=json"]);
        let v: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
        let pid = v
            .as_array()
            .expect("array")
            .iter()
            .find(|d| d["state"]["spec"]["mountpoint"] == dev.path().to_string_lossy().as_ref())
            .and_then(|d| d["state"]["nbdkit_pid"].as_i64())
            .expect("nbdkit pid recorded");
        // SAFETY: killing the nbdkit this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let listed = emulate(&["list"]);
        assert!(String::from_utf8_lossy(&listed.stdout).contains("nbdkit gone"));
        let out = emulate(&["down", &dev.path().to_string_lossy()]);
        common::succeeded(&out);
        drop(dev);
        assert_eq!(machine_state(), before);
    });
}

#[test]
fn buffered_writes_take_the_time_the_rate_implies() {
    serial("buffered_writes_take_the_time_the_rate_implies", || {
        let dev = SlowDev::new(&["--write-rate", "10MB", "--size", "128M"]);
        let started = Instant::now();
        // Plain buffered writes, then sync: the page cache takes them at once, the device at 10 MB/s.
        let data = vec![0x5au8; 1 << 20];
        let path = dev.path().join("rec.bin");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&path).expect("create");
            for _ in 0..24 {
                f.write_all(&data).expect("write");
            }
            let buffered = started.elapsed();
            assert!(
                buffered.as_secs_f64() < 1.0,
                "the page cache absorbed the writes ({buffered:?})"
            );
            f.sync_all().expect("fsync");
        }
        let took = started.elapsed().as_secs_f64();
        let implied = 24.0 * 1048576.0 / 10e6;
        assert!(
            took > implied * 0.8 && took < implied * 1.5,
            "24 MiB took {took:.2} s; the rate implies {implied:.2} s"
        );
    });
}

#[test]
fn injected_errors_reach_a_plain_write() {
    serial("injected_errors_reach_a_plain_write", || {
        let dev = SlowDev::new(&[
            "--write-rate",
            "50M",
            "--size",
            "64M",
            "--error-rate",
            "1",
            "--error",
            "EIO",
            "--error-on",
            "writes",
        ]);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(dev.path().join("f"))
            .expect("open");
        let buf = vec![0u8; 8192];
        // O_DIRECT needs an aligned buffer; find the aligned window in an oversized one.
        let off = buf.as_ptr().align_offset(4096);
        let err = std::io::Write::write(&mut f, &buf[off..off + 4096])
            .expect_err("the device fails every request");
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    });
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let d = tempfile::tempdir().expect("tempdir");
    let mp = d.path().join("m");
    let mp_s = mp.to_string_lossy().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["up", &mp_s, "--write-rate", "fast"], "is not a rate"),
        (
            vec!["up", &mp_s, "--write-rate", "20M", "--size", "12Q"],
            "unknown unit",
        ),
        (vec!["up", &mp_s, "--model", "floppy"], "is not a model"),
        (vec!["up", &mp_s], "give --write-rate"),
        (
            vec!["up", &mp_s, "--write-rate", "20M", "--write-latency", "2"],
            "needs a unit",
        ),
        (
            vec!["up", &mp_s, "--write-rate", "20M", "--error-rate", "lots"],
            "is not a number",
        ),
        (
            vec!["up", &mp_s, "--write-rate", "20M", "--read-rate", "1M"],
            "below the write rate",
        ),
        (
            vec!["down", "/nonexistent/mount"],
            "no emulated device is recorded",
        ),
    ];
    for (args, expect) in cases {
        let out = emulate(&args);
        let error = common::one_error_line(&out, &args);
        assert!(error.contains(expect), "{args:?}: {error}");
    }
    assert!(!mp.exists(), "nothing created");
}

#[test]
fn mountpoints_in_use_are_refused() {
    serial("mountpoints_in_use_are_refused", || {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("precious"), b"x").expect("write");
        let out = emulate(&["up", &d.path().to_string_lossy(), "--write-rate", "20M"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
        let dev = SlowDev::new(&["--write-rate", "50M", "--size", "64M"]);
        let out = emulate(&["up", &dev.path().to_string_lossy(), "--write-rate", "20M"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("already mounted"));
        assert!(d.path().join("precious").exists());
    });
}

#[test]
fn io_errors_end_a_job_cleanly_with_io_in_flight() {
    serial("io_errors_end_a_job_cleanly_with_io_in_flight", || {
        let dev = SlowDev::new(&[
            "--write-rate",
            "100M",
            "--size",
            "64M",
            "--error-rate",
            "0.2",
            "--error",
            "EIO",
            "--error-on",
            "writes",
        ]);
        for engine in [
            ["--ioengine=io_uring", "--iodepth=16"],
            ["--ioengine=psync", "--iodepth=1"],
        ] {
            let out = common::sinkrate()
                .current_dir(dev.path())
                .args([
                    "--name=e",
                    "--rw=write",
                    "--bs=64k",
                    "--size=16m",
                    "--direct=1",
                    "--unlink=1",
                    "--output-format=json",
                ])
                .args(engine)
                .output()
                .expect("runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{engine:?}: {stderr}");
            assert!(
                stderr.contains("Input/output error"),
                "{engine:?}: {stderr}"
            );
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("results still written");
            assert_eq!(v["jobs"][0]["error"], libc::EIO);
            assert!(
                common::files_in(dev.path())
                    .iter()
                    .all(|f| f == "lost+found"),
                "files left"
            );
        }
    });
}
