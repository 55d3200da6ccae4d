//! `sinkrate bench` with fio's verify options, side by side with fio on the same jobs: the
//! bytes and I/Os each writes and reads back, the exit code and error of a job whose device
//! returns the wrong blocks (an emulated card that wraps), and the refusals.

use crate::common;
use crate::common::FioOutput;

use std::path::Path;
use std::process::Command;

use common::{fio_json, sinkrate_json, with_root, SlowDev};

fn figures(v: &serde_json::Value) -> (i64, u64, u64, u64) {
    let j = &v["jobs"][0];
    (
        j["error"].as_i64().expect("error"),
        j["read"]["io_bytes"].as_u64().expect("read bytes"),
        j["write"]["io_bytes"].as_u64().expect("write bytes"),
        j["read"]["total_ios"].as_u64().expect("read ios"),
    )
}

#[test]
fn verify_reads_back_what_was_written_as_fio_does() {
    let base = ["--name=v", "--bs=4k", "--size=8m"];
    let cases: &[&[&str]] = &[
        &["--rw=write", "--verify=crc32c"],
        &["--rw=randwrite", "--verify=crc32c-intel"],
        &["--rw=randwrite", "--verify=md5"],
        &["--rw=write", "--verify=sha256", "--direct=1"],
        &["--rw=randwrite", "--verify=meta"],
        &["--rw=write", "--verify_pattern=0xdeadbeef"],
        &["--rw=write", "--verify=pattern", "--verify_pattern=0x0f"],
        &["--rw=randwrite", "--verify=crc32c", "--verify_backlog=16"],
        &["--rw=write", "--verify=crc32c", "--do_verify=0"],
        &[
            "--rw=write",
            "--verify=crc32c",
            "--verify_fatal=1",
            "--ioengine=io_uring",
            "--iodepth=8",
        ],
        &[
            "--rw=randwrite",
            "--verify=crc32c",
            "--bsrange=4k-64k",
            "--norandommap",
        ],
        // Checked as it goes at any depth: the queue drains, the blocks are read back.
        &[
            "--rw=randwrite",
            "--verify=crc32c",
            "--verify_backlog=16",
            "--ioengine=io_uring",
            "--iodepth=8",
        ],
        // An interval above the block size is cut to it, as fio's.
        &["--rw=write", "--verify=md5", "--verify_interval=1m"],
        // fio replays the offsets instead of keeping a record: the same blocks are read.
        &["--rw=randwrite", "--verify=md5", "--experimental_verify=1"],
        // Every other checksum fio has, the SHA-512 family with its larger header.
        &["--rw=randwrite", "--verify=crc64"],
        &["--rw=write", "--verify=crc32"],
        &["--rw=randwrite", "--verify=crc16"],
        &["--rw=write", "--verify=crc7"],
        &["--rw=randwrite", "--verify=xxhash"],
        &["--rw=write", "--verify=sha1"],
        &["--rw=randwrite", "--verify=sha512", "--verify_interval=512"],
        &["--rw=write", "--verify=sha3-224"],
        &["--rw=randwrite", "--verify=sha3-256"],
        &["--rw=write", "--verify=sha3-384"],
        &["--rw=randwrite", "--verify=sha3-512", "--bs=128"],
    ];
    for case in cases {
        let args: Vec<&str> = base.iter().chain(case.iter()).copied().collect();
        let fio_dir = tempfile::tempdir().expect("tempdir");
        let ours_dir = tempfile::tempdir().expect("tempdir");
        let fio = figures(&fio_json(fio_dir.path(), &args));
        let ours = figures(&sinkrate_json(ours_dir.path(), &args));
        // With overlapping random writes (norandommap, bsrange), fio and sinkrate read back
        // the last write to each place; the amounts differ with the offsets drawn.
        if case.contains(&"--norandommap") {
            assert_eq!((ours.0, ours.2), (0, 8 << 20), "{case:?}: {ours:?}");
            assert!(ours.1 > 0 && ours.1 <= 8 << 20, "{case:?}: {ours:?}");
            assert_eq!(fio.0, 0, "{case:?}");
        } else {
            assert_eq!(ours, fio, "{case:?}: sinkrate {ours:?}, fio {fio:?}");
        }
    }
}

/// A job that reads and writes reads back, after its writing or as it goes, every block
/// it wrote, and its own reads are not checked (they may land where nothing was written):
/// with a random map each block is written once, so its reads and read-backs together are
/// the job's size, whatever share rwmixread gave each.
#[test]
fn a_mixed_job_reads_back_what_it_wrote_as_fio_does() {
    let base = ["--name=v", "--bs=4k", "--size=8m", "--verify=crc32c"];
    for case in [
        &["--rw=readwrite"][..],
        &["--rw=randrw"],
        &["--rw=randrw", "--verify_backlog=8"],
        &[
            "--rw=randrw",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--verify_backlog=8",
        ],
    ] {
        let args: Vec<&str> = base.iter().chain(case.iter()).copied().collect();
        let fio_dir = tempfile::tempdir().expect("tempdir");
        let ours_dir = tempfile::tempdir().expect("tempdir");
        for (tool, v) in [
            ("fio", fio_json(fio_dir.path(), &args)),
            ("sinkrate", sinkrate_json(ours_dir.path(), &args)),
        ] {
            let (error, read, write, _) = figures(&v);
            assert_eq!(error, 0, "{tool} {case:?}");
            assert_eq!(read, 8 << 20, "{tool} {case:?}: read {read}, wrote {write}");
            assert!(write > 0 && write < 8 << 20, "{tool} {case:?}: {write}");
        }
    }
}

/// fio's pre/post pairs: a job writes blocks of sizes drawn from bssplit with headers and
/// does not read them back; a later job that only reads draws the same sizes (read and
/// write block sizes are seeded alike under verify) and checks every block. A byte changed
/// on the storage then fails the reading job in both tools.
#[test]
fn a_later_read_job_checks_what_an_earlier_job_wrote_in_both_tools() {
    let common = [
        "--name=pair",
        "--filename=pairfile",
        "--size=4m",
        "--bssplit=512/50:64k/50",
        "--verify=md5",
    ];
    let pre: Vec<&str> = common
        .iter()
        .copied()
        .chain(["--rw=write", "--do_verify=0"])
        .collect();
    let post: Vec<&str> = common
        .iter()
        .copied()
        .chain(["--rw=read", "--do_verify=1", "--verify_fatal=1"])
        .collect();
    for tool in ["fio", "sinkrate"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = |args: &[&str]| {
            if tool == "fio" {
                fio_json(dir.path(), args)
            } else {
                sinkrate_json(dir.path(), args)
            }
        };
        run(&pre);
        let (error, read, _, _) = figures(&run(&post));
        assert_eq!((error, read), (0, 4 << 20), "{tool}");
        // One byte in the middle of the file changed, as a card that lost it.
        let path = dir.path().join("pairfile");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[(2 << 20) + 1000] ^= 0x40;
        std::fs::write(&path, &bytes).expect("write");
        let out = if tool == "fio" {
            Ok(Command::new("fio")
                .current_dir(dir.path())
                .arg("--output-format=json")
                .args(&post)
                .fio_output())
        } else {
            common::sinkrate()
                .current_dir(dir.path())
                .args(&post)
                .arg("--output-format=json")
                .output()
        }
        .expect("runs");
        let v = common::json_after_text(&out.stdout);
        assert_ne!(v["jobs"][0]["error"].as_i64(), Some(0), "{tool} found it");
        assert!(!out.status.success(), "{tool}");
    }
}

/// fio's surface-scan example as written: a fill of the whole filesystem, then a verify
/// phase without size= that reads back the file the fill left (sized as it starts, as fio
/// sizes it), in both tools on the same small filesystem: the same bytes, all of the file.
#[test]
fn a_verify_phase_without_a_size_reads_what_the_fill_left_in_both_tools() {
    with_root(
        "a_verify_phase_without_a_size_reads_what_the_fill_left_in_both_tools",
        &["fio"],
        || {
            let job = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/fio-examples/surface-scan.fio");
            let job = job.to_str().expect("utf8");
            let mut read_by = Vec::new();
            for tool in ["fio", "sinkrate"] {
                let dir = tempfile::tempdir().expect("tempdir");
                let card = dir.path().join("card");
                let _fs = common::MemoryFs::new(&card, "24m");
                let at = format!("--directory={}", card.display());
                let v = if tool == "fio" {
                    // fio's own error of the fill's last write (ENOSPC) fails its exit.
                    let out = Command::new("fio")
                        .current_dir(dir.path())
                        .args(["--output-format=json", job, &at])
                        .fio_output();
                    common::json_after_text(&out.stdout)
                } else {
                    sinkrate_json(dir.path(), &[job, &at])
                };
                let jobs = v["jobs"].as_array().expect("jobs");
                let phase = |name: &str| {
                    jobs.iter()
                        .find(|j| j["jobname"] == name)
                        .unwrap_or_else(|| panic!("{tool}: {name} in {v}"))
                };
                let filled = std::fs::metadata(card.join("datafile.tmp"))
                    .expect("the fill's file")
                    .len();
                assert!(filled > 16 << 20, "{tool}: the fill filled it: {filled}");
                let verify = phase("verify-phase");
                assert_eq!(verify["error"], 0, "{tool}: {verify}");
                let read = verify["read"]["io_bytes"].as_u64().expect("read");
                assert_eq!(read, filled, "{tool}: the whole file read back");
                read_by.push(read);
            }
            assert_eq!(read_by[0], read_by[1], "the same bytes in both tools");
        },
    );
}

/// verify_dump: a bad block's bytes as read are kept as `NAME.OFFSET.received` in the
/// current directory, as fio keeps them; the file holds what the storage holds there (read
/// apart from sinkrate), and a file already at that name is left as it was.
#[test]
fn verify_dump_keeps_the_bad_blocks_bytes_beside_and_never_over_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = [
        "--name=d",
        "--filename=dumped",
        "--size=256k",
        "--bs=4k",
        "--verify=crc32c",
    ];
    let pre: Vec<&str> = job
        .iter()
        .copied()
        .chain(["--rw=write", "--do_verify=0"])
        .collect();
    sinkrate_json(dir.path(), &pre);
    let path = dir.path().join("dumped");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[8192 + 100] ^= 0x01;
    std::fs::write(&path, &bytes).expect("write");
    std::fs::write(dir.path().join("dumped.8192.received"), b"the user's").expect("write");
    let out = common::sinkrate()
        .current_dir(dir.path())
        .args(job)
        .args(["--rw=read", "--verify_fatal=1", "--verify_dump=1"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("dumped.8192-2.received"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("dumped.8192.received")).expect("read"),
        b"the user's"
    );
    assert_eq!(
        std::fs::read(dir.path().join("dumped.8192-2.received")).expect("read"),
        bytes[8192..8192 + 4096]
    );
}

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    // In a directory of its own, as fio_failing's fio: a writing verify job saves its state
    // (local-NAME-0-verify.state) in the working directory.
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = Command::new(common::sinkrate_path())
        .current_dir(cwd.path())
        .arg("bench")
        .args(args)
        .output()
        .expect("sinkrate bench runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// fio's exit code and JSON for a job that may fail (fio then prints its error lines before
/// the JSON on standard output).
fn fio_failing(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    // In a directory of its own: fio saves a verify job's state (local-w-0-verify.state)
    // in its working directory, which is the checkout under cargo test.
    let cwd = tempfile::tempdir().expect("tempdir");
    let fio = Command::new("fio")
        .current_dir(cwd.path())
        .args(args)
        .fio_output();
    let out = String::from_utf8_lossy(&fio.stdout);
    let json = serde_json::from_str(&out[out.find('{').expect("fio JSON")..]).expect("fio JSON");
    (fio.status.code(), json)
}

#[test]
fn a_card_that_wraps_fails_verify_in_fio_and_in_sinkrate() {
    with_root(
        "a_card_that_wraps_fails_verify_in_fio_and_in_sinkrate",
        &["nbdkit", "nbdfuse", "losetup"],
        || {
            let card = SlowDev::new(&[
                "--fs",
                "none",
                "--size",
                "32M",
                "--fake-capacity",
                "64M",
                "--rate",
                "200MB",
            ]);
            let dev = std::fs::read_link(card.path()).expect("the card's device");
            let filename = format!("--filename={}", dev.display());
            let args = [
                "--name=v",
                &filename,
                "--rw=write",
                "--bs=64k",
                "--size=64m",
                "--verify=crc32c",
                "--direct=1",
                "--output-format=json",
            ];
            let (fio_code, fio_json) = fio_failing(&args);
            let (code, out, err) = bench(&args);
            let ours: serde_json::Value = serde_json::from_str(&out).expect("sinkrate JSON");
            assert_eq!(fio_code, Some(1));
            assert_eq!(code, Some(1), "{err}");
            // Both stop at the first bad block: error 84 (EILSEQ), one block read back.
            assert_eq!(figures(&ours), figures(&fio_json), "{err}");
            assert_eq!(figures(&ours), (84, 65536, 64 << 20, 1));
            assert!(
                err.contains("bad block at offset 0")
                    && err.contains("written for offset 33554432"),
                "{err}"
            );
            assert!(
                !err.contains("tmpfs"),
                "a device node is not its devtmpfs: {err}"
            );

            // continue_on_error=verify: each bad block is counted and the check goes on, in
            // both. The first 32 MiB read back what was written 32 MiB further (512 bad
            // blocks of 64 KiB), the rest is good; every block was read back.
            let args = [&args[..], &["--continue_on_error=verify"]].concat();
            let (fio_code, fio_json) = fio_failing(&args);
            let (code, out, err) = bench(&args);
            let ours: serde_json::Value = serde_json::from_str(&out).expect("sinkrate JSON");
            let errors = |v: &serde_json::Value| {
                (
                    figures(v),
                    v["jobs"][0]["total_err"].as_u64(),
                    v["jobs"][0]["first_error"].as_i64(),
                )
            };
            assert_eq!(
                (code, errors(&ours)),
                (fio_code, errors(&fio_json)),
                "{err}"
            );
            assert_eq!(
                (code, errors(&ours)),
                (
                    Some(0),
                    ((84, 64 << 20, 64 << 20, 1024), Some(512), Some(84))
                )
            );
            // Said among the results' warnings (standard error stays fio's).
            assert!(
                ours["warnings"]
                    .to_string()
                    .contains("512 I/O error(s) gone on past"),
                "{}",
                ours["warnings"]
            );
        },
    );
}

#[test]
fn verify_refusals_name_what_would_be_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = format!("--directory={}", dir.path().display());
    for (args, says) in [
        (
            vec!["--rw=write", "--verify=sha384"],
            "md5, crc64, crc32, crc32c, crc16, crc7, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, xxhash, pattern, meta, crc32c-intel or null",
        ),
        (
            vec!["--rw=write", "--bs=64", "--verify=sha512"],
            "verify=sha512 writes a 96-byte header into every block: bs must be 96 or more",
        ),
        (
            vec!["--rw=write", "--verify=pattern"],
            "verify=pattern needs verify_pattern=",
        ),
        (
            vec!["--rw=write", "--bs=32", "--verify=md5"],
            "bs must be 64 or more",
        ),
        (
            vec!["--rw=write", "--verify=crc32c", "--verify_interval=3000"],
            "does not divide the block size 4096",
        ),
        (
            vec!["--rw=write", "--verify=crc32c", "--verify_interval=32"],
            "use 64 or more",
        ),
        (
            vec!["--rw=write", "--verify=crc32c", "--ioengine=null"],
            "ioengine=null",
        ),
    ] {
        let all: Vec<&str> = ["--name=v", "--size=1m", d.as_str()]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let (code, _, err) = bench(&all);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(common::files_in(dir.path()).is_empty());
    assert!(Path::new(&dir.path()).exists());
}

/// fio's surface scan: one job writes headers every `verify_interval` bytes without reading
/// them back, a later job that only reads checks every interval of what it reads (its
/// offset, its header's checksum, its data). The file's bytes hold a header every 512
/// bytes; one byte changed on the storage is found in its interval by both tools, fio and
/// sinkrate each on its own file. fio 3.33 then exits 0 (error 0) unless verify_fatal is
/// set; sinkrate reads on, counts the bad blocks and fails with error 84.
#[test]
fn read_only_verify_checks_every_interval_written_earlier() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let d = format!("--directory={}", dir.path().display());
    let common = [
        "--filename=scan",
        "--size=1m",
        "--bs=64k",
        "--verify_interval=512",
    ];
    let write = [
        &common[..],
        &[
            "--name=w",
            "--rw=write",
            "--verify=crc32c",
            "--do_verify=0",
            "--keep",
            &d,
        ],
    ]
    .concat();
    let read = [
        &common[..],
        &[
            "--name=r",
            "--rw=randread",
            "--verify=crc32c",
            "--output-format=json",
            &d,
        ],
    ]
    .concat();
    let (code, _, err) = bench(&write);
    assert_eq!(code, Some(0), "{err}");
    let file = dir.path().join("scan");
    let bytes = std::fs::read(&file).expect("the written file");
    for at in (0..bytes.len()).step_by(512) {
        assert_eq!(&bytes[at..at + 4], b"SRvf", "a header at {at}");
        let offset = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().expect("8 bytes"));
        assert_eq!(offset, at as u64, "the header names its place");
    }
    let (code, out, err) = bench(&read);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 1 << 20);
    assert_eq!(v["jobs"][0]["error"], 0);

    // One byte changed on the storage, as a card's bit flip: 70000 is in the 512-byte
    // interval at 69632 of the block at 65536.
    let flip = |path: &Path| {
        let mut b = std::fs::read(path).expect("read");
        b[70_000] ^= 0x40;
        std::fs::write(path, b).expect("write");
    };
    flip(&file);
    let (code, out, err) = bench(&read);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("interval at offset 69632") && err.contains("offset 65536"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["jobs"][0]["error"], 84);
    assert_eq!(
        v["jobs"][0]["read"]["io_bytes"],
        1 << 20,
        "it reads on, as fio"
    );

    if !common::fio_or_skip("read_only_verify_checks_every_interval_written_earlier (fio)") {
        return;
    }
    let f = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let fd = format!("--directory={}", f.path().display());
    let fio = |args: &[&str]| {
        // The directory first: given after the job's file, fio 3.33 makes the file in the
        // current directory.
        Command::new("fio")
            // Its verify state (local-w-0-verify.state) goes in the working directory.
            .current_dir(f.path())
            .arg(&fd)
            .args(args)
            .fio_output()
    };
    let fio_write: Vec<&str> = write
        .iter()
        .copied()
        .filter(|a| *a != "--keep" && !a.starts_with("--directory"))
        .collect();
    let fio_read: Vec<&str> = read
        .iter()
        .copied()
        .filter(|a| !a.starts_with("--directory"))
        .collect();
    assert!(fio(&fio_write).status.success());
    let clean = fio(&fio_read);
    assert!(clean.status.success());
    assert!(
        String::from_utf8_lossy(&clean.stderr).is_empty(),
        "fio finds nothing wrong"
    );
    flip(&f.path().join("scan"));
    let bad = fio(&fio_read);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("offset 69632, length 512"),
        "fio finds the same interval: {}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// A verify state file read by the test itself from fio 3.33's `struct thread_io_list`
/// (verify-state.h), so that the same reader checks fio's files and sinkrate's: (name,
/// iodepth, files, writes issued, completions as (file, offset)).
fn read_state(path: &Path) -> (String, u32, u32, u64, Vec<(u64, u64)>) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!(u64_at(0), 3, "version 3");
    assert_eq!(u64_at(8) as usize, b.len() - 24, "the header's size");
    // fio's crc32c: Castagnoli from all ones, without the final inversion.
    assert_eq!(u64_at(16), u64::from(!crc32c::crc32c(&b[24..])), "crc32c");
    let rec = 24;
    let name_bytes = &b[rec + 88..rec + 152];
    let name_end = name_bytes.iter().position(|c| *c == 0).unwrap_or(64);
    let kept = u64_at(rec) as usize;
    (
        String::from_utf8_lossy(&name_bytes[..name_end]).into_owned(),
        u32_at(rec + 8),
        u32_at(rec + 12),
        u64_at(rec + 16),
        (0..kept)
            .map(|i| (u64_at(rec + 152 + 16 * i), u64_at(rec + 160 + 16 * i)))
            .collect(),
    )
}

/// fio's power-cut workflow, in both tools: a writing job with verify is cut by
/// --trigger-timeout; its state (writes issued, the last completion) is saved in
/// --aux-path, in fio's layout (read by one reader for both tools' files), before the
/// trigger command runs (the command copies it); a read job of the same name with
/// verify_state_load reads back exactly the blocks written and passes; the same read job
/// without the state checks the whole size and fails on the blocks never written.
#[test]
fn a_trigger_saves_the_write_state_and_the_loaded_state_ends_the_reads_in_both_tools() {
    let job = [
        "--name=cut",
        "--filename=data",
        "--bs=4k",
        "--size=4m",
        "--verify=crc32c",
    ];
    for tool in ["fio", "sinkrate"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let aux = dir.path().join("aux");
        std::fs::create_dir(&aux).expect("aux");
        let aux_flag = format!("--aux-path={}", aux.display());
        let run = |extra: &[&str]| {
            let mut cmd = if tool == "fio" {
                Command::new("fio")
            } else {
                let mut c = Command::new(common::sinkrate_path());
                c.args(["bench", "--eta=never"]);
                c
            };
            cmd.current_dir(dir.path())
                .arg("--output-format=json")
                .arg(&aux_flag)
                .args(job)
                .args(extra);
            let out = if tool == "fio" {
                cmd.fio_output()
            } else {
                cmd.output().expect("sinkrate runs")
            };
            (out.status.code(), common::json_after_text(&out.stdout))
        };
        let (code, pre) = run(&[
            "--rw=write",
            "--do_verify=0",
            "--rate=1m",
            "--trigger-timeout=1",
            "--trigger=cp aux/local-cut-0-verify.state copied",
        ]);
        assert_eq!(code, Some(0), "{tool}: {pre}");
        let (_, _, written, _) = figures(&pre);
        let blocks = written / 4096;
        // Cut short: 1 MiB/s for about a second of a 4 MiB job.
        assert!(blocks > 0 && blocks < 1024, "{tool}: {blocks} blocks");
        let state = aux.join("local-cut-0-verify.state");
        let (name, depth, files, issued, completions) = read_state(&state);
        assert_eq!((name.as_str(), depth, files), ("cut", 1, 1), "{tool}");
        // sinkrate saves once the job has stopped: its state is its results' count. fio
        // saves from its helper thread while the write in flight may still complete, so
        // its results may count one write more.
        if tool == "sinkrate" {
            assert_eq!(issued, blocks, "{tool}");
        } else {
            assert!(
                issued == blocks || issued + 1 == blocks,
                "{tool}: {issued} {blocks}"
            );
        }
        // The last completion is the last write issued; fio's helper thread, saving while
        // a busy machine holds the job, may find it a write behind.
        let last = (issued - 1) * 4096;
        if tool == "sinkrate" {
            assert_eq!(completions, vec![(0, last)], "{tool}");
        } else {
            assert!(
                completions == vec![(0, last)] || completions == vec![(0, last - 4096)],
                "{tool}: {completions:?} after {issued} issued"
            );
        }
        assert_eq!(
            std::fs::read(dir.path().join("copied")).expect("the trigger command ran"),
            std::fs::read(&state).expect("state"),
            "{tool}: the state was saved before the trigger command ran"
        );

        // The loaded state ends the reads at its last completion (sinkrate's: the last write
        // issued; fio's may be one behind, see above).
        let completed = completions[0].1 / 4096 + 1;
        let (code, post) = run(&["--rw=read", "--verify_state_load=1"]);
        let (error, read, _, ios) = figures(&post);
        assert_eq!((code, error), (Some(0), 0), "{tool}: {post}");
        assert_eq!((read, ios), (completed * 4096, completed), "{tool}");

        let (code, unbounded) = run(&["--rw=read", "--verify_fatal=1"]);
        assert_ne!(
            code,
            Some(0),
            "{tool}: without the state the unwritten blocks fail"
        );
        assert_ne!(figures(&unbounded).0, 0, "{tool}: {unbounded}");
    }
}

/// What stops a state from being saved or loaded is said in one line before any I/O.
#[test]
fn verify_state_and_trigger_refusals_are_one_line_before_any_io() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = format!("--directory={}", dir.path().display());
    let aux = format!("--aux-path={}", dir.path().display());
    let damaged = dir.path().join("local-r-0-verify.state");
    // Version 3, then a size that is not the file's.
    let mut bytes = vec![0u8; 200];
    bytes[0] = 3;
    bytes[8] = 7;
    std::fs::write(&damaged, bytes).expect("write");
    let missing = format!("--aux-path={}", dir.path().join("nowhere").display());
    let read = [
        "--name=r",
        "--rw=read",
        "--verify=crc32c",
        "--verify_state_load=1",
    ];
    for (args, says) in [
        (
            vec![
                "--name=q",
                "--rw=read",
                "--verify=crc32c",
                "--verify_state_load=1",
                aux.as_str(),
            ],
            "local-q-0-verify.state: No such file",
        ),
        (
            [&read[..], &[aux.as_str()]].concat(),
            "is not a verify state: the header gives",
        ),
        (
            vec!["--name=w", "--rw=write", missing.as_str()],
            "--aux-path",
        ),
        (
            vec!["--name=w", "--rw=write", "--trigger=true"],
            "give --trigger-timeout or --trigger-file too",
        ),
        (
            vec!["--name=w", "--rw=write", "--trigger-timeout=0"],
            "--trigger-timeout=0",
        ),
    ] {
        let all: Vec<&str> = ["--size=64k", d.as_str()]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        common::refuses(dir.path(), &all, &[says]);
    }
    assert_eq!(common::files_in(dir.path()), vec!["local-r-0-verify.state"]);
    // A state that cannot be written where it goes refuses the writing job up front.
    let (code, _, err) = bench(&[
        "--name=w",
        "--rw=write",
        "--size=64k",
        "--verify=crc32c",
        &d,
        "--aux-path=/proc",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("verify_state_save=0"), "{err}");
    assert_eq!(common::files_in(dir.path()), vec!["local-r-0-verify.state"]);
}
