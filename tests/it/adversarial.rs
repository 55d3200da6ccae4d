//! What an adversarial user tries, grouped so that every new command adds its cases here:
//! device nodes and other non-files as output paths, images that hold someone's data,
//! state names that collide, sizes that would fill the host. Each case checks that the
//! thing the user owns is exactly as it was.

use crate::common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Command;

use common::{sinkrate_path, with_root};

const EMULATE_TOOLS: &[&str] = &["nbdkit", "nbdfuse", "fusermount3", "mkfs.ext4"];

fn sinkrate(args: &[&str]) -> (Option<i32>, String, String) {
    common::sinkrate_out(args)
}

/// `sinkrate emulate up MP --size 64M --write-rate 20M EXTRA...`.
fn emulate_up(mp: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec![
        "emulate",
        "up",
        mp.to_str().expect("utf8"),
        "--size",
        "64M",
        "--write-rate",
        "20M",
    ];
    args.extend_from_slice(extra);
    sinkrate(&args)
}

/// A character device node equal to /dev/null (1:3), made where the test can see it.
fn char_node(dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    let c = std::ffi::CString::new(p.to_str().expect("utf8")).expect("cstring");
    // SAFETY: mknod on a valid C string; root only (callers run under with_root).
    let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(r, 0, "mknod: {}", std::io::Error::last_os_error());
    p
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

#[test]
fn a_device_node_is_never_written_or_renamed_over() {
    with_root(
        "a_device_node_is_never_written_or_renamed_over",
        &[],
        || {
            let d = tempfile::tempdir().expect("tempdir");
            let node = char_node(d.path(), "n");
            let n = node.to_str().expect("utf8");
            let dir = d.path().to_str().expect("utf8");
            for args in [
                vec!["watch", "--duration", "1s", "--prometheus", n],
                vec!["watch", "--duration", "1s", "--csv", n],
                vec!["watch", "--duration", "1s", "--output", n],
                vec![
                    "record",
                    "--dir",
                    dir,
                    "--write-mode",
                    "null",
                    "--duration",
                    "1s",
                    "--output",
                    n,
                ],
                vec![
                    "record",
                    "--dir",
                    dir,
                    "--write-mode",
                    "null",
                    "--duration",
                    "1s",
                    "--frames-log",
                    n,
                ],
                vec![
                    "bench",
                    "--name=x",
                    "--ioengine=null",
                    "--size=1m",
                    "--output",
                    n,
                ],
                vec!["check", dir, "--quick", "--output", n],
            ] {
                let (code, _, err) = sinkrate(&args);
                assert_eq!(code, Some(2), "{args:?}: {err}");
                assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
                assert!(err.contains("character device"), "{args:?}: {err}");
                assert!(is_char_device(&node), "{args:?} changed the node");
            }
            assert_eq!(common::files_in(d.path()), vec!["n"], "no file was left");
        },
    );
}

#[test]
fn a_directory_or_fifo_as_output_is_refused_before_any_work() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().to_str().expect("utf8");
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstring");
    // SAFETY: mkfifo on a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let f = fifo.to_str().expect("utf8");
    for (args, what) in [
        (
            vec![
                "bench",
                "--name=x",
                "--ioengine=null",
                "--size=1m",
                "--output",
                dir,
            ],
            "directory",
        ),
        (
            vec![
                "record",
                "--dir",
                dir,
                "--write-mode",
                "null",
                "--duration",
                "5s",
                "--output",
                dir,
            ],
            "directory",
        ),
        (
            vec![
                "record",
                "--dir",
                dir,
                "--write-mode",
                "null",
                "--duration",
                "5s",
                "--frames-log",
                f,
            ],
            "FIFO",
        ),
    ] {
        let t0 = std::time::Instant::now();
        let (code, _, err) = sinkrate(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(2),
            "{args:?} ran before refusing"
        );
    }
    assert_eq!(common::files_in(d.path()), vec!["fifo"]);
}

/// An image that holds a filesystem with a file on it.
fn image_with_a_file(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let img = dir.join("owned.img");
    let f = std::fs::File::create(&img).expect("image");
    f.set_len(64 << 20).expect("size");
    common::run("mkfs.ext4", &["-q", "-F", img.to_str().expect("utf8")]);
    let bytes = std::fs::read(&img).expect("read image");
    (img, bytes)
}

#[test]
fn an_image_that_holds_a_filesystem_is_never_formatted_without_force() {
    with_root(
        "an_image_that_holds_a_filesystem_is_never_formatted_without_force",
        EMULATE_TOOLS,
        || {
            let d = tempfile::tempdir().expect("tempdir");
            let (img, before) = image_with_a_file(d.path());
            let mp = d.path().join("mnt");
            let (code, _, err) = emulate_up(&mp, &["--backing-file", img.to_str().expect("utf8")]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("ext2/3/4") && err.contains("--force"), "{err}");
            assert_eq!(
                std::fs::read(&img).expect("read"),
                before,
                "the image is untouched"
            );
            // Plain bytes without a signature are data too.
            let data = d.path().join("data.bin");
            std::fs::write(&data, vec![7u8; 4096]).expect("data");
            let (code, _, err) = emulate_up(&mp, &["--backing-file", data.to_str().expect("utf8")]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("MB of data"), "{err}");
            assert_eq!(std::fs::read(&data).expect("read"), vec![7u8; 4096]);
            // Attached to a loop device: refused even with --force.
            let lo = common::run(
                "losetup",
                &["--find", "--show", img.to_str().expect("utf8")],
            );
            let (code, _, err) = emulate_up(
                &mp,
                &["--backing-file", img.to_str().expect("utf8"), "--force"],
            );
            common::run("losetup", &["-d", &lo]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("in use") && err.contains(&lo), "{err}");
            assert_eq!(std::fs::read(&img).expect("read"), before);
        },
    );
}

#[test]
fn two_mountpoints_never_share_a_device_state() {
    with_root(
        "two_mountpoints_never_share_a_device_state",
        EMULATE_TOOLS,
        || {
            let d = tempfile::tempdir().expect("tempdir");
            let a = d.path().join("x_y");
            let b = d.path().join("x").join("y");
            let (code, _, err) = emulate_up(&a, &[]);
            assert_eq!(code, Some(0), "{err}");
            std::fs::write(a.join("keep.txt"), b"mine").expect("a file on the device");
            let (code, _, err) = sinkrate(&["emulate", "down", b.to_str().expect("utf8")]);
            let still = std::fs::read(a.join("keep.txt")).ok();
            let (down, _, down_err) = sinkrate(&["emulate", "down", a.to_str().expect("utf8")]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("no emulated device"), "{err}");
            assert_eq!(
                still.as_deref(),
                Some(&b"mine"[..]),
                "x_y's device survived"
            );
            assert_eq!(down, Some(0), "{down_err}");
        },
    );
}

#[test]
fn a_device_larger_than_its_backing_filesystem_is_refused_with_the_figures() {
    with_root(
        "a_device_larger_than_its_backing_filesystem_is_refused_with_the_figures",
        EMULATE_TOOLS,
        || {
            let fs = common::ScratchFs::new("64M", "ext4", "noatime");
            let img = fs.path().join("big.img");
            let d = tempfile::tempdir().expect("tempdir");
            let (code, _, err) = sinkrate(&[
                "emulate",
                "up",
                d.path().join("mnt").to_str().expect("utf8"),
                "--size",
                "1T",
                "--write-rate",
                "20M",
                "--backing-file",
                img.to_str().expect("utf8"),
            ]);
            assert_eq!(code, Some(2), "{err}");
            assert!(
                err.contains("does not fit") && err.contains("GB free"),
                "{err}"
            );
            assert!(!img.exists(), "no sparse file was made");
        },
    );
}

#[test]
fn a_recording_that_failed_never_says_it_keeps_up() {
    with_root(
        "a_recording_that_failed_never_says_it_keeps_up",
        &["mkfs.ext4"],
        || {
            let fs = common::ScratchFs::new("64M", "ext4", "ro");
            let dir = fs.path().to_str().expect("utf8");
            let args = [
                "record",
                "--dir",
                dir,
                "--fps",
                "10",
                "--frame-size",
                "64k",
                "--duration",
                "1s",
                "--live",
                "never",
            ];
            let (code, text, err) = sinkrate(&args);
            assert_eq!(code, Some(2), "{text}{err}");
            assert!(text.contains("VERDICT  FAILED"), "{text}");
            assert!(
                !text.contains("KEEPS UP") && !text.contains("headroom"),
                "{text}"
            );
            let mut json_args = args.to_vec();
            json_args.extend(["--output-format", "json"]);
            let (code, out, _) = sinkrate(&json_args);
            assert_eq!(code, Some(2));
            let v: serde_json::Value = serde_json::from_str(&out).expect("json");
            assert_eq!(v["verdict"], "failed");
            assert_eq!(
                v["interrupted"], false,
                "a failed run is not an interrupted one"
            );
            assert!(v["headroom"].is_null());
            assert!(
                v["error"]["what"]
                    .as_str()
                    .is_some_and(|e| e.contains("Read-only")),
                "{}",
                v["error"]
            );
        },
    );
}

#[test]
fn memory_gets_no_keeps_up_verdict_and_no_headroom() {
    with_root(
        "memory_gets_no_keeps_up_verdict_and_no_headroom",
        &[],
        || {
            let base = tempfile::tempdir().expect("tempdir");
            let shm = common::MemoryFs::new(&base.path().join("shm"), "256M");
            let dir = shm.at.to_str().expect("utf8");
            let (code, out, err) = sinkrate(&[
                "record",
                "--dir",
                dir,
                "--fps",
                "30",
                "--frame-size",
                "100k",
                "--duration",
                "1s",
                "--live",
                "never",
                "--output-format",
                "json",
            ]);
            let v: serde_json::Value = serde_json::from_str(&out).expect("json");
            // As for check below: drops on a starved machine, else NOT STORAGE.
            let expected = if v["verdict"] == "drops" { 1 } else { 3 };
            assert_eq!(code, Some(expected), "{out}{err}");
            if expected == 3 {
                assert_eq!(v["verdict"], "not_storage");
            }
            assert!(v["headroom"].is_null());
            assert!(v["lifetime"].is_null(), "{v}");
            assert!(v["totals"]["device_bytes_per_s"].is_null(), "{v}");
            let report = base.path().join("check.json");
            let (code, text, err) = sinkrate(&[
                "check",
                dir,
                "--quick",
                "--progress",
                "never",
                "--color",
                "never",
                "--output",
                report.to_str().expect("utf8"),
            ]);
            // Writing 3 MB/s to RAM keeps up on a quiet machine (NOT STORAGE, exit 3); a busy
            // one can starve the capture thread and drop frames (DROPS, exit 1): a drop is
            // evidence even on memory. Either way there is no keeps-up verdict, no headroom,
            // and nothing is said of a device, a card's wear or the page cache's throttling,
            // which memory does not have.
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
            let dropped = v["verdict"] == "drops";
            if dropped {
                assert_eq!(code, Some(1), "{text}{err}");
                assert!(text.contains("VERDICT  DROPS FRAMES"), "{text}");
                assert!(text.contains("the host itself fell behind"), "{text}");
                assert!(!text.contains("dirty limit at"), "{text}");
            } else {
                assert_eq!(v["verdict"], "not_storage", "{text}");
                assert_eq!(code, Some(3), "{text}{err}");
                assert!(text.contains("VERDICT  NOT STORAGE"), "{text}");
            }
            assert!(text.contains("memory rather than"), "{text}");
            assert!(
                !text.contains("KEEPS UP") && !text.contains("x headroom"),
                "{text}"
            );
            for device_row in [
                "device wrote while recording",
                "write amplification",
                "card lifetime",
                "this check wrote to the device",
                "writers throttled by the page cache",
            ] {
                assert!(!text.contains(device_row), "{device_row}: {text}");
            }
            assert!(v["headroom"].is_null());
            assert!(v["device_bytes_written"].is_null(), "{v}");
            assert!(
                v["raw_write"]["bytes_per_s"].is_null(),
                "RAM is not measured as a device"
            );
            assert!(common::files_in(&shm.at).is_empty());
        },
    );
}

#[test]
fn files_under_dev_are_files_and_a_missing_device_is_never_created() {
    with_root(
        "files_under_dev_are_files_and_a_missing_device_is_never_created",
        &[],
        || {
            // A filesystem mounted under /dev, as /dev/shm is: its files are files.
            let at = Path::new("/dev").join(format!("sinkrate-test-{}", std::process::id()));
            let under_dev = common::MemoryFs::new(&at, "64M");
            let dir = format!("--directory={}", under_dev.at.display());
            let (code, out, err) = sinkrate(&[
                "bench",
                "--name=j",
                "--rw=write",
                "--size=1M",
                &dir,
                "--output-format=json",
            ]);
            assert_eq!(code, Some(0), "{out}{err}");
            // A name that does not exist among the device nodes is a mistyped device.
            let missing = format!(
                "--filename=/dev/sinkrate-no-such-device-{}",
                std::process::id()
            );
            let (code, _, err) =
                sinkrate(&["bench", "--name=j", "--rw=write", "--size=1M", &missing]);
            assert_eq!(code, Some(2), "{err}");
            assert!(
                err.contains("a device path is never created as a file"),
                "{err}"
            );
            assert!(!Path::new(missing.trim_start_matches("--filename=")).exists());
        },
    );
}

/// Starts `sinkrate record` in `dir` (10 MB/s buffered, for `seconds`, EXTRA flags), its
/// JSON to stdout.
fn start_recording(dir: &Path, seconds: &str, extra: &[&str]) -> std::process::Child {
    Command::new(sinkrate_path())
        .args(["record", "--dir"])
        .arg(dir)
        .args(extra)
        .args([
            "--fps",
            "20",
            "--frame-size",
            "512k",
            "--duration",
            seconds,
            "--live",
            "never",
            "--output-format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("record starts")
}

fn interrupt(child: &std::process::Child) {
    // SAFETY: kill on our own child's pid.
    let r = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(r, 0);
}

/// Waits until the recording's file exists in `dir`. What comes before it (the journaled
/// dirty limit, the kernel's trace instance) takes seconds on a loaded machine; a recording
/// that ended before it wrote a file fails the test with its own words.
fn wait_until_recording(child: &mut std::process::Child, dir: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while recording_files(dir).is_empty() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("the recording ended ({status}) before it wrote a file: {err}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no recording file within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn recording_files(dir: &Path) -> Vec<String> {
    common::files_in(dir)
        .into_iter()
        .filter(|f| f.starts_with("sinkrate-record"))
        .collect()
}

#[test]
fn two_signals_close_together_are_one_interrupt_with_a_report() {
    // `timeout -s INT` signals the child, then its group: the same event, twice.
    let d = tempfile::tempdir().expect("tempdir");
    let mut child = start_recording(d.path(), "20s", &[]);
    wait_until_recording(&mut child, d.path());
    std::thread::sleep(std::time::Duration::from_millis(500));
    interrupt(&child);
    std::thread::sleep(std::time::Duration::from_millis(30));
    interrupt(&child);
    let out = child.wait_with_output().expect("waits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("interrupted again"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report");
    assert_eq!(v["interrupted"], true);
    assert!(recording_files(d.path()).is_empty());
}

#[test]
fn a_second_interrupt_still_removes_the_runs_own_files() {
    with_root(
        "a_second_interrupt_still_removes_the_runs_own_files",
        EMULATE_TOOLS,
        || {
            // A 4 MB/s card under a 10 MB/s recording: after the first Ctrl-C the writers'
            // final fsync waits for the card, and the user presses Ctrl-C again.
            let card = common::SlowDev::new(&["--size", "256M", "--write-rate", "4M"]);
            let dirty_bytes = || std::fs::read_to_string("/proc/sys/vm/dirty_bytes").expect("read");
            let before = dirty_bytes();
            // With a temporary dirty limit, which the second Ctrl-C must put back too.
            let mut child = start_recording(card.path(), "20s", &["--dirty-limit", "48M"]);
            wait_until_recording(&mut child, card.path());
            // Recording for a while: its writers are behind the card by the first Ctrl-C.
            std::thread::sleep(std::time::Duration::from_secs(2));
            assert_eq!(recording_files(card.path()).len(), 1, "recording started");
            interrupt(&child);
            // Past the 1 s within which two signals are one event (src/interrupt.rs).
            std::thread::sleep(std::time::Duration::from_millis(1300));
            interrupt(&child);
            // The files go at once, though the process may wait for the card to finish the
            // write the kernel already has.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while !recording_files(card.path()).is_empty() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            assert!(
                recording_files(card.path()).is_empty(),
                "left behind: {:?}",
                recording_files(card.path())
            );
            let out = child.wait_with_output().expect("waits");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(130), "{err}");
            assert!(
                err.contains("interrupted again") && err.contains("removed its 1 test file"),
                "{err}"
            );
            assert!(err.contains("restored vm.dirty"), "{err}");
            assert_eq!(dirty_bytes(), before, "the dirty limit is back");
        },
    );
}

#[test]
fn a_kept_recording_is_never_overwritten() {
    let d = tempfile::tempdir().expect("tempdir");
    let kept = d.path().join("sinkrate-record-cam0.bin");
    std::fs::write(&kept, b"last week's recording").expect("write");
    let (code, _, err) = sinkrate(&[
        "record",
        "--dir",
        d.path().to_str().expect("utf8"),
        "--fps",
        "10",
        "--frame-size",
        "64k",
        "--duration",
        "1s",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("sinkrate-record-cam0.bin exists"), "{err}");
    assert_eq!(
        std::fs::read(&kept).expect("read"),
        b"last week's recording"
    );
}

/// `sinkrate ARGS` (stdin empty) must fail with exit 2 and one error line holding `expect`.
fn one_line(args: &[&str], expect: &[&str]) {
    let (code, out, err) = sinkrate(args);
    assert_eq!(code, Some(2), "{args:?}: {out}{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("sinkrate: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{args:?}: {err}");
    for e in expect {
        assert!(
            errors[0].contains(e),
            "{args:?}: '{}' lacks '{e}'",
            errors[0]
        );
    }
}

#[test]
fn each_stumble_gets_a_line_that_names_it() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().to_str().expect("utf8");
    let file = d.path().join("afile");
    std::fs::write(&file, b"").expect("empty file");
    let file = file.to_str().expect("utf8");
    let under_file = format!("--directory={file}/sub");
    one_line(
        &["bench", "--name=j", "--rw=write", "--size=1M", &under_file],
        &[&format!("{file} is a file, not a directory")],
    );
    let as_dir = format!("--directory={file}");
    one_line(
        &["bench", "--name=j", "--rw=write", "--size=1M", &as_dir],
        &["is not a directory"],
    );
    let empty = format!("--filename={file}");
    one_line(
        &["bench", "--name=j", "--rw=read", &empty],
        &["is empty, so it gives no size"],
    );
    // A format the result has not: refused before any work, with the formats it has (the
    // output plan's registrations, src/export/plan.rs).
    one_line(
        &[
            "record",
            "--dir",
            dir,
            "--duration",
            "1s",
            "--output-format",
            "csv",
        ],
        &["invalid value 'csv'", "[possible values: text, json]"],
    );
    assert!(common::files_in(d.path())
        .iter()
        .all(|f| !f.starts_with("sinkrate-record")));
    one_line(
        &["suite", "record-size", dir, "--output-format", "csv"],
        &["[possible values: text, json, markdown]"],
    );
    let in_dir = format!("--directory={dir}");
    one_line(
        &["bench", "--name=j", "--rw=write", "--size=16E", &in_dir],
        &["'16E' is too large"],
    );
    one_line(&["bench", "-"], &["<stdin>: no jobs defined"]);
    fn record<'a>(dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["record", "--dir", dir, "--fps", "5"];
        a.extend_from_slice(extra);
        a
    }
    one_line(
        &record(dir, &["--frame-size", "99999999999999999999"]),
        &["--frame-size", "too large"],
    );
    one_line(
        &record(dir, &["--frame-size", "-5"]),
        &["--frame-size: '-5' is negative"],
    );
    one_line(
        &record(dir, &["--frame-size", "1k", "--preallocate", "100T"]),
        &["lower --preallocate"],
    );
    one_line(
        &[
            "record",
            "--dir",
            "/proc",
            "--fps",
            "5",
            "--frame-size",
            "1k",
        ],
        &["/proc is on proc, a kernel interface, not storage"],
    );
    one_line(
        &["emulate", "up", &format!("{dir}/card"), "--write-rate", "1"],
        &["--write-rate: at least 1K"],
    );
    assert_eq!(common::files_in(d.path()), vec!["afile".to_string()]);
}

#[test]
fn a_bad_mount_option_gets_the_kernels_reason() {
    with_root(
        "a_bad_mount_option_gets_the_kernels_reason",
        EMULATE_TOOLS,
        || {
            let base = tempfile::tempdir().expect("tempdir");
            let mp = base.path().join("card");
            let (code, _, err) = emulate_up(&mp, &["--mount-opts", "no_such_option"]);
            assert_eq!(code, Some(2), "{err}");
            assert!(
                err.contains("Unknown parameter 'no_such_option'")
                    || err.contains("no_such_option"),
                "{err}"
            );
            assert!(!err.contains("dmesg(1) may have more information"), "{err}");
            let (_, list, _) = sinkrate(&["emulate", "list"]);
            assert!(!list.contains(mp.to_str().expect("utf8")), "{list}");
        },
    );
}

// ---- Safety, second pass: each case below harmed a user's files before it was fixed. ----

/// `sinkrate ARGS` run in `cwd`, to its end.
/// Starts `cmd` (its output discarded) and kills it with SIGKILL once `file` exists and
/// its identity has been journaled (right after it is created).
fn kill_once_made(cmd: &mut Command, file: &Path) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sinkrate starts");
    let started = std::time::Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed().as_secs() < 30,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

#[test]
fn the_sweep_removes_only_the_file_the_killed_run_made() {
    // A run killed in X left rec/...cam0.bin; a run in Y, whose own rec/...cam0.bin is the
    // user's, must remove X's leftover and never Y's file of the same relative name.
    let x = tempfile::tempdir().expect("tempdir");
    let y = tempfile::tempdir().expect("tempdir");
    for d in [x.path(), y.path()] {
        std::fs::create_dir(d.join("rec")).expect("mkdir");
    }
    std::fs::create_dir(y.path().join("o")).expect("mkdir");
    let users = y.path().join("rec/sinkrate-record-cam0.bin");
    std::fs::write(&users, b"the user's own recording").expect("write");
    let leftover = x.path().join("rec/sinkrate-record-cam0.bin");
    // A state directory of this test's own: what the killed run leaves (its files, its
    // trace instances) is swept by this test's next run, not by another test's beside it.
    let state = tempfile::tempdir().expect("tempdir");
    kill_once_made(
        Command::new(sinkrate_path())
            .env("SINKRATE_STATE_DIR", state.path())
            .current_dir(x.path())
            .args([
                "record",
                "--dir",
                "rec",
                "--duration",
                "20s",
                "--live",
                "never",
            ]),
        &leftover,
    );
    let out = Command::new(sinkrate_path())
        .env("SINKRATE_STATE_DIR", state.path())
        .current_dir(y.path())
        .args([
            "record",
            "--dir",
            "o",
            "--duration",
            "1s",
            "--write-mode",
            "null",
            "--live",
            "never",
        ])
        .output()
        .expect("sinkrate runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read(&users).expect("the user's file is still there"),
        b"the user's own recording",
        "{err}"
    );
    assert!(
        !leftover.exists(),
        "the killed run's file is removed: {err}"
    );
}

#[test]
fn a_leftover_replaced_by_another_file_is_left_alone() {
    // The killed run's file was removed and a user's file took its name since: not removed.
    let d = tempfile::tempdir().expect("tempdir");
    let name = d.path().join("k.0.0");
    kill_once_made(
        Command::new(sinkrate_path())
            .args([
                "bench",
                "--eta=never",
                "--name=k",
                "--rw=write",
                "--bs=64k",
                "--size=64m",
            ])
            .arg("--rate=4m")
            .arg(format!("--directory={}", d.path().display())),
        &name,
    );
    // The user's file takes the name while the run's still exists (no inode to reuse).
    let theirs = d.path().join("theirs");
    std::fs::write(&theirs, b"user data").expect("write");
    std::fs::rename(&theirs, &name).expect("rename");
    let (_, _, err) = sinkrate(&["emulate", "list"]);
    assert_eq!(
        std::fs::read(&name).expect("still there"),
        b"user data",
        "{err}"
    );
}

#[test]
fn a_default_report_name_planted_in_tmp_is_never_written_through() {
    with_root(
        "a_default_report_name_planted_in_tmp_is_never_written_through",
        &[],
        || {
            // The current directory is read-only, so check's report goes to TMPDIR, a sticky
            // shared directory where another user planted the names check would choose.
            let base = tempfile::tempdir().expect("tempdir");
            let tmp = base.path().join("tmp");
            let ro = base.path().join("ro");
            let storage = base.path().join("storage");
            for d in [&tmp, &ro, &storage] {
                std::fs::create_dir(d).expect("mkdir");
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
            common::run(
                "mount",
                &["-t", "tmpfs", "-o", "ro", "ro", ro.to_str().expect("utf8")],
            );
            let _unmount = common::Unmount(ro.clone());
            let victim = base.path().join("victim");
            std::fs::write(&victim, b"the victim's file").expect("write");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs() as i64;
            for s in 0..120 {
                let stamp = chrono::DateTime::from_timestamp(now + s, 0)
                    .expect("time")
                    .format("%Y%m%d-%H%M%S");
                let link = tmp.join(format!("sinkrate-check-{stamp}.json"));
                std::os::unix::fs::symlink(&victim, &link).expect("plant");
                std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).expect("lchown");
            }
            let _protected = common::Sysctl::set("/proc/sys/fs/protected_symlinks", "0");
            let out = Command::new(sinkrate_path())
                .current_dir(&ro)
                .env("TMPDIR", &tmp)
                .args(["check", "--quick"])
                .arg(&storage)
                .output()
                .expect("check runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                std::fs::read(&victim).expect("read"),
                b"the victim's file",
                "{text}{err}"
            );
            assert!(matches!(out.status.code(), Some(0 | 1)), "{text}{err}");
            let reports: Vec<String> = common::files_in(&tmp)
                .into_iter()
                .filter(|n| n.ends_with("-2.json"))
                .collect();
            assert_eq!(reports.len(), 1, "{text}{err}");
            assert!(text.contains(&reports[0]), "the table names it: {text}");
        },
    );
}

#[test]
fn recordings_started_together_never_share_a_file() {
    // Pairs started at the same instant into one directory: the first's kept recording is
    // never written by the second nor removed by its cleanup, and never do both succeed.
    let dirs: Vec<tempfile::TempDir> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let runs: Vec<(std::process::Child, std::process::Child)> = dirs
        .iter()
        .map(|d| {
            let keep = start_recording(d.path(), "2s", &["--keep"]);
            let other = start_recording(d.path(), "2s", &[]);
            (keep, other)
        })
        .collect();
    for ((keep, other), d) in runs.into_iter().zip(&dirs) {
        let keep = keep.wait_with_output().expect("waits");
        let other = other.wait_with_output().expect("waits");
        let said = format!(
            "keep: {:?} {}\nother: {:?} {}",
            keep.status.code(),
            String::from_utf8_lossy(&keep.stderr),
            other.status.code(),
            String::from_utf8_lossy(&other.stderr)
        );
        // A run that recorded prints a result without an error, whatever the verdict: a
        // slow disk may make it "falls behind" (exit 1), which is not what this test is
        // about. A run refused after its start prints a result that names the error.
        let recorded = |out: &std::process::Output| {
            serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .ok()
                .filter(|v| v["error"].is_null() && v["streams"][0]["bytes_written"].is_u64())
        };
        let refused = |out: &std::process::Output| {
            out.status.code() == Some(2) && String::from_utf8_lossy(&out.stderr).contains("exists")
        };
        let (keep_result, other_result) = (recorded(&keep), recorded(&other));
        assert!(
            keep_result.is_some() != other_result.is_some(),
            "exactly one of the two records: {said}"
        );
        let file = d.path().join("sinkrate-record-cam0.bin");
        if let Some(v) = keep_result {
            assert!(refused(&other), "the second is refused: {said}");
            let bytes = v["streams"][0]["bytes_written"].as_u64();
            assert_eq!(
                std::fs::metadata(&file).map(|m| m.len()).ok(),
                bytes,
                "the kept recording is whole: {said}"
            );
        } else {
            assert!(refused(&keep), "the second is refused: {said}");
            assert!(!file.exists(), "the unkept recording was removed: {said}");
        }
    }
}

#[test]
fn a_path_that_is_not_utf8_is_used_or_refused_never_a_panic() {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().expect("tempdir");
    let bad = d.path().join(OsStr::from_bytes(b"bad\xffname"));
    std::fs::create_dir(&bad).expect("mkdir");
    let at = |name: &str| -> OsString { bad.join(name).into_os_string() };
    let missing = d
        .path()
        .join(OsStr::from_bytes(b"gone\xfe"))
        .into_os_string();
    let flag = |f: &str, p: &OsString| -> OsString {
        let mut s = OsString::from(f);
        s.push(p);
        s
    };
    // Every path-taking flag, given a path that does not exist or a directory's new file.
    let cases: Vec<Vec<OsString>> = vec![
        vec!["report".into(), missing.clone()],
        vec!["compare".into(), missing.clone(), missing.clone()],
        vec!["audit".into(), missing.clone()],
        vec!["check".into(), missing.clone()],
        vec!["verify".into(), missing.clone()],
        vec!["bench".into(), missing.clone()],
        vec![
            "bench".into(),
            "--name=x".into(),
            flag("--directory=", &missing),
            "--size=1m".into(),
        ],
        vec![
            "watch".into(),
            "--duration".into(),
            "1s".into(),
            "--output".into(),
            at("w.json"),
            "--csv".into(),
            at("w.csv"),
            "--prometheus".into(),
            at("w.prom"),
        ],
        vec![
            "record".into(),
            "--dir".into(),
            bad.clone().into_os_string(),
            "--duration".into(),
            "1s".into(),
            "--live".into(),
            "never".into(),
            "--output-format".into(),
            "json".into(),
            "--output".into(),
            at("r.json"),
            "--frames-log".into(),
            at("f.csv"),
            "--report".into(),
            at("r.html"),
        ],
        vec![
            "bench".into(),
            "--name=x".into(),
            "--ioengine=null".into(),
            "--size=1m".into(),
            "--output".into(),
            at("b.json"),
        ],
    ];
    for args in &cases {
        let out = Command::new(sinkrate_path())
            .args(args)
            .output()
            .expect("sinkrate runs");
        let err = String::from_utf8_lossy(&out.stderr);
        // A recording's verdict may be "falls behind" (exit 1) on a slow or busy machine:
        // it ran, which is what this test is about.
        let ran = match out.status.code() {
            Some(0) => true,
            Some(1) => args[0] == "record",
            _ => false,
        };
        assert!(
            (ran || out.status.code() == Some(2)) && !err.contains("panicked"),
            "{args:?}: {:?} {err}",
            out.status.code()
        );
        if out.status.code() == Some(2) {
            assert_eq!(
                err.lines()
                    .filter(|l| l.starts_with("sinkrate: error:"))
                    .count(),
                1,
                "{args:?}: one line: {err}"
            );
        }
    }
    // The recording ran and every output is there under its own name.
    let mut made = common::files_in(&bad);
    made.sort();
    assert_eq!(
        made,
        ["b.json", "f.csv", "r.html", "r.json", "w.csv", "w.json", "w.prom"]
    );
}

#[test]
fn sighup_ends_a_recording_as_ctrl_c_does() {
    // An SSH session to a board dropping: the run stops cleanly, reports, removes its files.
    let d = tempfile::tempdir().expect("tempdir");
    let mut child = start_recording(d.path(), "20s", &[]);
    wait_until_recording(&mut child, d.path());
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: kill on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let out = child.wait_with_output().expect("waits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report");
    assert_eq!(v["interrupted"], true);
    assert!(recording_files(d.path()).is_empty());
}

#[test]
fn a_zero_status_interval_is_off_and_the_job_ends() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(sinkrate_path())
        .args([
            "bench",
            "--eta=never",
            "--name=x",
            "--size=1m",
            "--status-interval=0",
        ])
        .arg(format!("--directory={}", d.path().display()))
        .args(["--output-format=json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bench starts");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("bench --status-interval=0 never ended");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("waits");
    common::succeeded(&out);
    assert_eq!(
        common::json_documents(&out.stdout).len(),
        1,
        "one result, no status reports"
    );
}

#[test]
fn a_full_standard_output_is_named() {
    let out = Command::new(sinkrate_path())
        .args(["audit", "."])
        .stdout(std::fs::File::create("/dev/full").expect("/dev/full"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("writing to standard output: No space left"),
        "{err}"
    );
}

#[test]
fn an_output_never_replaces_an_input_or_another_output() {
    let d = tempfile::tempdir().expect("tempdir");
    let job = d.path().join("job.fio");
    let text = "[j]\nioengine=null\nsize=1m\n";
    std::fs::write(&job, text).expect("write");
    let p = |n: &str| d.path().join(n).to_str().expect("utf8").to_string();
    let dir = d.path().to_str().expect("utf8");
    let job_s = p("job.fio");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["bench".into(), job_s.clone(), format!("--output={job_s}")],
            "an input",
        ),
        (
            vec![
                "bench".into(),
                job_s.clone(),
                "--report".into(),
                job_s.clone(),
            ],
            "an input",
        ),
        (
            vec![
                "record",
                "--dir",
                dir,
                "--duration",
                "1s",
                "--output",
                &p("x"),
                "--report",
            ]
            .into_iter()
            .map(String::from)
            .chain([format!("{dir}/./x")])
            .collect(),
            "--output names the same file",
        ),
        (
            [
                "record",
                "--dir",
                dir,
                "--duration",
                "1s",
                "--frames-log",
                &p("y"),
                "--output",
                &p("y"),
            ]
            .map(String::from)
            .to_vec(),
            "--output names the same file",
        ),
        (
            [
                "watch",
                "--duration",
                "1s",
                "--csv",
                &p("z"),
                "--output",
                &p("z"),
                "--prometheus",
                &p("z"),
            ]
            .map(String::from)
            .to_vec(),
            "names the same file",
        ),
    ];
    for (args, expect) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        one_line(&args, &[expect]);
    }
    assert_eq!(std::fs::read_to_string(&job).expect("read"), text);
    assert_eq!(
        common::files_in(d.path()),
        vec!["job.fio"],
        "nothing written"
    );
}

#[test]
fn every_output_is_refused_before_the_work() {
    // Each would have run the whole command, then refused (or written one output first).
    let d = tempfile::tempdir().expect("tempdir");
    let p = |n: &str| d.path().join(n).to_str().expect("utf8").to_string();
    std::os::unix::fs::symlink(d.path().join("nowhere/x"), d.path().join("link")).expect("link");
    std::fs::create_dir(d.path().join("sub")).expect("mkdir");
    let marker = d.path().join("ran");
    let mark = format!("touch {}", marker.display());
    for (flag, target) in [
        ("--prometheus", p("link")),
        ("--prometheus", "/proc/sinkrate-x".to_string()),
        ("--prometheus", format!("{}/", p("sub"))),
        ("--output", "/proc/sinkrate-x.json".to_string()),
    ] {
        one_line(
            &[
                "watch",
                "--duration",
                "1s",
                flag,
                &target,
                "--",
                "sh",
                "-c",
                &mark,
            ],
            &[flag],
        );
        assert!(!marker.exists(), "{flag} {target}: the command ran");
    }
    // report --png FILE: refused before the HTML is written.
    let run = p("r.json");
    let (code, _, err) = sinkrate(&[
        "record",
        "--dir",
        &p("sub"),
        "--duration",
        "1s",
        "--write-mode",
        "null",
        "--live",
        "never",
        "--output-format",
        "json",
        "--output",
        &run,
    ]);
    assert!(matches!(code, Some(0 | 1)), "{err}");
    one_line(
        &["report", &run, "-o", &p("r.html"), "--png", &run],
        &["--png", "not a directory"],
    );
    assert!(
        !d.path().join("r.html").exists(),
        "no HTML before the refusal"
    );
}

#[test]
fn a_power_cut_check_off_an_emulated_card_is_refused() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().to_str().expect("utf8");
    one_line(
        &["check", dir, "--quick", "--", "--power-cut-at", "1s"],
        &["--power-cut-at", "emulated card"],
    );
    assert!(common::files_in(d.path()).is_empty(), "nothing written");
}

#[test]
fn an_endless_input_is_read_with_a_bound() {
    // Each grew without end before (20 GB in a minute for report /dev/zero).
    for args in [
        vec!["report", "/dev/zero"],
        vec!["report", "/dev/urandom"],
        vec!["compare", "/dev/zero", "/dev/zero"],
        vec!["bench", "/dev/zero"],
    ] {
        let (code, _, err) = sinkrate(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("larger than"), "{args:?}: {err}");
    }
    let out = Command::new(sinkrate_path())
        .args(["bench", "-"])
        .stdin(std::fs::File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("standard input: larger than 16 MiB"), "{err}");
}

#[test]
fn a_job_file_that_is_not_text_names_its_line() {
    let d = tempfile::tempdir().expect("tempdir");
    let job = d.path().join("bad.fio");
    std::fs::write(&job, b"[a]\nsize=1m\nname=\xff\n").expect("write");
    one_line(
        &["bench", job.to_str().expect("utf8")],
        &["line 3", "not valid UTF-8"],
    );
}

#[test]
fn readonly_creates_extends_and_writes_nothing() {
    let d = tempfile::tempdir().expect("tempdir");
    let user = d.path().join("USERFILE");
    std::fs::write(&user, b"nineteen bytes here").expect("write");
    let trace = d.path().join("trace");
    std::fs::write(
        &trace,
        format!(
            "fio version 2 iolog\n{0} add\n{0} open\n{0} write 0 4096\n{0} close\n",
            user.display()
        ),
    )
    .expect("write");
    let u = format!("--filename={}", user.display());
    let missing = format!("--filename={}", d.path().join("missing").display());
    let t = format!("--read_iolog={}", trace.display());
    for (args, expect) in [
        (
            vec![
                "bench",
                "--readonly",
                "--name=r",
                &u,
                "--rw=read",
                "--bs=4k",
                "--size=16k",
            ],
            "never extends",
        ),
        (vec!["bench", "--readonly", "--name=t", &t], "trace"),
        (
            vec![
                "bench",
                "--readonly",
                "--name=m",
                &missing,
                "--rw=read",
                "--size=4k",
            ],
            "creates nothing",
        ),
        (
            vec![
                "bench",
                "--readonly",
                "--name=s",
                &missing,
                "--ioengine=filestat",
                "--size=4k",
            ],
            "creates nothing",
        ),
    ] {
        one_line(&args, &["--readonly", expect]);
    }
    assert_eq!(std::fs::read(&user).expect("read"), b"nineteen bytes here");
    assert_eq!(common::files_in(d.path()), vec!["USERFILE", "trace"]);
    // A read within the file runs.
    let (code, _, err) = sinkrate(&[
        "bench",
        "--eta=never",
        "--readonly",
        "--name=ok",
        &u,
        "--rw=read",
        "--bs=1",
        "--size=19",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(&user).expect("read"), b"nineteen bytes here");
}

/// A short recording's JSON in `dir` as `name`.
fn short_recording(dir: &Path, name: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = Command::new(sinkrate_path())
        .args(["record", "--dir"])
        .arg(dir)
        .args(["--live", "never", "--output-format", "json", "--output"])
        .arg(dir.join(name))
        .args(extra)
        .output()
        .expect("record runs");
    let text = std::fs::read(dir.join(name)).expect("the result");
    (
        out.status.code(),
        serde_json::from_slice(&text).expect("json"),
    )
}

#[test]
fn runs_too_short_or_too_few_are_not_judged() {
    let d = tempfile::tempdir().expect("tempdir");
    // One frame a stream is no evidence of keeping up.
    for (name, extra) in [
        ("ns.json", vec!["--duration", "1ns"]),
        (
            "slow.json",
            vec![
                "--fps",
                "0.0000001",
                "--frame-size",
                "4k",
                "--duration",
                "1s",
            ],
        ),
    ] {
        let (code, v) = short_recording(d.path(), name, &extra);
        assert_eq!(
            v["verdict"], "too_short",
            "{extra:?}: {}",
            v["verdict_text"]
        );
        assert_eq!(code, Some(3), "{extra:?}");
        // Nor extrapolated to years.
        assert!(v["lifetime"].is_null(), "{extra:?}: {}", v["lifetime"]);
    }
    // Two 3 s recordings: under one bootstrap block each, so no significance either way.
    let a = ["--fps", "30", "--frame-size", "64k", "--duration", "3s"];
    short_recording(d.path(), "r1.json", &a);
    short_recording(d.path(), "r2.json", &a);
    let p = |n: &str| d.path().join(n).to_str().expect("utf8").to_string();
    let (r1, r2) = (p("r1.json"), p("r2.json"));
    let (code, out, err) = sinkrate(&[
        "compare",
        &r1,
        &r2,
        "--label",
        "a",
        "--label",
        "b",
        "--fail-if-worse",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("too little data to tell"), "{out}");
    assert!(!out.contains("95% CI"), "{out}");
    // One run given four times a side is one run a side.
    let mut args = vec!["compare".to_string()];
    for f in [&r1, &r1, &r1, &r1, &r2, &r2, &r2, &r2] {
        args.push(f.clone());
    }
    for l in ["a", "a", "a", "a", "b", "b", "b", "b"] {
        args.extend(["--label".to_string(), l.to_string()]);
    }
    args.extend(["--output-format".to_string(), "json".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = sinkrate(&args);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r["runs"] == 1), "{rows:?}");
    assert!(out.contains("given 4 times"), "{out}");
}

#[test]
fn a_recording_whose_directory_vanished_failed() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("gone");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut child = start_recording(&dir, "4s", &[]);
    wait_until_recording(&mut child, &dir);
    std::thread::sleep(std::time::Duration::from_millis(500));
    std::fs::remove_dir_all(&dir).expect("rm -r");
    let out = child.wait_with_output().expect("waits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"], "failed", "{}", v["verdict_text"]);
    assert!(err.contains("removed during the recording"), "{err}");
}

#[test]
fn emulate_down_never_unmounts_what_a_user_mounted_on_top() {
    with_root(
        "emulate_down_never_unmounts_what_a_user_mounted_on_top",
        EMULATE_TOOLS,
        || {
            let base = tempfile::tempdir().expect("tempdir");
            let mp = base.path().join("card");
            let (code, _, err) = emulate_up(&mp, &[]);
            assert_eq!(code, Some(0), "{err}");
            let m = mp.to_str().expect("utf8");
            common::run("mount", &["-t", "tmpfs", "users-tmpfs", m]);
            std::fs::write(mp.join("f"), b"the user's file").expect("write");
            let (code, _, err) = sinkrate(&["emulate", "down", m]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("unmount it first"), "{err}");
            assert_eq!(
                std::fs::read(mp.join("f")).expect("still there"),
                b"the user's file"
            );
            let (_, listed, _) = sinkrate(&["emulate", "list"]);
            assert!(listed.contains(m), "the card is still known: {listed}");
            common::run("umount", &[m]);
            // The card's own filesystem is intact under it, and now goes down.
            let (code, _, err) = sinkrate(&["emulate", "down", m]);
            assert_eq!(code, Some(0), "{err}");
            let (_, listed, _) = sinkrate(&["emulate", "list"]);
            assert!(!listed.contains(m), "{listed}");
        },
    );
}

#[test]
fn a_second_interrupt_of_watch_stops_the_watched_command_and_names_it() {
    // A command that ignores Ctrl-C and SIGTERM: left running, orphaned, before.
    let child = Command::new(sinkrate_path())
        .args(["watch", "--live", "never", "--", "sh", "-c"])
        .arg("trap '' INT TERM; while :; do sleep 0.1; done")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("watch starts");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    interrupt(&child);
    std::thread::sleep(std::time::Duration::from_millis(1300));
    interrupt(&child);
    let out = child.wait_with_output().expect("waits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // The pid on the line that names the watched command (a note about another run's
    // leftovers may name a pid before it).
    let pid: i32 = err
        .split("the watched command")
        .nth(1)
        .and_then(|t| t.split("(pid ").nth(1))
        .and_then(|t| t.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("names the command's pid: {err}"));
    assert!(err.contains("the watched command sh -c"), "{err}");
    assert!(err.contains("SIGKILL, stopped"), "{err}");
    // SAFETY: signal 0 only asks whether the process exists.
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the command is gone: {err}"
    );
}

#[test]
fn control_characters_and_formulas_from_input_are_shown_not_acted_on() {
    let d = tempfile::tempdir().expect("tempdir");
    // A NUL and an escape sequence in a job value: the line shows them, the terminal does
    // not get them.
    let job = d.path().join("j.fio");
    std::fs::write(&job, b"[j]\nrw=wr\0ite\x1b[31m\nsize=1m\n").expect("write");
    let (code, _, err) = sinkrate(&["bench", job.to_str().expect("utf8")]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'wr\\x00ite\\x1b[31m'"), "{err}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
    // A label a spreadsheet would run as a formula is text in compare's CSV.
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/record.json");
    let run = run.to_str().expect("utf8");
    let (code, csv, err) = sinkrate(&[
        "compare",
        run,
        "--label",
        "=HYPERLINK(\"http://x\")",
        "--output-format",
        "csv",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let first = reader
        .records()
        .next()
        .expect("a row")
        .expect("csv")
        .get(0)
        .expect("a cell")
        .to_string();
    assert_eq!(first, "'=HYPERLINK(\"http://x\")", "{csv}");
}

#[test]
fn an_existing_file_a_job_did_not_name_is_never_written() {
    with_root(
        "an_existing_file_a_job_did_not_name_is_never_written",
        &[],
        || {
            use std::os::unix::fs::PermissionsExt;
            let d = tempfile::tempdir().expect("tempdir");
            let sticky = d.path().join("shared");
            std::fs::create_dir(&sticky).expect("mkdir");
            std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777))
                .expect("chmod 1777");
            let victim = d.path().join("victim");
            std::fs::write(&victim, b"someone's file").expect("write");
            let planted = sticky.join("j.0.0");
            std::os::unix::fs::symlink(&victim, &planted).expect("plant");
            let c = std::ffi::CString::new(planted.to_str().expect("utf8")).expect("cstring");
            // SAFETY: lchown on a valid C string: the link belongs to nobody (65534).
            assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
            let dir = format!("--directory={}", sticky.display());
            let job = [
                "bench",
                "--name=j",
                "--rw=write",
                "--size=64k",
                dir.as_str(),
            ];
            // A planted symlink is never followed, --force or not.
            for extra in [None, Some("--force")] {
                let mut args = job.to_vec();
                args.extend(extra);
                let (code, _, err) = sinkrate(&args);
                assert_eq!(code, Some(2), "{args:?}: {err}");
                assert!(err.contains("never follows one"), "{err}");
                assert_eq!(std::fs::read(&victim).expect("read"), b"someone's file");
            }
            // A regular file at the job's default name, not named by it: refused.
            std::fs::remove_file(&planted).expect("rm");
            std::fs::write(&planted, b"user data").expect("write");
            let (code, _, err) = sinkrate(&job);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("did not name it"), "{err}");
            assert_eq!(std::fs::read(&planted).expect("read"), b"user data");
            // The same through a --directory that is a symlink to the directory.
            let link_dir = d.path().join("link-to-shared");
            std::os::unix::fs::symlink(&sticky, &link_dir).expect("symlink");
            let via = format!("--directory={}", link_dir.display());
            let (code, _, err) = sinkrate(&[
                "bench",
                "--name=j",
                "--rw=write",
                "--size=64k",
                via.as_str(),
            ]);
            assert_eq!(code, Some(2), "{err}");
            assert_eq!(std::fs::read(&planted).expect("read"), b"user data");
            // Named with filename=, it is the job's to write, as in fio.
            let named = format!("--filename={}", planted.display());
            let (code, _, err) = sinkrate(&[
                "bench",
                "--name=j",
                "--rw=write",
                "--size=64k",
                named.as_str(),
                "--output-format=json",
            ]);
            assert_eq!(code, Some(0), "{err}");
            assert_eq!(std::fs::metadata(&planted).expect("meta").len(), 65536);
        },
    );
}

// The observer's promise: sinkrate never changes, stops or kills the program it watches or
// captures, and names what it cannot see. Each case below broke a user's recorder before.

/// A recorder that writes `frames` frames to `log`, one each `gap` seconds, and logs the
/// signals it gets: a watched or captured program that tells how it was treated.
fn logging_recorder(dir: &Path, frames: u32, gap: &str) -> (std::path::PathBuf, String) {
    let log = dir.join("recorder.log");
    let script = format!(
        "trap 'echo got INT >> {l}; exit 9' INT; trap 'echo got TERM >> {l}; exit 9' TERM; \
         i=0; while [ $i -lt {frames} ]; do echo frame $i >> {l}; i=$((i+1)); sleep {gap}; done; \
         echo done >> {l}",
        l = log.display()
    );
    (log, script)
}

fn recorder_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn a_metrics_file_that_cannot_be_written_never_stops_the_watched_recorder() {
    let d = tempfile::tempdir().expect("tempdir");
    let metrics_dir = d.path().join("m");
    std::fs::create_dir(&metrics_dir).expect("mkdir");
    let prom = metrics_dir.join("x.prom");
    let csv = metrics_dir.join("x.csv");
    let (log, script) = logging_recorder(d.path(), 26, "0.1");
    let child = Command::new(sinkrate_path())
        .args([
            "watch",
            "--live",
            "never",
            "--prometheus-every",
            "1s",
            "--output-format",
            "json",
        ])
        .arg("--prometheus")
        .arg(&prom)
        .arg("--csv")
        .arg(&csv)
        .args(["--", "sh", "-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("watch starts");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // Gone from under the watch in one step: a removal could race the watch's own next
    // write into it (remove_dir_all then met a file made after its listing: ENOTEMPTY).
    std::fs::rename(&metrics_dir, d.path().join("m.gone"))
        .expect("the metrics directory moved away");
    let out = child.wait_with_output().expect("waits");
    let err = String::from_utf8_lossy(&out.stderr);
    let log_text = recorder_log(&log);
    assert!(
        !log_text.contains("got "),
        "the recorder was signalled: {log_text}\n{err}"
    );
    assert!(log_text.contains("frame 25\ndone"), "{log_text}\n{err}");
    // The watch exits as the recorder did, and says what it could not write.
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--prometheus") && err.contains("cannot write"),
        "{err}"
    );
    let run = common::json_after_text(&out.stdout);
    let ids: Vec<&str> = run["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["id"].as_str())
        .collect();
    assert!(ids.contains(&"watch.prometheus_not_written"), "{run}");
    assert!(run["error"].is_null(), "{run}");
}

#[test]
fn a_metrics_filesystem_full_is_refused_before_the_recorder_and_later_only_said() {
    with_root(
        "a_metrics_filesystem_full_is_refused_before_the_recorder_and_later_only_said",
        &[],
        || {
            let d = tempfile::tempdir().expect("tempdir");
            let tiny = common::MemoryFs::new(&d.path().join("tiny"), "64k");
            let mnt = tiny.at.clone();
            let prom = mnt.join("x.prom");
            let filler = mnt.join("filler");
            // Full before the watch: refused, and the recorder never started.
            let _ = Command::new("dd")
                .args(["if=/dev/zero", "bs=4k", "count=64"])
                .arg(format!("of={}", filler.display()))
                .stderr(std::process::Stdio::null())
                .status();
            let (log, script) = logging_recorder(d.path(), 5, "0.1");
            let out = Command::new(sinkrate_path())
                .args(["watch", "--live", "never", "--prometheus"])
                .arg(&prom)
                .args(["--", "sh", "-c", &script])
                .output()
                .expect("runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("--prometheus"), "{err}");
            assert!(
                !log.exists(),
                "the recorder was started: {}",
                recorder_log(&log)
            );
            // Room at the start, full 1.5 s in: the recorder runs to its end.
            std::fs::remove_file(&filler).expect("rm");
            let child = Command::new(sinkrate_path())
                .args([
                    "watch",
                    "--live",
                    "never",
                    "--prometheus-every",
                    "1s",
                    "--prometheus",
                ])
                .arg(&prom)
                .args(["--", "sh", "-c", &logging_recorder(d.path(), 30, "0.1").1])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("watch starts");
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let _ = Command::new("dd")
                .args(["if=/dev/zero", "bs=4k", "count=64"])
                .arg(format!("of={}", filler.display()))
                .stderr(std::process::Stdio::null())
                .status();
            let out = child.wait_with_output().expect("waits");
            let err = String::from_utf8_lossy(&out.stderr);
            let log_text = recorder_log(&log);
            assert!(!log_text.contains("got "), "{log_text}\n{err}");
            assert!(log_text.contains("frame 29\ndone"), "{log_text}\n{err}");
            assert_eq!(out.status.code(), Some(0), "{err}");
            assert!(err.contains("cannot write"), "{err}");
            // The last good file is still there for node_exporter.
            let kept = std::fs::read_to_string(&prom).expect("the last good file is kept");
            assert!(kept.contains("sinkrate_watch_running 1"), "{kept}");
        },
    );
}

/// A hand-made trace of thread 5 writing `frames` frames of 64 KiB to /rec/a.mp4 at 30 fps,
/// then (with `gap_s`) one more after an idle gap; its end line after the last.
fn paced_trace(dir: &Path, name: &str, frames: u64, gap_s: u64) -> std::path::PathBuf {
    let mut calls: Vec<String> = (0..frames)
        .map(|k| common::traced_write(k * 33, "/rec/a.mp4", k << 16, 1 << 16))
        .collect();
    let mut end_ms = frames * 33;
    if gap_s > 0 {
        end_ms += gap_s * 1000;
        calls.push(common::traced_write(
            end_ms,
            "/rec/a.mp4",
            frames << 16,
            1 << 16,
        ));
    }
    calls.push(format!(
        r#"{{"end":{{"end_ns":{},"exit_code":0,"signal":null,"interrupted":false}}}}"#,
        (end_ms + 10) * 1_000_000
    ));
    let refs: Vec<&str> = calls.iter().map(|c| c.as_str()).collect();
    common::hand_sidecar(dir, name, 1, &refs)
}

#[test]
fn a_replay_never_writes_over_the_trace_it_replays() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let trace = paced_trace(d.path(), "rec.iolog", 40, 0);
    std::fs::write(&trace, "fio version 3 iolog\n").expect("iolog");
    let calls = d.path().join("rec.iolog.calls.jsonl");
    let before = (
        std::fs::read(&trace).expect("read"),
        std::fs::read(&calls).expect("read"),
    );
    let t = trace.to_str().expect("utf8");
    let c = calls.to_str().expect("utf8");
    for (given, flag, target) in [
        (t, "--output", c),
        (t, "--output", t),
        (t, "--report", t),
        (t, "--frames-log", c),
        (c, "--output", t),
        (c, "--report", c),
    ] {
        let (code, _, err) = sinkrate(&[
            "record",
            "--replay",
            given,
            "--dir",
            out.to_str().expect("utf8"),
            flag,
            target,
        ]);
        assert_eq!(code, Some(2), "{flag} {target}: {err}");
        assert!(err.contains("that is an input of this run"), "{err}");
    }
    let after = (
        std::fs::read(&trace).expect("read"),
        std::fs::read(&calls).expect("read"),
    );
    assert!(before == after, "the trace changed");
    assert!(common::files_in(&out).is_empty());
}

#[test]
fn a_trace_past_its_bounds_is_refused_in_one_line_before_any_write() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let o = out.to_str().expect("utf8");
    let refused = |trace: &Path, expect: &[&str]| {
        let t0 = std::time::Instant::now();
        let out_run = Command::new(sinkrate_path())
            .args(["record", "--replay"])
            .arg(trace)
            .args(["--dir", o])
            .output()
            .expect("runs");
        let line = common::one_error_line(&out_run, &trace);
        assert!(
            expect.iter().any(|e| line.contains(e)),
            "{}: {line}",
            trace.display()
        );
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            common::files_in(&out).is_empty(),
            "a write for {}",
            trace.display()
        );
    };
    // A write at the last offset: offset + length wraps.
    let wraps = common::hand_sidecar(
        d.path(),
        "wrap.iolog",
        1,
        &[
            &common::traced_write(0, "/rec/a", 0, 4096),
            &common::traced_write(33, "/rec/a", u64::MAX, 4096),
        ],
    );
    refused(&wraps, &["largest file offset"]);
    // A petabyte in one write: never allocated; refused for the memory its capture pool
    // or the room its file would need, with the figures.
    let big = common::hand_sidecar(
        d.path(),
        "big.iolog",
        1,
        &[&common::traced_write(0, "/rec/a", 0, 1 << 50)],
    );
    refused(&big, &["MB free", "capture pools need"]);
    // A sidecar that is a link to /dev/zero: read with a bound, not until memory runs out.
    let zero = d.path().join("zero.iolog");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero.iolog.calls.jsonl")).expect("link");
    refused(&zero, &["longer than 64 KiB"]);
}

#[test]
fn a_write_larger_than_the_replay_buffer_is_written_in_pieces() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    // 40 MiB in one call, over the 16 MiB a replay writer holds.
    let trace = common::hand_sidecar(
        d.path(),
        "big.iolog",
        1,
        &[
            &common::traced_write(0, "/rec/a", 0, 40 << 20),
            &common::traced_write(33, "/rec/a", 40 << 20, 4096),
        ],
    );
    let run = Command::new(sinkrate_path())
        .args(["record", "--keep", "--replay"])
        .arg(&trace)
        .arg("--dir")
        .arg(&out)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr);
    // A verdict (two frames are too few to judge), not an error.
    assert!(
        run.status.code().is_some_and(|c| c != 2) && !err.contains("panicked"),
        "{err}"
    );
    let dirs = common::files_in(&out);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let written = out.join(&dirs[0]).join("a");
    let len = std::fs::metadata(&written).map(|m| m.len()).unwrap_or(0);
    assert_eq!(len, (40 << 20) + 4096, "{err}");
    let _ = std::fs::remove_dir_all(out.join(&dirs[0]));
}

#[test]
fn a_replay_ends_within_a_second_of_an_interrupt_whatever_the_trace_waits_for() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    // 20 frames, then two minutes of nothing before the last one.
    let trace = paced_trace(d.path(), "gap.iolog", 20, 120);
    let child = Command::new(sinkrate_path())
        .args(["record", "--live", "never", "--replay"])
        .arg(&trace)
        .arg("--dir")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    interrupt(&child);
    let t0 = std::time::Instant::now();
    let done = child.wait_with_output().expect("waits");
    assert!(
        t0.elapsed() < std::time::Duration::from_millis(1500),
        "ended {:?} after the interrupt",
        t0.elapsed()
    );
    assert_eq!(
        done.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(
        common::files_in(&out).is_empty(),
        "{:?}",
        common::files_in(&out)
    );
    // A pace that would stretch a trace past days is refused.
    let (code, _, err) = sinkrate(&[
        "record",
        "--replay",
        trace.to_str().expect("utf8"),
        "--dir",
        out.to_str().expect("utf8"),
        "--speed",
        "1e-9x",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--speed 1e-9x: out of range"), "{err}");
}

#[test]
fn a_killed_replays_directory_is_removed_by_the_next_run_and_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let trace = paced_trace(d.path(), "long.iolog", 20, 60);
    // Its own state directory: the killed run's leftovers are this test's to sweep.
    let state = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(sinkrate_path())
        .env("SINKRATE_STATE_DIR", state.path())
        .args(["record", "--live", "never", "--replay"])
        .arg(&trace)
        .arg("--dir")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while common::files_in(&out).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let _ = child.kill();
    let _ = child.wait();
    let left = common::files_in(&out);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("sinkrate-replay-"), "{left:?}");
    // Any later command that writes sweeps it, and says so.
    let swept = Command::new(sinkrate_path())
        .env("SINKRATE_STATE_DIR", state.path())
        .args(["record", "--replay", "/nonexistent.iolog", "--dir"])
        .arg(&out)
        .output()
        .expect("sinkrate runs");
    let err = String::from_utf8_lossy(&swept.stderr).into_owned();
    assert!(
        common::files_in(&out).is_empty(),
        "{:?}\n{err}",
        common::files_in(&out)
    );
    assert!(err.contains(&left[0]), "the sweep names it: {err}");
}

/// The state letter of /proc/PID/stat (R, S, T, t...).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim().chars().next()
}

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Whether `pid` is paused (stopped, traced or not): it writes nothing while so.
fn paused(pid: u32) -> bool {
    matches!(process_state(pid), Some('T' | 't'))
}

#[test]
fn a_captured_recorder_paused_by_its_supervisor_stays_paused() {
    // The captured recorder against the same recorder untraced, side by side: each signal
    // must do to the first what it does to the second. SIGSTOP always pauses; SIGTSTP and
    // SIGTTIN pause unless the process group is orphaned (as under a CI runner without a
    // terminal), where the kernel discards them: then neither pauses.
    let d = tempfile::tempdir().expect("tempdir");
    let script = |log: &Path| {
        format!(
            "i=0; while [ $i -lt 200 ]; do echo $i >> {}; i=$((i+1)); sleep 0.05; done",
            log.display()
        )
    };
    let (log, peer_log) = (d.path().join("frames"), d.path().join("peer"));
    let trace = d.path().join("t.iolog");
    let mut capture = Command::new(sinkrate_path())
        .arg("capture")
        .arg("--output")
        .arg(&trace)
        .args(["--", "sh", "-c", &script(&log)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("capture starts");
    let mut peer = Command::new("sh")
        .args(["-c", &script(&peer_log)])
        .spawn()
        .expect("the untraced peer starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while (lines_in(&log) < 3 || lines_in(&peer_log) < 3) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The recorder: the capture's child.
    let recorder: u32 = std::fs::read_to_string(format!(
        "/proc/{}/task/{}/children",
        capture.id(),
        capture.id()
    ))
    .ok()
    .and_then(|c| c.split_whitespace().next().and_then(|p| p.parse().ok()))
    .expect("the recorder runs under the capture");
    for sig in [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN] {
        for pid in [recorder, peer.id()] {
            // SAFETY: signals processes this test started (one through the capture).
            unsafe { libc::kill(pid as i32, sig) };
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let at = (lines_in(&log), lines_in(&peer_log));
        std::thread::sleep(std::time::Duration::from_millis(700));
        let wrote = (lines_in(&log) > at.0, lines_in(&peer_log) > at.1);
        let states = (process_state(recorder), process_state(peer.id()));
        assert_eq!(
            (paused(recorder), wrote.0),
            (paused(peer.id()), wrote.1),
            "signal {sig}: captured, untraced: states {states:?}, wrote {wrote:?}"
        );
        if sig == libc::SIGSTOP {
            assert!(
                paused(recorder) && !wrote.0,
                "SIGSTOP: {states:?} {wrote:?}"
            );
        }
        for pid in [recorder, peer.id()] {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGCONT) };
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            lines_in(&log) > at.0,
            "signal {sig}: it did not run on at SIGCONT"
        );
    }
    let status = capture.wait().expect("waits");
    let _ = peer.wait();
    assert_eq!(status.code(), Some(0));
    assert_eq!(lines_in(&log), 200);
}

#[test]
fn capture_pid_of_a_paused_recorder_leaves_it_paused_and_lets_go_at_once() {
    let d = tempfile::tempdir().expect("tempdir");
    let log = d.path().join("frames");
    let mut recorder = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt 400 ]; do echo $i >> {}; i=$((i+1)); sleep 0.05; done",
            log.display()
        ))
        .spawn()
        .expect("recorder starts");
    std::thread::sleep(std::time::Duration::from_millis(400));
    // SAFETY: signals this test's own child.
    unsafe { libc::kill(recorder.id() as i32, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let at_pause = lines_in(&log);
    let mut capture = Command::new(sinkrate_path())
        .args(["capture", "--pid", &recorder.id().to_string(), "--output"])
        .arg(d.path().join("t.iolog"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("capture starts");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(lines_in(&log), at_pause, "attaching resumed it");
    // SAFETY: ends the capture this test started.
    unsafe { libc::kill(capture.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    capture.wait().expect("waits");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(
        process_state(recorder.id()),
        Some('T'),
        "let go paused, as it was"
    );
    assert_eq!(lines_in(&log), at_pause);
    let _ = recorder.kill();
    let _ = recorder.wait();
}

#[test]
fn capture_pid_of_a_shell_waiting_with_sigchld_blocked_ends_at_one_signal() {
    let d = tempfile::tempdir().expect("tempdir");
    // bash waits for its foreground child with SIGCHLD blocked: a stop that waited for a
    // signal to reach it waited for the child's end.
    let mut shell = Command::new("bash")
        .args(["-c", "sleep 15; true"])
        .spawn()
        .expect("bash starts");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut capture = Command::new(sinkrate_path())
        .args(["capture", "--pid", &shell.id().to_string(), "--output"])
        .arg(d.path().join("t.iolog"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("capture starts");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // SAFETY: ends the capture this test started.
    unsafe { libc::kill(capture.id() as i32, libc::SIGTERM) };
    let t0 = std::time::Instant::now();
    capture.wait().expect("waits");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t0.elapsed()
    );
    // Running or waiting, not stopped, traced or gone.
    let state = process_state(shell.id());
    assert!(
        matches!(state, Some('S' | 'R' | 'D')),
        "the shell runs on: {state:?}"
    );
    let _ = shell.kill();
    let _ = shell.wait();
}

#[test]
fn a_trace_filesystem_that_fills_never_ends_the_recorder() {
    with_root(
        "a_trace_filesystem_that_fills_never_ends_the_recorder",
        &[],
        || {
            let d = tempfile::tempdir().expect("tempdir");
            let work = d.path().join("work");
            std::fs::create_dir(&work).expect("mkdir");
            let trace_fs = common::MemoryFs::new(&d.path().join("small"), "16k");
            let small = trace_fs.at.clone();
            // 40 files of 50 writes each: far more calls than 16 KiB of trace holds.
            let script = format!(
            "for i in $(seq 1 40); do dd if=/dev/zero of={}/f$i bs=4k count=50 2>/dev/null; done; echo all done",
            work.display()
        );
            for extra in [&[][..], &["--ptrace-only"]] {
                let trace = small.join(format!("t{}.iolog", extra.len()));
                let out = Command::new(sinkrate_path())
                    .arg("capture")
                    .args(extra)
                    .arg("--output")
                    .arg(&trace)
                    .args(["--", "sh", "-c", &script])
                    .output()
                    .expect("capture runs");
                let err = String::from_utf8_lossy(&out.stderr);
                let text = String::from_utf8_lossy(&out.stdout);
                // Every file written whole: the recorder ran to its end.
                for i in 1..=40 {
                    let len = std::fs::metadata(work.join(format!("f{i}")))
                        .map(|m| m.len())
                        .unwrap_or(0);
                    assert_eq!(len, 50 * 4096, "{extra:?} f{i}: {err}");
                }
                assert!(text.contains("all done"), "{extra:?}: {text}");
                // The capture failed, and says where the trace stops.
                assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
                assert!(err.contains("the trace could not be written"), "{err}");
                assert!(
                    err.contains("the recorder ran on to its end (exit 0)"),
                    "{err}"
                );
                // What it holds reads back: every line but a torn last one is a call.
                let sidecar = std::fs::read_to_string(format!("{}.calls.jsonl", trace.display()))
                    .expect("the sidecar is kept");
                assert!(sidecar.lines().count() > 2, "{sidecar}");
                assert!(
                    !sidecar.contains("\"end\""),
                    "no end line: it was cut short"
                );
                for f in std::fs::read_dir(&small).expect("ls").flatten() {
                    let _ = std::fs::remove_file(f.path());
                }
                for i in 1..=40 {
                    let _ = std::fs::remove_file(work.join(format!("f{i}")));
                }
            }
        },
    );
}

/// `sinkrate capture --output TRACE -- COMMAND...` in `dir`, as `Command` runs it.
fn capture_into(dir: &Path, trace: &str, command: &[&str]) -> std::process::Output {
    Command::new(sinkrate_path())
        .current_dir(dir)
        .args(["capture", "--output", trace, "--"])
        .args(command)
        .output()
        .expect("capture runs")
}

/// Each regular file under `dir` with its length, by name.
fn sizes(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .expect("ls")
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().map_or(0, |m| m.len()),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn writes_made_without_write_are_traced_and_replayed_as_the_recorder_made_them() {
    let d = tempfile::tempdir().expect("tempdir");
    let rec = d.path().join("rec");
    let out = d.path().join("out");
    std::fs::create_dir(&rec).expect("mkdir");
    std::fs::create_dir(&out).expect("mkdir");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/recorders/copies_and_flags.py");
    let cap = capture_into(
        d.path(),
        "t.iolog",
        &[
            "python3",
            script.to_str().expect("utf8"),
            rec.to_str().expect("utf8"),
        ],
    );
    let err = String::from_utf8_lossy(&cap.stderr);
    assert_eq!(cap.status.code(), Some(0), "{err}");
    let sidecar = std::fs::read_to_string(d.path().join("t.iolog.calls.jsonl")).expect("sidecar");
    for call in [
        "\"sendfile\"",
        "\"copy_file_range\"",
        "\"splice\"",
        "\"set_flags\"",
    ] {
        assert!(sidecar.contains(call), "{call} not traced:\n{sidecar}");
    }
    assert!(
        sidecar.contains("\"call\":\"pwritev2\",\"flags\":2"),
        "{sidecar}"
    );
    assert!(
        sidecar.contains("\"op\":\"rename\"") && sidecar.contains("\"flags\":2}"),
        "{sidecar}"
    );
    // The replay makes the same files, byte counts and names as the recorder did (the
    // exchange swapped x and y: 3000 bytes at x, 1000 at y).
    let replay = Command::new(sinkrate_path())
        .current_dir(d.path())
        .args(["record", "--keep", "--replay", "t.iolog", "--dir"])
        .arg(&out)
        .output()
        .expect("replay runs");
    let rerr = String::from_utf8_lossy(&replay.stderr);
    assert!(replay.status.code().is_some_and(|c| c != 2), "{rerr}");
    let runs = common::files_in(&out);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let replayed = sizes(&out.join(&runs[0]));
    let original = sizes(&rec);
    assert_eq!(replayed, original, "{rerr}");
    assert!(
        original.contains(&("x.bin".to_string(), 3000)),
        "{original:?}"
    );
    let _ = std::fs::remove_dir_all(out.join(&runs[0]));
}

/// The unseen lines of a trace's sidecar.
fn unseen_lines(sidecar: &Path) -> Vec<String> {
    std::fs::read_to_string(sidecar)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["unseen"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn what_capture_cannot_see_is_named_in_its_summary_its_trace_and_every_replay() {
    let d = tempfile::tempdir().expect("tempdir");
    // Linux native AIO (fio's libaio engine): named.
    if common::have("fio") {
        let data = d.path().join("aio.dat");
        let cap = capture_into(
            d.path(),
            "aio.iolog",
            &[
                "fio",
                "--name=a",
                "--ioengine=libaio",
                "--direct=1",
                "--size=4m",
                "--rw=write",
                "--output=/dev/null",
                &format!("--filename={}", data.display()),
            ],
        );
        let text = String::from_utf8_lossy(&cap.stdout);
        assert!(
            text.contains("not seen: the recorder submitted Linux native AIO"),
            "{text}"
        );
        let unseen = unseen_lines(&d.path().join("aio.iolog.calls.jsonl"));
        assert!(unseen.iter().any(|u| u.contains("io_submit")), "{unseen:?}");
        // Its replay says what the trace lacks: in its verdict, or in its refusal when the
        // trace holds no write at all (fio's layout of the file may be all it saw).
        let replay = Command::new(sinkrate_path())
            .args(["record", "--output-format", "json", "--replay"])
            .arg(d.path().join("aio.iolog"))
            .arg("--dir")
            .arg(d.path())
            .output()
            .expect("replay runs");
        let err = String::from_utf8_lossy(&replay.stderr);
        if replay.status.code() == Some(2) {
            assert!(
                err.contains("the capture said: the recorder submitted Linux native AIO"),
                "{err}"
            );
        } else {
            let report = common::json_after_text(&replay.stdout);
            let verdict = report["verdict_text"].as_str().unwrap_or_default();
            assert!(
                verdict.contains("this trace misses part of the recorder's workload (the recorder submitted Linux native AIO"),
                "{report}"
            );
        }
    } else {
        common::skip("what_capture_cannot_see_...: AIO", "needs fio");
    }
    // A replay of a trace whose capture named what it missed: the verdict says so.
    let mut calls: Vec<String> = (0..20)
        .map(|k| common::traced_write(k * 33, "/rec/a.mp4", k << 16, 1 << 16))
        .collect();
    calls.insert(
        3,
        r#"{"unseen":"the recorder wrote through sendfile"}"#.to_string(),
    );
    let refs: Vec<&str> = calls.iter().map(|c| c.as_str()).collect();
    let trace = common::hand_sidecar(d.path(), "part.iolog", 2, &refs);
    let out = d.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let run = Command::new(sinkrate_path())
        .args(["record", "--output-format", "json", "--replay"])
        .arg(&trace)
        .arg("--dir")
        .arg(&out)
        .output()
        .expect("replay runs");
    let report = common::json_after_text(&run.stdout);
    let verdict = report["verdict_text"].as_str().unwrap_or_default();
    assert!(
        verdict.contains("this trace misses part of the recorder's workload (the recorder wrote through sendfile)"),
        "{report}"
    );
    let ids: Vec<&str> = report["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|w| w["id"].as_str()).collect())
        .unwrap_or_default();
    assert!(ids.contains(&"replay.trace_incomplete"), "{ids:?}");
    // The 32-bit ABI from a 64-bit program (int 0x80): named, never "no file was written".
    #[cfg(target_arch = "x86_64")]
    if common::have("gcc") {
        let src = d.path().join("i80.c");
        let out_file = d.path().join("i80.out");
        std::fs::write(
            &src,
            format!(
                "static char msg[40960];\nint main(void) {{\n for (int i = 0; i < (int)sizeof msg; i++) msg[i] = 'i';\n long ret, fd;\n static const char path[] = \"{}\";\n __asm__ volatile (\"int $0x80\" : \"=a\"(ret) : \"a\"(5), \"b\"(path), \"c\"(01101), \"d\"(0644) : \"memory\");\n fd = ret;\n __asm__ volatile (\"int $0x80\" : \"=a\"(ret) : \"a\"(4), \"b\"(fd), \"c\"(msg), \"d\"(sizeof msg) : \"memory\");\n return ret == (long)sizeof msg ? 0 : 1;\n}}\n",
                out_file.display()
            ),
        )
        .expect("source");
        let bin = d.path().join("i80");
        common::run(
            "gcc",
            &[
                "-O1",
                "-static",
                "-no-pie",
                "-o",
                bin.to_str().expect("utf8"),
                src.to_str().expect("utf8"),
            ],
        );
        let cap = capture_into(d.path(), "i80.iolog", &[bin.to_str().expect("utf8")]);
        let text = String::from_utf8_lossy(&cap.stdout);
        assert_eq!(cap.status.code(), Some(0), "{text}");
        assert_eq!(
            std::fs::metadata(&out_file).map(|m| m.len()).ok(),
            Some(40960)
        );
        assert!(!text.contains("no file was written"), "{text}");
        assert!(
            text.contains("not seen: the recorder wrote through the 32-bit system-call ABI"),
            "{text}"
        );
        let unseen = unseen_lines(&d.path().join("i80.iolog.calls.jsonl"));
        assert!(unseen.iter().any(|u| u.contains("32-bit")), "{unseen:?}");
    }
}

#[test]
fn a_recorder_that_is_not_dumpable_is_named_when_capture_is_not_root() {
    with_root(
        "a_recorder_that_is_not_dumpable_is_named_when_capture_is_not_root",
        &["setpriv", "python3"],
        || {
            let d = tempfile::tempdir().expect("tempdir");
            // A directory the unprivileged user may write in.
            std::fs::set_permissions(
                d.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .expect("chmod");
            let script = d.path().join("nd.py");
            std::fs::write(
                &script,
                "import ctypes, os, sys\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\nfd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\nfor i in range(10):\n    os.write(fd, b'n' * 4096)\nos.close(fd)\n",
            )
            .expect("script");
            std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o644))
                .expect("chmod");
            let trace = d.path().join("nd.iolog");
            let out = Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(sinkrate_path())
                .arg("capture")
                .arg("--output")
                .arg(&trace)
                .args(["--", "python3"])
                .arg(&script)
                .arg(d.path().join("nd.out"))
                .output()
                .expect("capture runs");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains("not seen: the recorder is not dumpable"),
                "{text}"
            );
            let unseen = unseen_lines(&d.path().join("nd.iolog.calls.jsonl"));
            assert!(
                unseen.iter().any(|u| u.contains("not dumpable")),
                "{unseen:?}"
            );
        },
    );
}

#[test]
fn a_buffered_recorders_replay_reaches_the_card_before_it_is_judged() {
    with_root(
        "a_buffered_recorders_replay_reaches_the_card_before_it_is_judged",
        EMULATE_TOOLS,
        || {
            // A wear limit far off: the card then counts the bytes it takes.
            let card = common::SlowDev::new(&[
                "--write-rate",
                "20M",
                "--size",
                "256M",
                "--wear-out",
                "1G:read-only",
            ]);
            let d = tempfile::tempdir().expect("tempdir");
            // A buffered recorder that never syncs: 90 frames of 256 KiB at 30 fps.
            let mut calls: Vec<String> = (0..90)
                .map(|k| common::traced_write(k * 33, "/rec/a.mp4", k << 18, 1 << 18))
                .collect();
            calls.push(
                r#"{"end":{"end_ns":3100000000,"exit_code":0,"signal":null,"interrupted":false}}"#
                    .into(),
            );
            let refs: Vec<&str> = calls.iter().map(|c| c.as_str()).collect();
            let trace = common::hand_sidecar(d.path(), "buf.iolog", 2, &refs);
            let before = common::card_took(&card);
            let run = Command::new(sinkrate_path())
                .args(["record", "--output-format", "json", "--replay"])
                .arg(&trace)
                .arg("--dir")
                .arg(&card.mountpoint)
                .output()
                .expect("replay runs");
            let err = String::from_utf8_lossy(&run.stderr);
            let report = common::json_after_text(&run.stdout);
            // What the replay wrote: every frame the recorder wrote, less those a loaded
            // machine made it drop (a dropped frame's writes are skipped, as the recorder's).
            let written = report["totals"]["bytes_written"].as_u64().unwrap_or(0);
            assert!(written > 0, "{report}");
            // The card's own count: every byte the replay wrote reached it.
            let took = common::card_took(&card) - before;
            assert!(
                took >= written,
                "the card took {took} of the {written} bytes written\n{err}"
            );
            let device = report["totals"]["device_bytes_written"]
                .as_u64()
                .unwrap_or(0);
            assert!(
                device >= written * 9 / 10,
                "device {device} of {written}: {report}"
            );
            assert!(
                report["totals"]["final_flush_s"].as_f64().unwrap_or(0.0) > 0.0,
                "{report}"
            );
            // Accounted as record accounts the same stream on the same card (its peer here):
            // the device's bytes against the bytes written, each run its own.
            let peer = Command::new(sinkrate_path())
                .args(["record", "--output-format", "json", "--frame-size", "256K"])
                .args(["--fps", "30", "--duration", "3s", "--dir"])
                .arg(&card.mountpoint)
                .output()
                .expect("record runs");
            let peer = common::json_after_text(&peer.stdout);
            // (Their verdicts may differ on a busy machine, where another writer's dirty data
            // can start the card's writeback inside one window and not the other: the bytes
            // that reached the card are what both must agree on.)
            assert_ne!(report["verdict"], "failed", "{report}");
            let peer_device = peer["totals"]["device_bytes_written"].as_u64().unwrap_or(0);
            let peer_written = peer["totals"]["bytes_written"].as_u64().unwrap_or(0);
            assert!(peer_written > 0, "{peer}");
            let (ours, theirs) = (
                device as f64 / written as f64,
                peer_device as f64 / peer_written as f64,
            );
            assert!(
                (ours / theirs - 1.0).abs() <= 0.2,
                "device bytes per byte written: replay {ours:.3}, record {theirs:.3}"
            );
        },
    );
}

#[test]
fn a_killed_runs_file_is_removed_after_a_reboot_even_when_its_pid_lives_again() {
    // The journal of what a run made survives a reboot (its own state directory here); a
    // reboot is played by giving the killed run's journal another boot's mark and the pid
    // of a process that lives (pid 1): the next run removes the file all the same.
    let state = tempfile::tempdir().expect("tempdir");
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(d.path().join("rec")).expect("mkdir");
    let leftover = d.path().join("rec/sinkrate-record-cam0.bin");
    kill_once_made(
        Command::new(sinkrate_path())
            .current_dir(d.path())
            .env("SINKRATE_STATE_DIR", state.path())
            .args([
                "record",
                "--dir",
                "rec",
                "--duration",
                "20s",
                "--live",
                "never",
            ]),
        &leftover,
    );
    assert!(leftover.exists());
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let journals = state.path().join(format!("owned-{uid}"));
    let journal = std::fs::read_dir(&journals)
        .expect("the journal directory")
        .flatten()
        .find(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .expect("the killed run's journal")
        .path();
    let bytes = std::fs::read(&journal).expect("journal");
    assert!(
        bytes.starts_with(b"B"),
        "the journal opens with its boot's mark"
    );
    let end = bytes.iter().position(|b| *b == 0).expect("a whole record");
    let mut rebooted = b"Bnot-this-boot".to_vec();
    rebooted.extend_from_slice(&bytes[end..]);
    std::fs::remove_file(&journal).expect("rm");
    std::fs::write(journals.join("1"), &rebooted).expect("the journal as after a reboot");
    let out = Command::new(sinkrate_path())
        .current_dir(d.path())
        .env("SINKRATE_STATE_DIR", state.path())
        .args([
            "record",
            "--dir",
            "rec",
            "--duration",
            "1s",
            "--write-mode",
            "null",
        ])
        .args(["--live", "never"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!leftover.exists(), "the killed run's file stays: {err}");
    assert!(err.contains("sinkrate-record-cam0.bin"), "named: {err}");
}

#[test]
fn a_check_without_its_sustained_write_says_what_its_verdict_rests_on() {
    // A file of the sustained write's name that is not this run's (a user's, or a killed
    // run's that could not be proven its own): the write is skipped, and said.
    let d = tempfile::tempdir().expect("tempdir");
    let theirs = d.path().join("sustained.0.0");
    std::fs::write(&theirs, b"not sinkrate's").expect("write");
    let report = d.path().join("r.json");
    let out = Command::new(sinkrate_path())
        .arg("check")
        .arg(d.path())
        .args([
            "--quick",
            "--progress",
            "never",
            "--color",
            "never",
            "--output",
        ])
        .arg(&report)
        .output()
        .expect("check runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(std::fs::read(&theirs).expect("kept"), b"not sinkrate's");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert!(run["headroom"].is_null(), "{run}");
    let ids: Vec<&str> = run["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|w| w["id"].as_str()).collect())
        .unwrap_or_default();
    assert!(ids.contains(&"check.sustained_not_measured"), "{ids:?}");
    assert!(!text.contains("x headroom"), "{text}");
    if run["verdict"] == "keeps_up" {
        assert!(
            text.contains("KEEPS UP in the recording test (headroom not measured)"),
            "{text}"
        );
    }
    assert!(
        text.contains("the verdict rests on the recording test alone"),
        "{text}"
    );
}

#[test]
fn an_endurance_bitrate_without_its_unit_is_refused_not_read_as_bits() {
    let d = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = sinkrate(&[
        "record",
        "--dir",
        d.path().to_str().expect("utf8"),
        "--duration",
        "1s",
        "--endurance",
        "20000h@26",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs its unit (26M for 26 Mbit/s)"), "{err}");
    assert!(common::files_in(d.path()).is_empty());
}

#[test]
fn a_card_gone_read_only_is_named_as_such() {
    with_root(
        "a_card_gone_read_only_is_named_as_such",
        &["mkfs.ext4"],
        || {
            let fs = common::ScratchFs::new("64M", "ext4", "");
            let dir = fs.mountpoint.path().join("rec");
            std::fs::create_dir(&dir).expect("mkdir");
            // What a recording left, as a worn card keeps it once the kernel made it read-only.
            std::fs::write(dir.join("sinkrate-record-cam0.bin"), b"x").expect("write");
            common::run(
                "mount",
                &[
                    "-o",
                    "remount,ro",
                    fs.mountpoint.path().to_str().expect("utf8"),
                ],
            );
            let (code, _, err) = sinkrate(&[
                "record",
                "--dir",
                dir.to_str().expect("utf8"),
                "--duration",
                "1s",
            ]);
            common::run(
                "mount",
                &[
                    "-o",
                    "remount,rw",
                    fs.mountpoint.path().to_str().expect("utf8"),
                ],
            );
            assert_eq!(code, Some(2), "{err}");
            assert!(
                err.contains("mounted read-only now: a worn-out card"),
                "{err}"
            );
            assert!(!err.contains("kept with --keep"), "{err}");
        },
    );
}

#[test]
fn a_signal_to_capture_alone_waits_for_the_recorder_and_exits_130() {
    let d = tempfile::tempdir().expect("tempdir");
    let (log, script) = logging_recorder(d.path(), 10, "0.1");
    let child = Command::new(sinkrate_path())
        .args(["capture", "--output"])
        .arg(d.path().join("t.iolog"))
        .args(["--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("capture starts");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signals the capture this test started, not its recorder.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("waits");
    let log_text = recorder_log(&log);
    // The recorder, which the signal did not reach, ran to its end untouched.
    assert!(log_text.contains("frame 9\ndone"), "{log_text}");
    assert!(!log_text.contains("got "), "{log_text}");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
