//! Ctrl-C: the run stops at the next I/O, prints and writes the partial results, removes the
//! files it created, and exits 130.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn ctrl_c_writes_partial_results_and_cleans_up() {
    let d = tempfile::tempdir().expect("tempdir");
    let out_file = d.path().join("run.json");
    let work = d.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let child = Command::new(common::sinkrate_path())
        .current_dir(&work)
        .args([
            "bench",
            "--eta=never",
            "--name=long",
            "--rw=write",
            "--bs=64k",
            "--size=32m",
            "--time_based",
            "--runtime=60",
            // A job that removes its files (bench keeps them by default, as fio).
            "--unlink=1",
        ])
        .arg("--output-format=json")
        .arg(format!("--output={}", out_file.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !common::files_in(&work).is_empty(),
        "the job's file exists while it runs"
    );
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "did not stop promptly"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_file).expect("partial JSON written"))
            .expect("valid JSON");
    assert_eq!(v["interrupted"], true);
    assert!(v["jobs"][0]["write"]["io_bytes"]
        .as_u64()
        .is_some_and(|b| b > 0));
    assert!(
        common::files_in(&work).is_empty(),
        "files left: {:?}",
        common::files_in(&work)
    );
}

#[test]
fn existing_files_are_never_removed() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("mine.dat"), vec![7u8; 1 << 20]).expect("write");
    let out = common::sinkrate()
        .current_dir(d.path())
        .args([
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--filename=mine.dat",
            "--unlink=1",
        ])
        .output()
        .expect("runs");
    common::succeeded(&out);
    assert_eq!(
        std::fs::read(d.path().join("mine.dat"))
            .expect("still there")
            .len(),
        1 << 20
    );
}
