//! `continue_on_error` and `ignore_error` beside fio 3.33: a job that writes past the end of
//! a full file system (a 4 MiB tmpfs) stops at the first ENOSPC, or counts each one and goes
//! on when its error policy says so. Checked against the file the job left.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{refuses, sinkrate_path, with_root, MemoryFs};

/// What one run did: exit code, fio's `error`, `total_err`, `first_error`, write bytes and
/// I/Os, latency samples, and the size of the file it left.
type Seen = (
    Option<i32>,
    i64,
    Option<u64>,
    Option<i64>,
    u64,
    u64,
    u64,
    u64,
);

fn run(program: &Path, bench: bool, dir: &Path, args: &[&str]) -> Seen {
    let _ = std::fs::remove_file(dir.join("full"));
    let mut cmd = Command::new(program);
    if bench {
        cmd.arg("bench");
    }
    let out = cmd
        .current_dir(dir)
        .arg("--output-format=json")
        .args(args)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // fio prints its error lines before the JSON on standard output.
    let start = text.find("{\n").expect("JSON");
    let v: serde_json::Value = serde_json::from_str(&text[start..]).expect("JSON");
    let j = &v["jobs"][0];
    let w = &j["write"];
    (
        out.status.code(),
        j["error"].as_i64().expect("error"),
        j["total_err"].as_u64(),
        j["first_error"].as_i64(),
        w["io_bytes"].as_u64().expect("bytes"),
        w["total_ios"].as_u64().expect("ios"),
        w["clat_ns"]["N"].as_u64().unwrap_or(0),
        std::fs::metadata(dir.join("full")).map_or(0, |m| m.len()),
    )
}

#[test]
fn writes_past_a_full_file_system_stop_or_go_on_as_fios_do() {
    with_root(
        "writes_past_a_full_file_system_stop_or_go_on_as_fios_do",
        &["fio"],
        || {
            let top = tempfile::tempdir().expect("tmp");
            let fs = MemoryFs::new(&top.path().join("small"), "4m");
            let base = [
                "--name=fill",
                "--filename=full",
                "--size=8m",
                "--bs=64k",
                "--rw=write",
                "--unlink=0",
            ];
            let fio = common::fio_path();
            let ours = sinkrate_path();
            let four_mib = 4u64 << 20;
            // Counted and gone on past: every I/O issued, half of them moved bytes.
            let gone_on = (Some(0), 28, Some(64), Some(28), four_mib, 128, 64, four_mib);
            let cases: [(&[&str], Seen); 2] = [
                (
                    &["--continue_on_error=write", "--ignore_error=,ENOSPC"],
                    gone_on,
                ),
                (
                    &["--continue_on_error=all", "--ignore_error=EIO,28:EIO"],
                    gone_on,
                ),
            ];
            for (extra, expected) in cases {
                let args = [&base[..], extra].concat();
                let theirs = run(&fio, false, &fs.at, &args);
                let mine = run(&ours, true, &fs.at, &args);
                assert_eq!(theirs, expected, "fio {extra:?}");
                assert_eq!(mine, theirs, "sinkrate {extra:?}");
            }
            // fill_device: the full file system ends the job without an error; the write
            // that found it counts as issued. With 1 MiB already taken, at depth 4 the
            // writes in flight find it too.
            for (extra, bytes, ios) in [
                (&[][..], four_mib, 65),
                (&["--ioengine=libaio", "--iodepth=4"][..], 3 << 20, 52),
            ] {
                let fill = [
                    &["--name=fill", "--filename=full", "--bs=64k", "--rw=write"][..],
                    &["--fill_device=1", "--unlink=0"],
                    extra,
                ]
                .concat();
                let taken = fs.at.join("taken");
                let _ = std::fs::remove_file(fs.at.join("full"));
                if bytes < four_mib {
                    std::fs::write(&taken, vec![1u8; 1 << 20]).expect("taken");
                }
                let theirs = run(&fio, false, &fs.at, &fill);
                let mine = run(&ours, true, &fs.at, &fill);
                let _ = std::fs::remove_file(&taken);
                assert_eq!(
                    (theirs.0, theirs.1, theirs.4, theirs.5, theirs.7),
                    (Some(0), 0, bytes, ios, bytes),
                    "fio {extra:?}"
                );
                assert_eq!(mine, theirs, "sinkrate {extra:?}");
            }
            // ENOSPC off the job's list (the default list is EIO and EILSEQ): fio stops at
            // the first one (exit 1); sinkrate, which checks the free space first, refuses
            // the job before writing (exit 2), as for any job too large for its file system.
            for extra in [&[][..], &["--continue_on_error=write"][..]] {
                let args = [&base[..], extra].concat();
                let theirs = run(&fio, false, &fs.at, &args);
                assert_eq!((theirs.0, theirs.1, theirs.4), (Some(1), 28, four_mib));
                let _ = std::fs::remove_file(fs.at.join("full"));
                refuses(
                    &fs.at,
                    &args,
                    &["not enough free space", "the jobs need 8.00MiB"],
                );
            }
        },
    );
}

#[test]
fn bad_error_policies_are_refused_in_one_line() {
    let d = tempfile::tempdir().expect("tmp");
    refuses(
        d.path(),
        &[
            "--name=t",
            "--filename=f",
            "--rw=randwrite",
            "--fill_device=1",
        ],
        &["fill_device with rw=randwrite", "rw=write"],
    );
    drop(d);
    let d = tempfile::tempdir().expect("tmp");
    let job = ["--name=t", "--filename=f", "--size=1m"];
    for (option, expect) in [
        (
            "--continue_on_error=sometimes",
            "expected none, read, write",
        ),
        ("--ignore_error=,EWHAT", "not an error number or a name"),
        ("--ignore_error=EIO,EIO,EIO,EIO", "more than three"),
    ] {
        refuses(
            d.path(),
            &[&job[..], &[option]].concat(),
            &[
                option
                    .split('=')
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches('-'),
                expect,
            ],
        );
    }
}
