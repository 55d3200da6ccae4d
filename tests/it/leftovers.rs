//! sinkrate (bench, record, verify, a suite) killed with SIGKILL, with no chance to clean
//! up: its result file is absent, never half written, and the next sinkrate run (any
//! command) removes the files and work directories the killed run made, says so, and leaves
//! the user's own files alone.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::sinkrate_path;

/// Runs `args`, kills it with SIGKILL once `ready` holds (and `after` has passed), and
/// returns its pid.
fn killed(args: &[&str], after: Duration, ready: impl Fn() -> bool) -> u32 {
    let mut cmd = Command::new(sinkrate_path());
    cmd.args(args);
    killed_command(cmd, after, ready)
}

/// `killed` for a command already built (its environment set).
fn killed_command(mut cmd: Command, after: Duration, ready: impl Fn() -> bool) -> u32 {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sinkrate starts");
    std::thread::sleep(after);
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{args:?} never got going"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    child.id()
}

/// The next run's note about `pid`'s leftovers (any command sweeps; this one does nothing
/// else).
fn next_run_says() -> String {
    let out = Command::new(sinkrate_path())
        .args(["emulate", "list"])
        .output()
        .expect("sinkrate runs");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("readable")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn what_a_killed_run_made_is_removed_by_the_next_and_its_json_is_absent() {
    // One test: the sweep of one run would take the others' leftovers.
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("users-own.bin"), b"keep me").expect("setup");
    let out = d.join("out");
    std::fs::create_dir(&out).expect("setup");

    // bench: its job file, paced so it is still writing when killed.
    let json = out.join("bench.json");
    let pid = killed(
        &[
            "bench",
            "--eta=never",
            "--name=k",
            &format!("--directory={}", d.display()),
            "--rw=write",
            "--bs=64k",
            "--size=64m",
            "--rate=8m",
            "--output-format=json",
            &format!("--output={}", json.display()),
        ],
        Duration::from_millis(1000),
        || names(d).iter().any(|n| n.starts_with("k.")),
    );
    assert!(!json.exists(), "no half-written result");
    // Commands that only read leave another run's leftovers to one that writes: a report
    // rendered while a recording is killed does not sweep.
    let missing = d.join("missing.json");
    for args in [
        vec!["compare".to_string(), missing.display().to_string()],
        vec!["report".to_string(), missing.display().to_string()],
        vec!["completions".to_string(), "bash".to_string()],
    ] {
        let out = Command::new(sinkrate_path())
            .args(&args)
            .output()
            .expect("sinkrate runs");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!said.contains("earlier sinkrate run"), "{args:?}: {said}");
    }
    assert!(
        names(d).iter().any(|n| n.starts_with("k.")),
        "the killed bench's file is there until a writing command runs"
    );
    let said = next_run_says();
    assert!(
        said.contains(&format!("left by an earlier sinkrate run (pid {pid})")),
        "{said}"
    );
    assert_eq!(names(d), ["out", "users-own.bin"], "{said}");

    // record: its stream files.
    let pid = killed(
        &[
            "record",
            "--dir",
            d.to_str().expect("utf8"),
            "--streams",
            "2",
            "--fps",
            "30",
            "--bitrate",
            "8M",
            "--duration",
            "30s",
            "--live",
            "never",
            "--output",
            out.join("record.json").to_str().expect("utf8"),
        ],
        Duration::from_millis(1000),
        || {
            names(d)
                .iter()
                .filter(|n| n.starts_with("sinkrate-record-"))
                .count()
                == 2
        },
    );
    let said = next_run_says();
    assert!(
        said.contains(&format!("(pid {pid})")) && said.contains("removed 2 file(s)"),
        "{said}"
    );
    assert_eq!(names(d), ["out", "users-own.bin"], "{said}");

    // verify: its test file, killed as soon as it exists.
    let pid = killed(
        &["verify", d.to_str().expect("utf8"), "--size", "2G"],
        Duration::ZERO,
        || names(d).iter().any(|n| n.starts_with("sinkrate-verify-")),
    );
    let said = next_run_says();
    assert!(
        said.contains(&format!("(pid {pid})")) && said.contains("sinkrate-verify-"),
        "{said}"
    );
    assert_eq!(names(d), ["out", "users-own.bin"], "{said}");

    // suite: its work directory, with whatever its writers had in it.
    let pid = killed(
        &[
            "suite",
            "capture-buffers",
            d.to_str().expect("utf8"),
            "--quick",
            "--progress",
            "never",
        ],
        Duration::from_millis(500),
        || names(d).iter().any(|n| n.starts_with(".sinkrate-suite-")),
    );
    let said = next_run_says();
    assert!(
        said.contains(&format!("(pid {pid})")) && said.contains(".sinkrate-suite-"),
        "{said}"
    );
    assert_eq!(names(d), ["out", "users-own.bin"], "{said}");
    assert_eq!(
        std::fs::read(d.join("users-own.bin")).expect("kept"),
        b"keep me"
    );
    assert!(
        names(&out).is_empty(),
        "no result file of a killed run: {:?}",
        names(&out)
    );
    assert!(next_run_says().is_empty(), "nothing left to say once swept");
}

#[test]
fn a_state_directory_keeps_its_runs_leftovers_to_itself() {
    // SINKRATE_STATE_DIR: a test suite's runs neither report nor sweep what a run killed
    // outside the suite left on the machine, and the suite's own leftovers stay its own.
    let dir = tempfile::tempdir().expect("tempdir");
    let (suite, elsewhere) = (dir.path().join("suite"), dir.path().join("elsewhere"));
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).expect("setup");
    let made = rec.join("sinkrate-record-cam0.bin");
    let mut cmd = Command::new(sinkrate_path());
    cmd.env("SINKRATE_STATE_DIR", &suite)
        .args(["record", "--dir"])
        .arg(&rec)
        .args(["--duration", "20s", "--live", "never"]);
    let pid = killed_command(cmd, Duration::ZERO, || made.exists());
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let journal_dir = suite.join(format!("owned-{uid}"));
    // Beside the journal, the notes of the tracefs instances the run made (record traces
    // the kernel's events where it can): they are the state directory's too.
    let notes_dir = journal_dir.join("tracefs");
    let journals: Vec<String> = names(&journal_dir)
        .into_iter()
        .filter(|n| n != "tracefs")
        .collect();
    assert_eq!(
        journals,
        vec![pid.to_string()],
        "the killed run's journal is in its state directory"
    );
    let notes = names(&notes_dir);
    assert!(
        notes
            .iter()
            .all(|n| n.starts_with(&format!("sinkrate-{pid}-"))
                || *n == format!("sinkrate-tracefs-{pid}")),
        "only the killed run's tracefs notes: {notes:?}"
    );
    let instances_left = || {
        common::trace_instances()
            .iter()
            .filter(|n| n.starts_with(&format!("sinkrate-{pid}-")))
            .count()
    };
    if notes.iter().any(|n| n.ends_with("-threads")) {
        assert!(
            instances_left() > 0,
            "a noted instance is there until swept"
        );
    }
    let run_in = |state: &Path| {
        let out = Command::new(sinkrate_path())
            .env("SINKRATE_STATE_DIR", state)
            .args(["emulate", "list"])
            .output()
            .expect("sinkrate runs");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = run_in(&elsewhere);
    assert!(
        !said.contains("interrupted"),
        "another state directory: {said}"
    );
    assert!(made.exists(), "not swept from another state directory");
    let said = run_in(&suite);
    assert!(
        said.contains(&format!("earlier sinkrate run (pid {pid})"))
            && said.contains(&made.display().to_string()),
        "{said}"
    );
    assert!(names(&rec).is_empty(), "every recording file swept");
    assert!(
        names(&journal_dir).iter().all(|n| n == "tracefs"),
        "the journal went with it: {:?}",
        names(&journal_dir)
    );
    assert!(names(&notes_dir).is_empty(), "the tracefs notes went too");
    assert_eq!(instances_left(), 0, "and the instances they named");
}

#[test]
fn a_killed_run_of_a_hundred_thousand_planned_files_is_swept_at_once() {
    // A filecreate job plans 100,000 files and makes a few thousand before it is killed:
    // the next run removes what it made, and starts its own work within seconds (every run
    // sweeps first; a sweep that searched the journal once per record kept every later
    // run busy for minutes, and a test binary's runs after it timed out one by one).
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("setup");
    let made_so_far = || std::fs::read_dir(&work).map_or(0, |d| d.count());
    let mut cmd = Command::new(sinkrate_path());
    cmd.env("SINKRATE_STATE_DIR", &state).args([
        "bench",
        "--eta=never",
        "--name=many",
        "--ioengine=filecreate",
        "--nrfiles=100000",
        "--filesize=4k",
        "--openfiles=1",
        "--create_on_open=1",
        "--time_based",
        "--runtime=60",
        &format!("--directory={}", work.display()),
    ]);
    let pid = killed_command(cmd, Duration::ZERO, || made_so_far() >= 500);
    let made = made_so_far();
    let started = std::time::Instant::now();
    let mut next = assert_cmd::Command::new(sinkrate_path());
    let out = next
        .env("SINKRATE_STATE_DIR", &state)
        .args(["emulate", "list"])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("sinkrate runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a hang ends as a timeout: {said}"
    );
    let count_before = |line: &str, words: &str| -> usize {
        line.split(words)
            .next()
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let removed: usize = said
        .lines()
        .filter(|l| l.contains(&format!("left by an earlier sinkrate run (pid {pid})")))
        .map(|l| count_before(l, " file(s) left by"))
        .sum();
    // The file being made as the kill came, not yet identified as the run's: left, named.
    let unidentified: usize = said
        .lines()
        .filter(|l| l.contains(&format!("earlier sinkrate run (pid {pid}) left")))
        .map(|l| count_before(l, " file(s), which cannot be removed"))
        .sum();
    assert_eq!(removed + unidentified, made, "{made} files made: {said}");
    assert!(
        unidentified <= 1,
        "one job makes one file at a time: {said}"
    );
    assert_eq!(made_so_far(), unidentified, "{said}");
    // A note per kind of leftover, each a line of a few names, not thousands.
    assert!(
        said.lines().count() <= 2 && said.lines().all(|l| l.len() < 1000),
        "{said}"
    );
    eprintln!(
        "swept {removed} files of a killed run that planned 100,000 in {} ms",
        started.elapsed().as_millis()
    );
}

#[test]
fn a_left_over_file_on_a_filesystem_that_hangs_holds_no_later_run() {
    // A killed run's file on a FUSE filesystem whose driver then stops answering (a card's
    // driver that hangs): every later run would hang in its sweep. It waits while the sweep
    // makes no progress for 30 s, says so, does its own work, and a run after the driver
    // answers again sweeps the file.
    common::with_root(
        "a_left_over_file_on_a_filesystem_that_hangs_holds_no_later_run",
        &["fusefat", "mkfs.vfat"],
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            let (image, mnt, state) = (
                dir.path().join("card.img"),
                dir.path().join("card"),
                dir.path().join("state"),
            );
            std::fs::create_dir(&mnt).expect("setup");
            std::fs::File::create(&image)
                .and_then(|f| f.set_len(32 << 20))
                .expect("setup");
            common::run("mkfs.vfat", &[image.to_str().expect("utf8")]);
            // In the foreground, as the test's own child: its pid is the one to stop.
            let driver = FuseDriver {
                child: Command::new("fusefat")
                    .args(["-f", "-o", "rw+"])
                    .arg(&image)
                    .arg(&mnt)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("fusefat starts"),
                mnt: mnt.clone(),
            };
            let mounted = || {
                std::fs::read_to_string("/proc/self/mountinfo")
                    .is_ok_and(|m| m.contains(&format!(" {} ", mnt.display())))
            };
            let started = std::time::Instant::now();
            while !mounted() {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "fusefat mounts"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            let mut bench = Command::new(sinkrate_path());
            bench
                .env("SINKRATE_STATE_DIR", &state)
                .args(["bench", "--eta=never", "--name=k", "--rw=write", "--bs=64k"])
                .args(["--size=16m", "--rate=2m"])
                .arg(format!("--directory={}", mnt.display()));
            let pid = killed_command(bench, Duration::from_millis(500), || {
                names(&mnt).iter().any(|n| n.starts_with("k."))
            });
            let signal = |sig: libc::c_int| {
                // SAFETY: kill(2) on the test's own child.
                assert_eq!(
                    unsafe { libc::kill(driver.child.id() as i32, sig) },
                    0,
                    "kill {sig}"
                );
            };
            signal(libc::SIGSTOP);
            // Past the kernel's cached answers (FUSE keeps a name and its attributes 1 s).
            std::thread::sleep(Duration::from_millis(2500));
            let next_run = || {
                let mut child = Command::new(sinkrate_path())
                    .env("SINKRATE_STATE_DIR", &state)
                    .args(["emulate", "list"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("sinkrate runs");
                let started = std::time::Instant::now();
                let status = loop {
                    if let Some(status) = child.try_wait().expect("wait") {
                        break status;
                    }
                    if started.elapsed() > Duration::from_secs(60) {
                        let _ = child.kill();
                        panic!("a later run hangs on the left-over file");
                    }
                    std::thread::sleep(Duration::from_millis(100));
                };
                let mut said = String::new();
                use std::io::Read;
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut said));
                (status, started.elapsed(), said)
            };
            let (status, took, said) = next_run();
            signal(libc::SIGCONT);
            assert!(status.success(), "{said}");
            assert!(
                said.contains("is not swept: a filesystem it lies on has not answered"),
                "{said}"
            );
            assert!(took < Duration::from_secs(50), "{took:?}: {said}");
            assert!(
                names(&mnt).iter().any(|n| n.starts_with("k.")),
                "not removed while not answering"
            );
            let (status, _, said) = next_run();
            assert!(status.success(), "{said}");
            assert!(
                said.contains(&format!("left by an earlier sinkrate run (pid {pid})")),
                "the next run tries again: {said}"
            );
            assert!(names(&mnt).is_empty(), "{said}");
        },
    );
}

/// A FUSE driver the test started: whatever the test's end, answering again, unmounted and
/// gone.
struct FuseDriver {
    child: std::process::Child,
    mnt: std::path::PathBuf,
}

impl Drop for FuseDriver {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the test's own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGCONT) };
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
