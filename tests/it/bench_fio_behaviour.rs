//! Options that change how a job runs or what it records, beside fio on the same jobs:
//! gtod_reduce and disable_*, random_generator=lfsr, allrandrepeat, fadvise_hint,
//! create_on_open, file_service_type; iodepth_low and openfiles where sinkrate differs.

use crate::common;
use crate::common::FioOutput;

use std::path::Path;
use std::process::Command;

use common::{fio_json, fio_or_skip, sinkrate_json};

fn both_json(args: &[&str]) -> [serde_json::Value; 2] {
    let (a, b) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    // At once: nothing compared here depends on timing.
    std::thread::scope(|s| {
        let fio = s.spawn(|| fio_json(a.path(), args));
        let ours = sinkrate_json(b.path(), args);
        [fio.join().expect("fio's run"), ours]
    })
}

/// (slat N, clat N, lat N, bw samples) of job 0's reads.
fn recorded(v: &serde_json::Value) -> [u64; 4] {
    let r = &v["jobs"][0]["read"];
    [
        r["slat_ns"]["N"].as_u64().unwrap_or(u64::MAX),
        r["clat_ns"]["N"].as_u64().unwrap_or(u64::MAX),
        r["lat_ns"]["N"].as_u64().unwrap_or(u64::MAX),
        r["bw_samples"].as_u64().unwrap_or(u64::MAX),
    ]
}

/// gtod_reduce switches off every latency and bandwidth figure; each disable_* option its
/// own, as fio's.
#[test]
fn switched_off_measurements_are_absent_as_in_fio() {
    if !fio_or_skip("switched_off_measurements_are_absent_as_in_fio") {
        return;
    }
    // Each option in a pair of runs of its own, all at once: only which figures exist is
    // compared, never how many samples each tool took.
    let offs = [
        "--gtod_reduce=1",
        "--disable_clat=1",
        "--disable_lat=1",
        "--disable_slat=1",
        "--disable_bw_measurement=1",
    ];
    let runs = common::each_at_once(&offs, offs.len(), |off| {
        let args = [
            "--name=off",
            "--ioengine=libaio",
            "--iodepth=4",
            "--filename=offfile",
            "--size=8m",
            "--rw=randread",
            "--time_based",
            "--runtime=1200ms",
            off,
        ];
        (*off, both_json(&args))
    });
    for (off, [fio, ours]) in runs {
        let (theirs, mine) = (recorded(&fio), recorded(&ours));
        let present = |r: [u64; 4]| r.map(|n| n > 0);
        assert_eq!(
            present(mine),
            present(theirs),
            "{off}: fio {theirs:?}, sinkrate {mine:?}"
        );
        let ios = ours["jobs"][0]["read"]["total_ios"].as_u64().unwrap_or(0);
        assert!(ios > 0, "{off}");
    }
}

fn run_in(fio: bool, dir: &Path, args: &[&str]) {
    let status = if fio {
        Ok(Command::new("fio")
            .current_dir(dir)
            .args(args)
            .fio_output()
            .status)
    } else {
        Command::new(common::sinkrate_path())
            .current_dir(dir)
            .args(["bench", "--eta=never"])
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
    };
    assert!(status.expect("runs").success(), "fio={fio} {args:?}");
}

/// random_generator=lfsr visits every block once per pass even with norandommap (the
/// default generator then repeats blocks); allrandrepeat makes runs repeat even with
/// randrepeat=0.
#[test]
fn lfsr_and_allrandrepeat_shape_offsets_as_fios_do() {
    if !fio_or_skip("lfsr_and_allrandrepeat_shape_offsets_as_fios_do") {
        return;
    }
    let base = [
        "--name=gen",
        "--filename=genfile",
        "--size=1m",
        "--bs=4k",
        "--rw=randread",
        "--norandommap",
        "--write_lat_log=gen",
        "--log_offset=1",
    ];
    for fio in [true, false] {
        let who = if fio { "fio" } else { "sinkrate" };
        let d = tempfile::tempdir().expect("tmp");
        let distinct = |generator: &str| {
            let g = format!("--random_generator={generator}");
            let mut args = base.to_vec();
            args.push(&g);
            run_in(fio, d.path(), &args);
            let mut o = common::logged_offsets(d.path(), "gen", 1);
            assert_eq!(o.len(), 256, "{who} {generator}");
            o.sort_unstable();
            o.dedup();
            o.len()
        };
        assert_eq!(distinct("lfsr"), 256, "{who}: lfsr visits each block once");
        assert!(
            distinct("tausworthe") < 256,
            "{who}: tausworthe repeats blocks"
        );
        let twice = |extra: &[&str]| {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            run_in(fio, d.path(), &args);
            let first = common::logged_offsets(d.path(), "gen", 1);
            run_in(fio, d.path(), &args);
            first == common::logged_offsets(d.path(), "gen", 1)
        };
        assert!(
            twice(&["--randrepeat=0", "--allrandrepeat=1"]),
            "{who}: allrandrepeat repeats"
        );
        assert!(
            !twice(&["--randrepeat=0"]),
            "{who}: randrepeat=0 alone differs"
        );
    }
}

/// Pages of `file` in the page cache, from util-linux's fincore.
fn cached_pages(file: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output=PAGES"])
        .arg(file)
        .output()
        .expect("fincore runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(u64::MAX)
}

/// fadvise_hint=random tells the kernel not to read ahead, so sequential reads bring no
/// more than the job asks into the page cache; without a hint the kernel reads ahead. The
/// page cache (fincore) shows which, for both tools.
#[test]
fn fadvise_hint_reaches_the_kernel_as_fios_does() {
    if !fio_or_skip("fadvise_hint_reaches_the_kernel_as_fios_does") || !common::have("fincore") {
        return;
    }
    for fio in [true, false] {
        let who = if fio { "fio" } else { "sinkrate" };
        let d = tempfile::tempdir().expect("tmp");
        let file = d.path().join("hint");
        std::fs::write(&file, vec![7u8; 32 << 20]).expect("file");
        // Written back, so that invalidate=1 can drop it from the cache before each run.
        std::fs::File::open(&file)
            .and_then(|f| f.sync_all())
            .expect("fsync");
        let pages = |hint: &str| {
            let h = format!("--fadvise_hint={hint}");
            run_in(
                fio,
                d.path(),
                &[
                    "--name=hint",
                    "--filename=hint",
                    "--rw=read",
                    "--bs=4k",
                    "--number_ios=200",
                    "--invalidate=1",
                    &h,
                ],
            );
            cached_pages(&file)
        };
        let (advised, unadvised) = (pages("random"), pages("0"));
        eprintln!("{who}: {advised} pages cached with the hint, {unadvised} without");
        assert!(advised <= 260, "{who}: {advised} pages for 200 reads");
        assert!(
            unadvised > 2 * advised,
            "{who}: {unadvised} pages without the hint"
        );
    }
}

/// create_on_open leaves the file to grow by the job's writes; without it the file is laid
/// out (allocated) first. file_service_type decides which files a short job writes.
#[test]
fn create_on_open_and_file_service_type_shape_files_as_fios_do() {
    if !fio_or_skip("create_on_open_and_file_service_type_shape_files_as_fios_do") {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    for (service, expect) in [
        ("sequential", [256 << 10, 0, 0, 0]),
        ("roundrobin", [64 << 10; 4]),
        ("random", [0; 4]),
    ] {
        let mut sizes = Vec::new();
        for fio in [true, false] {
            let d = tempfile::tempdir().expect("tmp");
            let s = format!("--file_service_type={service}");
            run_in(
                fio,
                d.path(),
                &[
                    "--name=svc",
                    "--filename=f0:f1:f2:f3",
                    "--filesize=1m",
                    "--rw=write",
                    "--bs=4k",
                    "--number_ios=64",
                    "--create_on_open=1",
                    "--unlink=0",
                    &s,
                ],
            );
            let got: Vec<u64> = (0..4)
                .map(|i| {
                    std::fs::metadata(d.path().join(format!("f{i}")))
                        .map(|m| m.len())
                        .unwrap_or(0)
                })
                .collect();
            if service != "random" {
                assert_eq!(got, expect, "fio={fio} {service}");
            }
            assert!(got.iter().sum::<u64>() > 0, "fio={fio} {service}");
            sizes.push(got);
        }
        if service == "random" {
            // Random service spreads 64 writes over the files: each gets some.
            for got in &sizes {
                assert!(got.iter().filter(|s| **s > 0).count() >= 3, "{got:?}");
            }
        }
    }
    // Without create_on_open both lay the file out first: all of it is allocated.
    for fio in [true, false] {
        let d = tempfile::tempdir().expect("tmp");
        run_in(
            fio,
            d.path(),
            &[
                "--name=lay",
                "--filename=laid",
                "--size=8m",
                "--rw=write",
                "--number_ios=16",
                "--unlink=0",
            ],
        );
        let m = std::fs::metadata(d.path().join("laid")).expect("file");
        assert_eq!(m.len(), 8 << 20, "fio={fio}");
        assert!(
            m.blocks() * 512 >= 8 << 20,
            "fio={fio}: allocated {}",
            m.blocks() * 512
        );
    }
}

/// iodepth_low below iodepth (fio drains the queue before refilling) is refused, as is
/// openfiles below the job's file count: sinkrate refills at once and keeps files open.
#[test]
fn iodepth_low_and_openfiles_below_what_sinkrate_does_are_refused() {
    let d = tempfile::tempdir().expect("tmp");
    for (args, expect) in [
        (
            [
                "--name=o",
                "--nrfiles=4",
                "--size=1m",
                "--openfiles=1",
                "--ioengine=psync",
            ],
            "openfiles=1 with 4 files",
        ),
        (
            [
                "--name=o",
                "--size=1m",
                "--ioengine=libaio",
                "--iodepth=16",
                "--iodepth_low=2",
            ],
            "iodepth_low=2 below iodepth=16",
        ),
    ] {
        common::refuses(d.path(), &args, &[expect]);
    }
}

/// Files stay as fio's (`unlink=0` by default): the same files after a "pre" job in fio's
/// directory and in sinkrate's; a "post" job reads and verifies what the pre job wrote; the
/// same job file runs again into its own kept file; `unlink=1` removes it. A user's file at
/// a job's default name, or a kept file the user replaced since, is refused and left as it
/// was.
#[test]
fn files_stay_as_fios_and_only_a_kept_file_is_written_again() {
    if !fio_or_skip("files_stay_as_fios_and_only_a_kept_file_is_written_again") {
        return;
    }
    let pre = [
        "--name=pre",
        "--rw=write",
        "--bs=64k",
        "--size=1m",
        "--verify=crc32c",
        "--do_verify=0",
    ];
    let post = [
        "--name=pre",
        "--rw=read",
        "--bs=64k",
        "--size=1m",
        "--verify=crc32c",
    ];
    let (f, s) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    fio_json(f.path(), &pre);
    let wrote = sinkrate_json(s.path(), &pre);
    // Both also save the job's verify state (verify_state_save=1, fio's default).
    let fios = common::files_in(f.path());
    assert_eq!(common::files_in(s.path()), fios);
    assert_eq!(fios, ["local-pre-0-verify.state", "pre.0.0"]);
    let kept_note = wrote["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("kept 1 file(s) the jobs made, 1.00MiB in all (pre.0.0)"));
    assert!(kept_note.is_some(), "{}", wrote["notices"]);
    // The post job reads and verifies what the pre job left, in each tool's directory.
    for (dir, v) in [
        (f.path(), fio_json(f.path(), &post)),
        (s.path(), sinkrate_json(s.path(), &post)),
    ] {
        assert_eq!(v["jobs"][0]["error"], 0, "{}", dir.display());
        assert_eq!(v["jobs"][0]["read"]["io_bytes"], 1 << 20);
    }
    // The same job file again: it writes into its own kept file.
    sinkrate_json(s.path(), &pre);
    assert_eq!(
        common::files_in(s.path()),
        ["local-pre-0-verify.state", "pre.0.0"]
    );
    // unlink=1 removes it, kept from an earlier run as it is; the state stays, as fio's.
    let unlinked = [&pre[..], &["--unlink=1"]].concat();
    sinkrate_json(s.path(), &unlinked);
    assert_eq!(common::files_in(s.path()), ["local-pre-0-verify.state"]);
    std::fs::remove_file(s.path().join("local-pre-0-verify.state")).expect("remove");

    // A user's file at the default name: refused, untouched (fio would write into it).
    let users = s.path().join("pre.0.0");
    std::fs::write(&users, b"a user's own").expect("write");
    let refused = common::sinkrate()
        .current_dir(s.path())
        .args(pre)
        .output()
        .expect("runs");
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("was there before this run"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(std::fs::read(&users).expect("read"), b"a user's own");
    std::fs::remove_file(&users).expect("remove");
    // A kept file the user replaced since (removed and written anew): a user's again.
    sinkrate_json(s.path(), &pre);
    std::fs::remove_file(&users).expect("remove");
    std::fs::write(&users, b"replaced").expect("write");
    for args in [&pre[..], &unlinked[..]] {
        let refused = common::sinkrate()
            .current_dir(s.path())
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(std::fs::read(&users).expect("read"), b"replaced");
}

/// A sync engine's total latency includes the I/O's making ready (fio's start_time to
/// issue), so `lat` is above `clat` in each tool, and neither has submission latency.
#[test]
fn a_sync_engines_lat_is_above_its_clat_as_fios() {
    if !fio_or_skip("a_sync_engines_lat_is_above_its_clat_as_fios") {
        return;
    }
    let [fio, ours] = both_json(&[
        "--name=s",
        "--ioengine=psync",
        "--rw=write",
        "--bs=64k",
        "--size=16m",
        "--unlink=1",
    ]);
    for (who, v) in [("fio", &fio), ("sinkrate", &ours)] {
        let w = &v["jobs"][0]["write"];
        let (lat, clat) = (
            w["lat_ns"]["mean"].as_f64().expect("lat"),
            w["clat_ns"]["mean"].as_f64().expect("clat"),
        );
        assert!(lat > clat, "{who}: lat {lat} ns, clat {clat} ns");
        assert_eq!(w["slat_ns"]["N"], 0, "{who}");
        assert_eq!(w["lat_ns"]["N"], w["clat_ns"]["N"], "{who}");
    }
}

/// Clones sharing one file need it as far as the furthest clone reaches (offset_increment),
/// not as far as the first: a set whose last clone would write past the free space is
/// refused before any file, in one line naming the job, the file system's free space read
/// apart from sinkrate (statvfs by `stat -f`).
#[test]
fn clones_of_one_file_need_the_space_their_furthest_reaches() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let dir = d.path().to_str().expect("utf8");
    let fs = common::run("stat", &["-f", "-c", "%a %S", dir]);
    let mut fields = fs.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
    let free = fields.next().unwrap_or(0) * fields.next().unwrap_or(0);
    assert!(free > 0, "{fs}");
    let step = format!("--offset_increment={}", free / 2);
    common::refuses(
        d.path(),
        &[
            "--name=stripes",
            "--filename=shared",
            "--rw=write",
            "--size=1m",
            "--numjobs=4",
            &step,
        ],
        &["stripes", "not enough free space"],
    );
}

/// A job that reads and writes chooses each I/O's direction as fio's does, from fio's own
/// generator seeded as fio seeds it: the same count of reads and writes as fio, to the I/O,
/// for any rwmixread, any randseed, each numjobs clone (its own seed), with verify's
/// read-backs not counted (fio's harness test t0008 expects 16,568 KiB written).
#[test]
fn reads_and_writes_of_a_mixed_job_are_fios_count_for_count() {
    if !fio_or_skip("reads_and_writes_of_a_mixed_job_are_fios_count_for_count") {
        return;
    }
    let base = ["--name=mix", "--bs=4k", "--size=32m"];
    for case in [
        &["--rw=randrw", "--rwmixread=70"][..],
        &["--rw=readwrite", "--rwmixread=13", "--randseed=1234"],
        &["--rw=randrw", "--numjobs=2"],
        &[
            "--rw=readwrite",
            "--verify=crc32c",
            "--verify_backlog=1",
            "--direct=1",
        ],
    ] {
        let args: Vec<&str> = base.iter().chain(case).copied().collect();
        let [fio, ours] = both_json(&args);
        let ios = |v: &serde_json::Value| -> Vec<(u64, u64)> {
            v["jobs"]
                .as_array()
                .expect("jobs")
                .iter()
                .map(|j| {
                    (
                        j["read"]["total_ios"].as_u64().expect("reads"),
                        j["write"]["total_ios"].as_u64().expect("writes"),
                    )
                })
                .collect()
        };
        assert_eq!(ios(&ours), ios(&fio), "{case:?}");
    }
}
