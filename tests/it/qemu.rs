//! The ARM binaries (aarch64 musl and armv7 hard-float, built by `scripts/cross.sh
//! --test-build`) run under qemu-user: the same answers as the host binary where the answer
//! does not depend on the machine, real I/O where it does, and one clear line for what the
//! emulator lacks (io_uring).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// One ARM binary and the qemu-user program that runs it.
pub(crate) struct ArmBinary {
    pub(crate) triple: String,
    pub(crate) path: PathBuf,
    runner: String,
}

impl ArmBinary {
    pub(crate) fn command(&self) -> Command {
        let mut c = Command::new(&self.runner);
        c.arg(&self.path);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(Path::new("."), args)
    }

    fn run_in(&self, dir: &Path, args: &[&str]) -> Output {
        let out = self
            .command()
            .current_dir(dir)
            .args(args)
            .output()
            .expect("qemu-user runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "{} {args:?}: {stderr}",
            self.triple
        );
        out
    }
}

/// The binaries from `target/cross-test-bins.txt`, or None (and a recorded SKIP) when they
/// were not built: the test script builds them, so CI never skips.
pub(crate) fn arm_binaries(test: &str) -> Option<Vec<ArmBinary>> {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cross-test-bins.txt");
    let Ok(text) = std::fs::read_to_string(&list) else {
        common::skip(
            test,
            "no ARM test binaries (bash scripts/cross.sh --test-build builds them; scripts/test.sh does)",
        );
        return None;
    };
    let mut bins = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [triple, path, runner] = fields[..] else {
            panic!("{}: malformed line '{line}'", list.display());
        };
        if !common::have(runner) {
            common::skip(
                test,
                &format!("needs '{runner}' (scripts/install-deps.sh --cross installs qemu-user)"),
            );
            return None;
        }
        bins.push(ArmBinary {
            triple: triple.to_string(),
            path: PathBuf::from(path),
            runner: runner.to_string(),
        });
    }
    assert!(
        bins.iter().any(|b| b.triple.starts_with("aarch64"))
            && bins.iter().any(|b| b.triple.starts_with("armv7")),
        "{} should list an aarch64 and an armv7 binary: {text}",
        list.display()
    );
    Some(bins)
}

fn host(args: &[&str]) -> Output {
    Command::new(common::sinkrate_path())
        .args(args)
        .output()
        .expect("sinkrate runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn sysroot_trees() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysroot");
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixture trees")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("proc").is_dir())
        .collect();
    trees.sort();
    trees
}

/// The mount points of a fixture tree that hold storage (not /proc, /sys, /dev, tmpfs...).
fn storage_mounts(tree: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(tree.join("proc/self/mountinfo")).expect("mountinfo");
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mount_point = left.split_whitespace().nth(4)?;
            let fs_type = right.split_whitespace().next()?;
            let pseudo = [
                "proc", "sysfs", "devtmpfs", "tmpfs", "cgroup", "cgroup2", "devpts", "debugfs",
            ];
            (!pseudo.contains(&fs_type)).then(|| mount_point.to_string())
        })
        .collect()
}

#[test]
fn version_names_the_target_and_that_it_is_static() {
    let Some(bins) = arm_binaries("version_names_the_target_and_that_it_is_static") else {
        return;
    };
    for b in &bins {
        let out = b.run(&["--version"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("target: {}", b.triple)),
            "{}: {text}",
            b.triple
        );
        assert!(text.contains("static"), "{}: {text}", b.triple);
        let help = b.run(&["--help"]);
        assert!(help.status.success());
        assert_eq!(help.stdout, host(&["--help"]).stdout, "{}", b.triple);
    }
}

/// Every fixture tree, every storage mount in it: the same audit, finding for finding, as the
/// host binary gives (the answer depends on the tree, not on the machine reading it).
#[test]
fn audit_sysroot_matches_the_host_on_every_fixture_tree() {
    let Some(bins) = arm_binaries("audit_sysroot_matches_the_host_on_every_fixture_tree") else {
        return;
    };
    let mut audited = 0;
    for tree in sysroot_trees() {
        let root = tree.to_str().expect("utf8 path");
        for mount in storage_mounts(&tree) {
            let args = [
                "audit",
                &mount,
                "--sysroot",
                root,
                "--output-format",
                "json",
            ];
            let expected = host(&args);
            let mut want = json(&expected);
            want["started_at"] = serde_json::Value::Null;
            want["timestamp_ms"] = serde_json::Value::Null;
            for b in &bins {
                let out = b.run(&args);
                assert_eq!(
                    out.status.code(),
                    expected.status.code(),
                    "{} {mount} in {root}",
                    b.triple
                );
                let mut got = json(&out);
                got["started_at"] = serde_json::Value::Null;
                got["timestamp_ms"] = serde_json::Value::Null;
                assert!(
                    !want["findings"].as_array().expect("findings").is_empty(),
                    "{mount} in {root}: no findings at all"
                );
                assert_eq!(got, want, "{} {mount} in {root}", b.triple);
            }
            audited += 1;
        }
    }
    assert!(audited >= 8, "only {audited} mounts audited");
}

#[test]
fn bench_null_and_psync_do_real_work() {
    let _beside_no_recording = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
    let Some(bins) = arm_binaries("bench_null_and_psync_do_real_work") else {
        return;
    };
    for b in &bins {
        let out = b.run(&[
            "bench",
            "--eta=never",
            "--name=n",
            "--ioengine=null",
            "--rw=write",
            "--bs=64k",
            "--size=256m",
            "--output-format=json",
        ]);
        assert!(out.status.success(), "{}", b.triple);
        let v = json(&out);
        assert_eq!(v["jobs"][0]["write"]["io_bytes"], 256 << 20, "{}", b.triple);

        // psync on a temporary file: the file's own bytes are the independent check.
        let d = tempfile::tempdir().expect("tempdir");
        let file = d.path().join("f");
        let file_arg = format!("--filename={}", file.display());
        let out = b.run(&[
            "bench",
            "--eta=never",
            "--name=p",
            "--ioengine=psync",
            "--rw=write",
            "--bs=128k",
            "--size=8m",
            "--end_fsync=1",
            "--keep",
            &file_arg,
            "--output-format=json",
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            b.triple,
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        assert_eq!(v["jobs"][0]["write"]["io_bytes"], 8 << 20, "{}", b.triple);
        assert_eq!(v["jobs"][0]["write"]["total_ios"], 64, "{}", b.triple);
        let on_disk = std::fs::metadata(&file).expect("the job's file").len();
        assert_eq!(on_disk, 8 << 20, "{}", b.triple);
    }
}

/// io_uring is absent under qemu-user (as on kernels before 5.1): the job is refused before
/// any file is made, with the reason and what to use instead. Should the emulator one day
/// carry io_uring, the job must then run for real.
#[test]
fn io_uring_job_is_refused_with_the_reason_or_runs() {
    let Some(bins) = arm_binaries("io_uring_job_is_refused_with_the_reason_or_runs") else {
        return;
    };
    for b in &bins {
        for engine in ["io_uring", "libaio"] {
            let d = tempfile::tempdir().expect("tempdir");
            let file = d.path().join("u");
            let file_arg = format!("--filename={}", file.display());
            let engine_arg = format!("--ioengine={engine}");
            let out = b.run(&[
                "bench",
                "--eta=never",
                "--name=u",
                &engine_arg,
                "--iodepth=4",
                "--rw=write",
                "--bs=64k",
                "--size=4m",
                &file_arg,
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                assert_eq!(std::fs::metadata(&file).expect("file").len(), 4 << 20);
                continue;
            }
            assert_eq!(
                out.status.code(),
                Some(2),
                "{} {engine}: {stderr}",
                b.triple
            );
            assert_eq!(stderr.lines().count(), 1, "{} {engine}: {stderr}", b.triple);
            assert!(
                stderr.contains(&format!("ioengine={engine} runs on io_uring"))
                    && stderr.contains("--ioengine=psync"),
                "{} {engine}: {stderr}",
                b.triple
            );
            assert!(!file.exists(), "{} {engine}: file made", b.triple);
        }
        let d = tempfile::tempdir().expect("tempdir");
        let dir = d.path().to_str().expect("utf8");
        let out = b.run(&[
            "record",
            "--dir",
            dir,
            "--duration",
            "1s",
            "--write-mode",
            "uring",
        ]);
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}: {stderr}", b.triple);
            assert!(
                stderr.contains("--write-mode uring needs io_uring"),
                "{}: {stderr}",
                b.triple
            );
            assert!(common::files_in(d.path()).is_empty());
        }
    }
}

/// A recording with no I/O and a buffered one on a temporary directory: every frame offered
/// is written, and the buffered files hold exactly the bytes the run reports.
/// Held by the recording test, and by the tests that load the emulator most beside it: a
/// recorder under emulation on two shared cores drops frames to CPU starvation, which is
/// not what it tests.
static RECORDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn record_null_and_buffered() {
    let Some(bins) = arm_binaries("record_null_and_buffered") else {
        return;
    };
    let _alone = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
    for b in &bins {
        for mode in ["null", "buffered"] {
            let d = tempfile::tempdir().expect("tempdir");
            let dir = d.path().to_str().expect("utf8");
            let out = b.run(&[
                "record",
                "--dir",
                dir,
                "--duration",
                "2s",
                "--write-mode",
                mode,
                // An unoptimised binary under emulation starts its writers late (100 ms and
                // more while other tests run): a deeper pool keeps that from costing frames,
                // which is not what this test is about.
                "--buffers",
                "16",
                "--keep",
                "--output-format",
                "json",
            ]);
            let v = json(&out);
            // Whether an emulated writer keeps real time depends on the host's spare CPU (a
            // busy core starts it half a second late): bench/qemu-record prints that figure.
            // What holds on any machine: a verdict on the whole recording (falling behind
            // too: a busy CI run's 2 s saw the emulated writer's device drain less than the
            // streams made), every frame offered counted once as written or dropped, and the
            // bytes on disk.
            assert!(
                matches!(
                    v["verdict"].as_str(),
                    Some("keeps_up" | "falling_behind" | "drops")
                ),
                "{} {mode}: {v}",
                b.triple
            );
            let streams = v["streams"].as_array().expect("streams");
            assert_eq!(streams.len(), 2);
            let mut written_bytes = 0;
            for s in streams {
                let count = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k}: {s}"));
                assert_eq!(
                    count("frames_offered"),
                    60,
                    "{} {mode}: 2 s at 30 fps",
                    b.triple
                );
                assert_eq!(
                    count("frames_written") + count("frames_dropped"),
                    count("frames_offered"),
                    "{} {mode}: {s}",
                    b.triple
                );
                written_bytes += count("bytes_written");
            }
            let on_disk: u64 = std::fs::read_dir(d.path())
                .expect("dir")
                .flatten()
                .map(|e| e.metadata().expect("meta").len())
                .sum();
            if mode == "null" {
                assert_eq!(on_disk, 0, "{}: null mode wrote files", b.triple);
            } else {
                assert!(written_bytes > 0);
                assert_eq!(on_disk, written_bytes, "{} buffered", b.triple);
            }
        }
    }
}

/// `bench --parse-only` on every fio example: the same verdict and the same words as on the
/// host, file by file.
#[test]
fn parse_only_on_the_fio_examples_matches_the_host() {
    let _beside_no_recording = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
    let corpus = match std::env::var_os("SINKRATE_FIO_EXAMPLES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fio-examples"),
    };
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        common::skip(
            "parse_only_on_the_fio_examples_matches_the_host",
            &format!(
                "{} is not there (set SINKRATE_FIO_EXAMPLES)",
                corpus.display()
            ),
        );
        return;
    };
    let Some(bins) = arm_binaries("parse_only_on_the_fio_examples_matches_the_host") else {
        return;
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    assert!(files.len() > 50);
    for f in &files {
        let path = f.to_str().expect("utf8");
        let args = ["bench", "--parse-only", path];
        let want = host(&args);
        for b in &bins {
            let got = b.run(&args);
            assert_eq!(got.status.code(), want.status.code(), "{} {path}", b.triple);
            assert_eq!(
                String::from_utf8_lossy(&got.stdout),
                String::from_utf8_lossy(&want.stdout),
                "{} {path}",
                b.triple
            );
            assert_eq!(
                String::from_utf8_lossy(&got.stderr),
                String::from_utf8_lossy(&want.stderr),
                "{} {path}",
                b.triple
            );
        }
    }
}

/// `watch` for a few samples: a summary with the samples it took, from the host's /proc as
/// the emulated program sees it.
#[test]
fn watch_takes_samples() {
    let Some(bins) = arm_binaries("watch_takes_samples") else {
        return;
    };
    for b in &bins {
        let started = std::time::Instant::now();
        let out = b.run(&[
            "watch",
            "--interval",
            "100ms",
            "--duration",
            "1s",
            "--output-format",
            "json",
        ]);
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(
            out.status.success(),
            "{}: {}",
            b.triple,
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        let samples = v["timeline"].as_array().map(Vec::len).unwrap_or(0);
        assert!(samples >= 5, "{}: {samples} samples: {v}", b.triple);
    }
}

/// Bad input: one line, exit 2, on ARM as on the host.
#[test]
fn bad_input_is_one_line() {
    let Some(bins) = arm_binaries("bad_input_is_one_line") else {
        return;
    };
    let cases: [&[&str]; 4] = [
        &["bench", "--name=x", "--bs=12q"],
        &["record", "--duration", "soon"],
        &["audit", "relative/path", "--sysroot", "/nonexistent"],
        &["frobnicate"],
    ];
    for args in cases {
        let want = host(args);
        assert_eq!(want.status.code(), Some(2), "{args:?}");
        for b in &bins {
            let got = b.run(args);
            assert_eq!(got.status.code(), Some(2), "{} {args:?}", b.triple);
            let stderr = String::from_utf8_lossy(&got.stderr);
            assert_eq!(stderr.lines().count(), 1, "{} {args:?}: {stderr}", b.triple);
            assert_eq!(got.stderr, want.stderr, "{} {args:?}", b.triple);
        }
    }
}

/// A program for the interposer to run in: an open, a write, a writev and an fsync of its
/// file, and a write that fails with EBADF (errno must be the program's to read).
const INTERPOSED_PROGRAM: &str = r#"
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "hello", 5) != 5) return 1;
    struct iovec v[2] = {{"ab", 2}, {"cde", 3}};
    if (writev(fd, v, 2) != 5) return 2;
    if (fsync(fd) != 0) return 3;
    if (write(-1, "x", 1) != -1 || errno != EBADF) return 4;
    return close(fd) == 0 ? 0 : 5;
}
"#;

/// The capture's interposer as built for each board (crates/capture/build.rs, with the ARM
/// test binaries), loaded into a program built by Debian's cross gcc and run under
/// qemu-user: it passes the calls through with their results and errno, and its records
/// read back with the host's reader (the layout is the same on every board). qemu-user
/// cannot run ptrace, so the capture itself is not run here; the filter's mark is the
/// filter's unit tests' to check.
#[test]
fn the_interposer_for_each_board_reports_writes_through_its_pipe() {
    use sinkrate_capture::preload::{Kind, Record, RECORD_LEN};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let test = "the_interposer_for_each_board_reports_writes_through_its_pipe";
    let Some(bins) = arm_binaries(test) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let source = work.path().join("w.c");
    std::fs::write(&source, INTERPOSED_PROGRAM).expect("source");
    for bin in &bins {
        let (gcc, sysroot) = if bin.triple.starts_with("aarch64") {
            ("aarch64-linux-gnu-gcc", "/usr/aarch64-linux-gnu")
        } else {
            ("arm-linux-gnueabihf-gcc", "/usr/arm-linux-gnueabihf")
        };
        // The interposer the board's build embedded: beside its build's output.
        let builds = bin.path.parent().expect("debug dir").join("build");
        let interposer = std::fs::read_dir(&builds)
            .expect("build dir")
            .filter_map(|e| {
                let p = e.ok()?.path().join("out/interpose.so");
                let made = std::fs::metadata(&p).ok()?.modified().ok()?;
                Some((made, p))
            })
            .max()
            .map(|(_, p)| p)
            .unwrap_or_else(|| panic!("no interposer under {}", builds.display()));
        let program = work.path().join(format!("w-{}", bin.triple));
        let built = Command::new(gcc)
            .arg("-o")
            .arg(&program)
            .arg(&source)
            .status()
            .expect("cross gcc runs");
        assert!(built.success(), "{gcc}");
        let out = work.path().join(format!("out-{}", bin.triple));
        let run = |channel: bool| -> (Option<i32>, Vec<u8>) {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills the two descriptors it is given.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: descriptors just made, owned here alone.
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let link =
                std::fs::read_link(format!("/proc/self/fd/{}", read.as_raw_fd())).expect("pipe");
            let mut cmd = Command::new(&bin.runner);
            cmd.arg("-L")
                .arg(sysroot)
                .arg("-E")
                .arg(format!("LD_PRELOAD={}", interposer.display()));
            if channel {
                cmd.arg("-E")
                    .arg(format!("SINKRATE_CAPTURE_CHANNEL=200:{}", link.display()));
            }
            cmd.arg(&program).arg(&out);
            let w = write.as_raw_fd();
            // SAFETY: dup2 in the child before exec, on a descriptor it inherited.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::dup2(w, 200) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let status = cmd.status().expect("qemu-user runs");
            drop(write);
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut bytes)
                .expect("records");
            (status.code(), bytes)
        };
        let (code, bytes) = run(true);
        assert_eq!(
            code,
            Some(0),
            "{}: the program's calls and errno",
            bin.triple
        );
        assert_eq!(std::fs::read(&out).expect("out"), b"helloabcde");
        assert_eq!(bytes.len() % RECORD_LEN, 0, "{}", bin.triple);
        let records: Vec<Record> = bytes
            .chunks_exact(RECORD_LEN)
            .map(|c| Record::parse(c).expect("a record"))
            .collect();
        let seen: Vec<(Kind, i64, Option<u64>)> =
            records.iter().map(|r| (r.kind, r.ret, r.offset)).collect();
        assert_eq!(
            seen,
            [
                (Kind::Write, 5, Some(0)),
                (Kind::Writev, 5, Some(5)),
                (Kind::Fsync, 0, None)
            ],
            "{}",
            bin.triple
        );
        assert!(records
            .iter()
            .all(|r| r.end_ns >= r.start_ns && r.start_ns > 0 && r.fd == 3));
        // Without a channel it only passes the calls through.
        let (code, bytes) = run(false);
        assert_eq!((code, bytes.len()), (Some(0), 0), "{}", bin.triple);
    }
}

/// The board binaries read the kernel's events as the host's does: each, under qemu-user on
/// this kernel's tracefs, names a writer throttled by a card's per-device dirty limit, with
/// the card's bdi as evidence. The armv7 binary is a 32-bit program reading a 64-bit
/// kernel's ring buffer (the page layout comes from the kernel's header_page, not from the
/// program's own word size).
#[test]
fn the_board_binaries_explain_a_throttled_writer_from_the_kernel_s_events() {
    let test = "qemu::the_board_binaries_explain_a_throttled_writer_from_the_kernel_s_events";
    let Some(bins) = arm_binaries(test) else {
        return;
    };
    common::with_root(test, &[], || {
        let _alone = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        for b in &bins {
            let card = common::SlowDev::new(&["--write-rate", "10MB", "--size", "1G"]);
            let (bdi, _) = crate::causes::dev_of(&card.device_name());
            let _limit = crate::causes::per_device_limit(&bdi);
            let run = crate::causes::record_by(
                b.command(),
                card.path(),
                &[
                    "--bitrate",
                    "120M",
                    "--write-mode",
                    "buffered",
                    "--buffers",
                    "16",
                    "--duration",
                    "5s",
                ],
            );
            crate::causes::parts_add_up(&run);
            assert_eq!(
                crate::causes::largest_cause(&run),
                "throttled",
                "{}: {}",
                b.triple,
                run["kernel"]
            );
            let throttled_on_the_card = run["stalls"]
                .as_array()
                .expect("stalls")
                .iter()
                .any(|st| st["causes"]["throttle"]["bdi"] == bdi.as_str());
            assert!(
                throttled_on_the_card,
                "{}: a stall's evidence names bdi {bdi}: {}",
                b.triple, run["stalls"]
            );
        }
    });
}
