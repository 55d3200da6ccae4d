//! The engines that do no block I/O, beside fio where its version has them: the metadata
//! engines (file and directory create, stat, delete), `cpuio` and `exec`.

mod common;

use std::path::Path;

use common::{fio_json, fio_or_skip, sinkrate_json};

/// (total_ios, io_bytes, clat samples, lat samples) of the direction `dir` of job 0.
fn counts(v: &serde_json::Value, dir: &str) -> [u64; 4] {
    let d = &v["jobs"][0][dir];
    [
        d["total_ios"].as_u64().unwrap_or(u64::MAX),
        d["io_bytes"].as_u64().unwrap_or(u64::MAX),
        d["clat_ns"]["N"].as_u64().unwrap_or(u64::MAX),
        d["lat_ns"]["N"].as_u64().unwrap_or(u64::MAX),
    ]
}

fn entries(dir: &Path) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> = std::fs::read_dir(dir)
        .expect("readable")
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().is_dir(),
            )
        })
        .collect();
    v.sort();
    v
}

/// filecreate, filestat and filedelete count as fio does: I/Os and bytes of the job's size
/// in blocks, in the direction rw= names, with one completion-latency sample per file.
#[test]
fn file_metadata_engines_count_as_fio_does() {
    if !fio_or_skip("file_metadata_engines_count_as_fio_does") {
        return;
    }
    for engine in ["filecreate", "filestat", "filedelete"] {
        for rw in ["read", "write"] {
            let e = format!("--ioengine={engine}");
            let r = format!("--rw={rw}");
            let args = [
                "--name=meta",
                e.as_str(),
                r.as_str(),
                "--nrfiles=5",
                "--filesize=4k",
                "--bs=1k",
                "--unlink=1",
            ];
            let (a, b) = (
                tempfile::tempdir().expect("tmp"),
                tempfile::tempdir().expect("tmp"),
            );
            let fio = fio_json(a.path(), &args);
            let ours = sinkrate_json(b.path(), &args);
            for dir in ["read", "write"] {
                assert_eq!(
                    counts(&ours, dir),
                    counts(&fio, dir),
                    "{engine} rw={rw} {dir}"
                );
            }
            assert_eq!(counts(&ours, rw), [20, 20480, 5, 0], "{engine} rw={rw}");
        }
    }
}

/// dircreate, dirstat and dirdelete (newer than the fio here; checked against its
/// documentation and the file system): directories are made, examined and removed, one
/// timed operation each, counted as the file engines are.
#[test]
fn directory_engines_make_stat_and_remove_directories() {
    let d = tempfile::tempdir().expect("tmp");
    let dir = format!("--directory={}", d.path().display());
    let job = |engine: &str, unlink: &str| {
        let e = format!("--ioengine={engine}");
        let u = format!("--unlink={unlink}");
        sinkrate_json(
            d.path(),
            &[
                "--name=dirs",
                e.as_str(),
                dir.as_str(),
                "--nrfiles=4",
                "--filesize=4k",
                u.as_str(),
            ],
        )
    };
    let made = job("dircreate", "0");
    assert_eq!(counts(&made, "read"), [4, 16384, 4, 0]);
    let listed = entries(d.path());
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(listed.iter().all(|(_, is_dir)| *is_dir), "{listed:?}");
    let again = common::sinkrate()
        .current_dir(d.path())
        .args([
            "--name=dirs",
            "--ioengine=dircreate",
            dir.as_str(),
            "--nrfiles=4",
            "--filesize=4k",
        ])
        .output()
        .expect("runs");
    assert!(
        !again.status.success(),
        "mkdir on an existing directory fails"
    );
    let stat = job("dirstat", "0");
    assert_eq!(counts(&stat, "read"), [4, 16384, 4, 0]);
    assert_eq!(entries(d.path()), listed, "dirstat changes nothing");
    let gone = job("dirdelete", "0");
    assert_eq!(counts(&gone, "read"), [4, 16384, 4, 0]);
    assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));
    // Without unlink=, sinkrate removes the directories it made (as it does files).
    let cleaned = common::sinkrate()
        .current_dir(d.path())
        .args([
            "--name=dirs",
            "--ioengine=dircreate",
            dir.as_str(),
            "--nrfiles=4",
            "--filesize=4k",
        ])
        .output()
        .expect("runs");
    assert!(cleaned.status.success());
    assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));
}
