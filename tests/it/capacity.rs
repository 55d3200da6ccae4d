//! `sinkrate verify --capacity` on emulated counterfeit cards (sinkrate's nbdkit plugin),
//! checked against what the emulator was told and against the bytes of the card's backing
//! file: the verdict and real size, the time, and every byte put back (also after SIGKILL).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{sinkrate_path, with_root, SlowDev};

/// The undo journals live in one machine-wide directory: these tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial(test: &str, f: impl FnOnce()) {
    let _guard = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    with_root(test, &["nbdkit", "nbdfuse", "losetup"], f);
}

fn verify(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(sinkrate_path())
        .arg("verify")
        .args(args)
        .output()
        .expect("sinkrate verify runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code(),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A backing file of `size` bytes whose every MiB differs (a pattern the probe's restore
/// must give back exactly), and its SHA-256.
fn patterned_backing(dir: &Path, size: u64) -> (PathBuf, String) {
    use std::io::Write;
    let path = dir.join("flash.img");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("test setup"));
    let mut block = vec![0u8; 1 << 20];
    for mib in 0..size >> 20 {
        for (i, b) in block.iter_mut().enumerate() {
            *b = (i as u64 ^ (mib * 2_654_435_761)).wrapping_mul(31) as u8;
        }
        f.write_all(&block).expect("test setup");
    }
    f.flush().expect("test setup");
    drop(f);
    let sum = sha256(&path);
    (path, sum)
}

fn sha256(path: &Path) -> String {
    common::run("sha256sum", &[path.to_str().expect("test setup")])
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

fn device_of(link: &Path) -> String {
    std::fs::read_link(link)
        .expect("--fs none leaves a link to the device")
        .display()
        .to_string()
}

#[test]
fn a_1g_card_that_says_8g_is_caught_in_under_a_minute_and_left_as_it_was() {
    serial("a_1g_card_that_says_8g_is_caught", || {
        let dir = tempfile::tempdir().expect("test setup");
        let (backing, before) = patterned_backing(dir.path(), 1 << 30);
        let card = SlowDev::new(&[
            "--fs",
            "none",
            "--model",
            "sd-class10",
            "--size",
            "1G",
            "--fake-capacity",
            "8G",
            "--backing-file",
            backing.to_str().expect("test setup"),
            "--force",
        ]);
        let link = card.path().to_str().expect("test setup").to_string();
        let started = Instant::now();
        let (code, json, stderr) = verify(&["--capacity", &link, "--output-format", "json"]);
        let took = started.elapsed();
        assert_eq!(code, Some(1), "a fake exits 1: {stderr}");
        assert_eq!(json["kind"], "capacity");
        let r = &json;
        assert_eq!(r["verdict"], "fake", "{r}");
        assert_eq!(r["behaviour"], "wraps");
        assert_eq!(r["reported_bytes"], 8u64 << 30);
        assert_eq!(r["real_bytes"], 1u64 << 30, "the real size, to the byte");
        assert_eq!(r["restore"], "restored");
        assert!(
            r["verdict_text"]
                .as_str()
                .is_some_and(|t| t.contains("holds 1.07 GB") && t.contains("overwrite the start")),
            "{r}"
        );
        assert!(took < Duration::from_secs(60), "took {took:?}");
        // Read back through the type that wrote it, and shown by the report as a capacity
        // run: the verdict and the size the card really holds.
        let bytes = serde_json::to_vec(r).expect("json");
        let run: sinkrate_model::Envelope<sinkrate_model::verify::CapacityReport> =
            sinkrate_model::Envelope::from_json(&bytes, sinkrate_model::RunKind::Capacity)
                .expect("reads as a capacity result");
        assert_eq!(
            serde_json::to_value(&run).expect("json"),
            *r,
            "unchanged on the way"
        );
        let html = common::report_html(dir.path(), &bytes);
        for words in ["fake capacity", "1.00 GiB", "8.00 GiB", "restored"] {
            assert!(html.contains(words), "the report lacks {words:?}");
        }
        assert!(
            r["bytes_written"].as_u64().is_some_and(|b| b < 64 << 20),
            "a probe, not a full write: {r}"
        );
        drop(card);
        assert_eq!(
            sha256(&backing),
            before,
            "every byte the probe overwrote was put back"
        );
        eprintln!("caught in {took:?}");
    });
}

#[test]
fn a_card_that_drops_writes_past_its_end_and_a_genuine_card() {
    serial("a_card_that_drops_writes", || {
        let fake = SlowDev::new(&[
            "--fs",
            "none",
            "--write-rate",
            "100M",
            "--size",
            "300M",
            "--fake-capacity",
            "4G",
            "--fake-mode",
            "drop",
        ]);
        let link = fake.path().to_str().expect("test setup").to_string();
        let (code, json, stderr) = verify(&["--capacity", &link, "--output-format", "json"]);
        assert_eq!(code, Some(1), "{stderr}");
        let r = &json;
        assert_eq!(r["behaviour"], "drops", "{r}");
        assert_eq!(r["real_bytes"], 300u64 << 20);
        assert!(r["verdict_text"]
            .as_str()
            .is_some_and(|t| t.contains("are lost")));
        drop(fake);

        let genuine = SlowDev::new(&[
            "--fs",
            "none",
            "--write-rate",
            "100M",
            "--service-time",
            "200us",
            "--size",
            "512M",
        ]);
        let link = genuine.path().to_str().expect("test setup").to_string();
        let out = Command::new(sinkrate_path())
            .args(["verify", "--capacity", &link])
            .output()
            .expect("test setup");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains("VERDICT  GENUINE"), "{text}");
        assert!(
            text.contains("holds the 536.9 MB (512.0 MiB) it reports"),
            "{text}"
        );
    });
}

#[test]
fn a_probe_killed_half_way_is_put_back_by_the_next_verify() {
    serial("a_probe_killed_half_way", || {
        let dir = tempfile::tempdir().expect("test setup");
        let (backing, before) = patterned_backing(dir.path(), 512 << 20);
        let card = SlowDev::new(&[
            "--fs",
            "none",
            "--write-rate",
            "8M",
            "--size",
            "512M",
            "--fake-capacity",
            "16G",
            "--backing-file",
            backing.to_str().expect("test setup"),
            "--force",
        ]);
        let link = card.path().to_str().expect("test setup").to_string();
        let mut child = Command::new(sinkrate_path())
            .args(["verify", "--capacity", &link])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("test setup");
        // At 8 MB/s: about 4 s saving what it will overwrite, then as long writing. It is
        // killed once its writes reach the card, however long a busy machine takes to get
        // there (the card's backing file's mtime says when), and before it ends.
        let modified = || {
            std::fs::metadata(&backing)
                .and_then(|m| m.modified())
                .expect("test setup")
        };
        let untouched = modified();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                child.try_wait().expect("test setup").is_none(),
                "still probing when its first writes landed"
            );
            if modified() != untouched {
                // Some of its writes, not all: half a second at 8 MB/s.
                std::thread::sleep(Duration::from_millis(500));
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the probe wrote nothing in 120 s"
            );
        }
        child.kill().expect("test setup");
        child.wait().expect("test setup");
        assert_ne!(sha256(&backing), before, "the killed probe left its writes");
        let (code, _, stderr) = verify(&["--capacity", &link, "--output-format", "json"]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("put back") && stderr.contains(&device_of(card.path())),
            "says what it put back: {stderr}"
        );
        drop(card);
        assert_eq!(
            sha256(&backing),
            before,
            "the journal of the killed run was played back"
        );
    });
}

#[test]
fn a_killed_probes_journal_is_never_played_onto_a_card_reused_since() {
    serial(
        "a_killed_probes_journal_is_never_played_onto_a_reused_card",
        || {
            let dir = tempfile::tempdir().expect("test setup");
            // An honest card (a filesystem on a counterfeit one wraps onto itself).
            let card = SlowDev::new(&["--fs", "none", "--write-rate", "8M", "--size", "256M"]);
            let link = card.path().to_str().expect("test setup").to_string();
            let device = device_of(card.path());
            let mut child = Command::new(sinkrate_path())
                .args(["verify", "--capacity", &link])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("test setup");
            // Killed once its undo journal exists and the probe is writing (the whole probe
            // of an honest 256 MiB card takes about 2 s).
            let undo = std::env::var_os("SINKRATE_STATE_DIR")
                .map(|d| Path::new(&d).join("capacity-undo"))
                .unwrap_or_else(|| Path::new("/var/lib/sinkrate/capacity-undo").to_path_buf());
            let undo = undo.as_path();
            let started = Instant::now();
            while std::fs::read_dir(undo).map_or(0, |d| d.count()) == 0 {
                assert!(started.elapsed() < Duration::from_secs(20), "no journal");
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(500));
            child.kill().expect("test setup");
            child.wait().expect("test setup");
            // The card is reused: a new filesystem with a file on it.
            common::mkfs("ext4", Path::new(&device));
            let mnt = dir.path().join("mnt");
            std::fs::create_dir(&mnt).expect("test setup");
            common::mount(Path::new(&device), &mnt, "");
            std::fs::write(mnt.join("f"), b"written after the probe").expect("test setup");
            common::run("umount", &[mnt.to_str().expect("test setup")]);
            // The next, unrelated verify must touch nothing, say so, and keep the journal.
            let plain = dir.path().join("plain");
            std::fs::create_dir(&plain).expect("test setup");
            let (_, _, stderr) = verify(&[plain.to_str().expect("utf8"), "--size", "4M"]);
            assert!(stderr.contains("was written since"), "{stderr}");
            assert!(!stderr.contains("put back 8"), "{stderr}");
            let journal = stderr
                .split("the journal is kept: ")
                .nth(1)
                .and_then(|t| t.split(" (remove it").next())
                .expect("names its journal")
                .to_string();
            assert!(Path::new(&journal).exists(), "{journal}");
            std::fs::remove_file(&journal).expect("the test removes the kept journal");
            common::run("e2fsck", &["-fn", &device]);
            common::mount(Path::new(&device), &mnt, "ro");
            let read = std::fs::read(mnt.join("f"));
            common::run("umount", &[mnt.to_str().expect("test setup")]);
            assert_eq!(read.expect("the file survived"), b"written after the probe");
        },
    );
}

#[test]
fn bad_input_gets_one_line_and_nothing_is_written() {
    serial("capacity_bad_input", || {
        let dir = tempfile::tempdir().expect("test setup");
        let file = dir.path().join("plain");
        std::fs::write(&file, b"keep me").expect("test setup");
        let (code, _, stderr) = verify(&["--capacity", file.to_str().expect("test setup")]);
        assert_eq!(code, Some(2));
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("neither a block device"), "{stderr}");
        assert_eq!(std::fs::read(&file).expect("test setup"), b"keep me");

        let (code, _, stderr) = verify(&["--destructive", "/dev/null"]);
        assert_eq!(code, Some(2), "{stderr}");

        // Device models that cannot be: one line each, nothing built.
        let link = dir.path().join("card");
        for (args, says) in [
            (
                vec!["--size", "2G", "--fake-capacity", "1G"],
                "must be above --size",
            ),
            (
                vec!["--fs", "none", "--mount-opts", "noatime"],
                "do not apply",
            ),
            (vec!["--gc-pauses", "250ms"], "PAUSE/BYTES"),
            (
                vec!["--slc-cache", "512M@5M"],
                "above the card's --write-rate",
            ),
            (
                vec!["--service-time", "1ms", "--burstiness", "2"],
                "token bucket",
            ),
        ] {
            let out = Command::new(sinkrate_path())
                .args([
                    "emulate",
                    "up",
                    link.to_str().expect("utf8"),
                    "--write-rate",
                    "20M",
                ])
                .args(&args)
                .output()
                .expect("runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(std::fs::symlink_metadata(&link).is_err(), "nothing made");
        }

        // A mounted card, and the same card's device holding ext4 once unmounted.
        let mounted = SlowDev::new(&["--write-rate", "100M", "--size", "64M"]);
        let dev = format!("/dev/{}", mounted.device_name());
        let (code, _, stderr) = verify(&["--capacity", &dev]);
        assert_eq!(code, Some(2));
        assert!(stderr.contains("mounted"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        common::run("umount", &[mounted.path().to_str().expect("test setup")]);
        let (code, _, stderr) = verify(&["--capacity", &dev]);
        assert_eq!(code, Some(2));
        assert!(
            stderr.contains("refusing to probe")
                && stderr.contains("ext2/3/4")
                && stderr.contains("--force"),
            "{stderr}"
        );
        // The filesystem is still there: nothing was written.
        let probe = common::run("blkid", &["-o", "value", "-s", "TYPE", &dev]);
        assert_eq!(probe, "ext4");
    });
}

/// The fill-and-check of a mounted card's free space, checked against what the emulator was
/// told it holds.
fn fill(dir: &Path) -> (Option<i32>, serde_json::Value, String) {
    verify(&[
        "--capacity",
        dir.to_str().expect("test setup"),
        "--output-format",
        "json",
    ])
}

fn mib(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key}: {v}")) >> 20
}

#[test]
fn capacity_of_a_mounted_card_by_filling_it() {
    serial("capacity_of_a_mounted_card_by_filling_it", || {
        let genuine = SlowDev::new(&["--size", "96M", "--write-rate", "200M", "--fs", "vfat"]);
        let (code, v, stderr) = fill(genuine.path());
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(v["verdict"], "genuine", "{v}");
        assert!(mib(&v, "written_bytes") > 80, "{v}");
        assert_eq!(v["ok_bytes"], v["written_bytes"]);
        assert!(
            common::files_in(genuine.path()).is_empty(),
            "its files are removed"
        );
        drop(genuine);

        // 128 MiB that says 512 MiB, dropping what goes past: the first ~127 MiB come back.
        let dropping = SlowDev::new(&[
            "--size",
            "128M",
            "--fake-capacity",
            "512M",
            "--fake-mode",
            "drop",
            "--write-rate",
            "200M",
            "--fs",
            "vfat",
        ]);
        let (code, v, stderr) = fill(dropping.path());
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(v["verdict"], "fake", "{v}");
        assert!((100..=128).contains(&mib(&v, "ok_bytes")), "{v}");
        assert!(mib(&v, "lost_bytes") > 300, "{v}");
        assert!(
            v["verdict_text"]
                .as_str()
                .is_some_and(|t| t.contains("not the 0.54 GB")),
            "{v}"
        );
        assert!(
            common::files_in(dropping.path()).is_empty(),
            "its files are removed"
        );
        drop(dropping);

        // Wrapping: the fill overwrites the filesystem's own tables; still caught.
        let wrapping = SlowDev::new(&[
            "--size",
            "128M",
            "--fake-capacity",
            "512M",
            "--write-rate",
            "200M",
            "--fs",
            "vfat",
        ]);
        let (code, v, stderr) = fill(wrapping.path());
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(v["verdict"], "fake", "{v}");
        drop(wrapping);

        // On ext4 (a card a quarter larger than it is: a larger lie leaves no mountable
        // journal): caught too, and an error the broken filesystem answers with, if any, is
        // named in the verdict rather than failing the check.
        let wrapping = SlowDev::new(&[
            "--size",
            "256M",
            "--fake-capacity",
            "320M",
            "--write-rate",
            "200M",
            "--fs",
            "ext4",
        ]);
        let (code, v, stderr) = fill(wrapping.path());
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(v["verdict"], "fake", "{v}");
        assert!(v["error"].is_null(), "{v}");
    });
}

#[test]
fn capacity_fill_bad_input() {
    serial("capacity_fill_bad_input", || {
        let d = tempfile::tempdir().expect("test setup");
        let small = d.path().join("small");
        let _fs = common::MemoryFs::new(&small, "8m");
        let (code, _, stderr) = fill(&small);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(common::files_in(&small).is_empty());
        let (code, _, stderr) = verify(&[
            "--capacity",
            d.path().to_str().expect("test setup"),
            "--destructive",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("apply to a device probe"), "{stderr}");
    });
}
