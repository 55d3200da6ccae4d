//! `sinkrate verify`: kept data tampered with by the test itself (the file's bytes are the
//! independent check), each kind of bad block named; a stale block that fio's own verify
//! passes; devices guarded like bench's writes; bad input.

use crate::common;
use crate::common::FioOutput;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{have, sinkrate_path, with_root, LoopDevice, ScratchFs};

const BLOCK: usize = 64 * 1024;

fn verify(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(sinkrate_path())
        .arg("verify")
        .args(["--output-format", "json", "--progress", "never"])
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, stderr)
}

/// A kept run of `blocks` 64 KiB blocks in `dir`; the file it left.
fn kept_run(dir: &Path, blocks: usize) -> PathBuf {
    let size = format!("{}", blocks * BLOCK);
    let (code, v, stderr) = verify(&[
        dir.to_str().expect("utf8"),
        "--size",
        &size,
        "--block-size",
        "64K",
        "--keep",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["verdict"], "verified");
    assert_eq!(v["counts"]["ok"], blocks as u64);
    assert_eq!(v["read_method"], "o_direct", "{v}");
    let file = PathBuf::from(v["data_path"].as_str().expect("data_path"));
    assert_eq!(
        std::fs::metadata(&file).expect("kept").len(),
        (blocks * BLOCK) as u64
    );
    file
}

fn block_of(file: &Path, n: usize) -> Vec<u8> {
    let bytes = std::fs::read(file).expect("read");
    bytes[n * BLOCK..(n + 1) * BLOCK].to_vec()
}

fn put_block(file: &Path, n: usize, data: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .expect("open");
    f.write_all_at(data, (n * BLOCK) as u64).expect("write");
    f.sync_all().expect("sync");
}

#[test]
fn each_kind_of_bad_block_is_found_and_named() {
    let a = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let b = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let earlier = kept_run(a.path(), 32);
    let file = kept_run(b.path(), 32);
    // The test's own damage, one block of each kind.
    put_block(&file, 3, &block_of(&earlier, 3)); // an earlier run's block: a lost write
    put_block(&file, 7, &block_of(&file, 0)); // block 0 read at block 7: a wrap-around
    put_block(&file, 9, &vec![0u8; BLOCK]);
    put_block(&file, 11, &vec![0xa5u8; BLOCK]);
    let mut flipped = block_of(&file, 13);
    flipped[40_000] ^= 0x04;
    put_block(&file, 13, &flipped);

    let (code, v, stderr) = verify(&["--read-only", file.to_str().expect("utf8")]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(v["kind"], "verify");
    assert_eq!(v["verdict"], "bad_blocks");
    let c = &v["counts"];
    assert_eq!(
        [
            &c["ok"],
            &c["stale"],
            &c["misplaced"],
            &c["zeros"],
            &c["garbage"],
            &c["corrupt"]
        ],
        [27, 1, 1, 1, 1, 1].map(serde_json::Value::from).each_ref(),
        "{c}"
    );
    let kinds: Vec<(u64, String)> = v["bad_blocks"]
        .as_array()
        .expect("bad blocks")
        .iter()
        .map(|b| {
            (
                b["block"].as_u64().expect("block"),
                b["finding"]["kind"].as_str().expect("kind").to_string(),
            )
        })
        .collect();
    let want: Vec<(u64, String)> = [
        (3, "stale"),
        (7, "misplaced"),
        (9, "zeros"),
        (11, "garbage"),
        (13, "corrupt"),
    ]
    .iter()
    .map(|(n, k)| (*n, k.to_string()))
    .collect();
    assert_eq!(kinds, want);
    let earlier_id = earlier
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("sinkrate-verify-"))
        .and_then(|n| n.strip_suffix(".bin"))
        .expect("run id in the name");
    assert_eq!(
        v["bad_blocks"][0]["finding"]["run_id"],
        u64::from_str_radix(earlier_id, 16).expect("hex")
    );
    assert_eq!(v["bad_blocks"][1]["finding"]["from_offset"], 0);
    let text = v["verdict_text"].as_str().expect("text");
    assert!(text.starts_with("5 of 32 blocks"), "{text}");
    // Read-only never removes what a kept run left.
    assert!(file.exists() && earlier.exists());
    // The result reads back through the type that wrote it, and the report shows it as a
    // verify run: its verdict, the blocks by kind, the bad ones in words.
    let bytes = serde_json::to_vec(&v).expect("json");
    let run: sinkrate_model::Envelope<sinkrate_model::verify::VerifyReport> =
        sinkrate_model::Envelope::from_json(&bytes, sinkrate_model::RunKind::Verify)
            .expect("reads as a verify result");
    assert_eq!(
        serde_json::to_value(&run).expect("json"),
        v,
        "unchanged on the way"
    );
    let html = common::report_html(a.path(), &bytes);
    for words in [
        "bad blocks",
        "Blocks read back",
        "The first 5 bad blocks",
        "a wrap-around or a misdirected write",
        "a payload that does not match its checksum",
    ] {
        assert!(html.contains(words), "the report lacks {words:?}");
    }
}

/// fio cannot tell a write that never reached the medium when the block there is from an
/// earlier identical run: its data is the same. sinkrate's run id tells.
#[test]
fn a_stale_block_fio_verify_passes_is_found() {
    if !have("fio") {
        common::skip(
            "a_stale_block_fio_verify_passes_is_found",
            "needs 'fio' (scripts/install-deps.sh --test installs it)",
        );
        return;
    }
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let fio_job = |file: &Path, extra: &[&str]| {
        // In the test's directory: fio saves its verify state (local-v-0-verify.state) in its
        // working directory.
        Command::new("fio")
            .current_dir(d.path())
            .args([
                "--name=v",
                "--rw=write",
                "--bs=64k",
                "--size=2m",
                "--verify=crc32c",
                "--direct=1",
            ])
            .arg(format!("--filename={}", file.display()))
            .args(extra)
            .fio_output()
    };
    let (f1, f2) = (d.path().join("fio-run1"), d.path().join("fio-run2"));
    assert!(fio_job(&f1, &["--do_verify=0"]).status.success());
    assert!(fio_job(&f2, &["--do_verify=0"]).status.success());
    // Run 2's write of block 3 "did not reach the medium": run 1's block is there.
    put_block(&f2, 3, &block_of(&f1, 3));
    let out = fio_job(&f2, &["--verify_only=1"]);
    assert!(
        out.status.success(),
        "fio's verify should pass: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir(&a).expect("mkdir");
    std::fs::create_dir(&b).expect("mkdir");
    let run1 = kept_run(&a, 32);
    let run2 = kept_run(&b, 32);
    put_block(&run2, 3, &block_of(&run1, 3));
    let (code, v, _) = verify(&["--read-only", b.to_str().expect("utf8")]);
    assert_eq!(code, Some(1));
    assert_eq!(v["counts"]["stale"], 1);
    assert_eq!(v["bad_blocks"][0]["block"], 3);
    eprintln!(
        "side by side: fio --verify_only on run 2 with run 1's block 3: exit 0 (passes); sinkrate verify --read-only: exit 1, {}",
        v["verdict_text"]
    );
}

#[test]
fn devices_are_guarded_like_bench_writes() {
    with_root(
        "devices_are_guarded_like_bench_writes",
        &["losetup", "mkfs.ext4"],
        || {
            // A blank device: written whole and verified.
            let blank = LoopDevice::new("32M", false);
            let dev = blank.path.to_str().expect("utf8");
            let (code, v, stderr) = verify(&[dev, "--block-size", "256K"]);
            assert_eq!(code, Some(0), "{stderr}");
            assert_eq!(v["is_device"], true);
            assert_eq!(v["blocks"], 128);
            assert_eq!(v["read_method"], "o_direct");

            // A device with a filesystem: refused, nothing written, unless --force.
            common::mkfs("ext4", &blank.path);
            let before = std::fs::read(&blank.path).expect("read device");
            let (code, _, stderr) = verify(&[dev]);
            assert_eq!(code, Some(2));
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("--force"), "{stderr}");
            assert!(
                std::fs::read(&blank.path).expect("read") == before,
                "written"
            );

            // Mounted: refused with where.
            let fs = ScratchFs::new("32M", "ext4", "rw");
            let (code, _, stderr) = verify(&[fs.device.to_str().expect("utf8")]);
            assert_eq!(code, Some(2));
            assert!(stderr.contains("mounted"), "{stderr}");

            // --force on the unmounted one: written and verified.
            let (code, v, _) = verify(&[dev, "--force", "--size", "8M"]);
            assert_eq!(code, Some(0));
            assert_eq!(v["counts"]["ok"], 8);
        },
    );
}

#[test]
fn bad_input_gets_one_line_and_nothing_written() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let dir = d.path().to_str().expect("utf8");
    let plain = d.path().join("notes.txt");
    std::fs::write(&plain, "not verify data, and longer than nothing").expect("write");
    let plain_s = plain.to_str().expect("utf8");
    let cases: [(&[&str], &str); 7] = [
        (&[dir, "--block-size", "1000"], "--block-size"),
        (&[dir, "--size", "0"], "--size"),
        (&[dir, "--size", "900T"], "free"),
        (&["/nonexistent/place"], "no such"),
        (&[plain_s], "a regular file"),
        (&["--read-only", plain_s], "not data sinkrate verify wrote"),
        (&["--read-only", dir], "not data sinkrate verify wrote"),
    ];
    for (args, words) in cases {
        let (code, _, stderr) = verify(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
        assert_eq!(
            common::files_in(d.path()),
            vec!["notes.txt".to_string()],
            "{args:?}"
        );
    }
    // A run without --keep leaves nothing behind.
    let (code, v, _) = verify(&[dir, "--size", "1M", "--block-size", "64K"]);
    assert_eq!(
        (code, &v["verdict"]),
        (Some(0), &serde_json::json!("verified"))
    );
    assert_eq!(v["kept"], false);
    assert_eq!(common::files_in(d.path()), vec!["notes.txt".to_string()]);
    // Memory is not storage.
    if Path::new("/dev/shm").is_dir() {
        let (code, _, stderr) = verify(&["/dev/shm"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("memory"), "{stderr}");
    }
}

/// A card that wraps: from block 24 on, reads return blocks 0 to 7 (as a fake card's
/// controller maps writes past its real capacity onto the start).
#[test]
fn a_wrap_around_is_named_with_the_size_the_device_seems_to_hold() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let file = kept_run(d.path(), 32);
    let head: Vec<u8> = (0..8).flat_map(|n| block_of(&file, n)).collect();
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open");
    f.write_all_at(&head, (24 * BLOCK) as u64).expect("write");
    f.sync_all().expect("sync");
    let (code, v, _) = verify(&["--read-only", file.to_str().expect("utf8")]);
    assert_eq!(code, Some(1));
    assert_eq!(v["counts"]["misplaced"], 8);
    let text = v["verdict_text"].as_str().expect("text");
    assert!(
        text.contains("from 1.5 MiB on, reads return what was written 1.5 MiB earlier")
            && text.contains("seems to hold only about 1.5 MiB"),
        "{text}"
    );
}

/// Ctrl-C while writing: exit 130, and the run's file is gone.
#[test]
fn interrupted_while_writing_removes_its_file() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let child = Command::new(sinkrate_path())
        .args(["verify", "--progress", "never", "--size", "2G"])
        .arg(d.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(common::files_in(d.path()).is_empty());
}

/// A run stopped while reading has verified nothing: `failed` in its JSON with the error, the
/// blocks checked before counted, exit 2; never `verified`.
#[test]
fn interrupted_while_reading_is_a_failed_run() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let (code, v, stderr) = verify(&[d.path().to_str().expect("utf8"), "--size", "1G", "--keep"]);
    assert_eq!(code, Some(0), "{stderr}");
    let file = v["data_path"].as_str().expect("data_path").to_string();
    let child = Command::new(sinkrate_path())
        .args([
            "verify",
            "--progress",
            "never",
            "--output-format",
            "json",
            "--read-only",
        ])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"], "failed");
    let what = v["error"]["what"].as_str().expect("error set");
    assert!(what.starts_with("interrupted"), "{what}");
    assert!(v["counts"]["ok"].as_u64().expect("ok") < 1024);
    assert!(
        std::path::Path::new(&file).exists(),
        "read-only keeps the data"
    );
}
