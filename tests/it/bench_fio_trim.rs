//! Trims beside fio 3.33: `rw=trim|randtrim|trimwrite|randtrimwrite` discard a block
//! device's blocks (BLKDISCARD) on every engine, and fio's falloc engine punches holes in a
//! file. Checked against what did not come from either tool: the blocks the loop device's
//! image still holds, and the device's bytes.

use crate::common;

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{fio_json, refuses, sinkrate_json, with_root, LoopDevice};

const MIB: u64 = 1 << 20;

/// Fills the device's first `bytes` with data that is not zeros and makes it reach the
/// image, so that a discard shows as blocks given back.
fn fill(dev: &Path, bytes: u64) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .expect("open device");
    let chunk: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
    for _ in 0..bytes / MIB {
        f.write_all(&chunk).expect("fill");
    }
    f.sync_all().expect("sync");
}

/// 512-byte blocks the image file holds.
fn image_blocks(loopdev: &LoopDevice) -> u64 {
    std::fs::metadata(loopdev.dir.path().join("disk.img"))
        .expect("image")
        .blocks()
}

/// Megabytes of the device's first `bytes` that read back as zeros.
fn zero_mib(dev: &Path, bytes: u64) -> u64 {
    let mut f = std::fs::File::open(dev).expect("open device");
    f.seek(SeekFrom::Start(0)).expect("seek");
    let mut buf = vec![0u8; MIB as usize];
    let mut zeros = 0;
    for _ in 0..bytes / MIB {
        f.read_exact(&mut buf).expect("read");
        zeros += u64::from(buf.iter().all(|b| *b == 0));
    }
    zeros
}

/// What one tool's run did: trim and write bytes and I/Os, error, and what the image and
/// the device show afterwards.
#[derive(Debug, PartialEq)]
struct Outcome {
    trim: (u64, u64),
    write: (u64, u64),
    error: i64,
    image_blocks: u64,
    zero_mib: u64,
}

fn outcome(v: &serde_json::Value, loopdev: &LoopDevice) -> Outcome {
    let job = &v["jobs"][0];
    let dir = |d: &str| {
        (
            job[d]["io_bytes"].as_u64().expect("io_bytes"),
            job[d]["total_ios"].as_u64().expect("total_ios"),
        )
    };
    Outcome {
        trim: dir("trim"),
        write: dir("write"),
        error: job["error"].as_i64().expect("error"),
        image_blocks: image_blocks(loopdev),
        zero_mib: zero_mib(&loopdev.path, 16 * MIB),
    }
}

#[test]
fn trims_discard_a_block_devices_blocks_as_fios_do() {
    with_root(
        "trims_discard_a_block_devices_blocks_as_fios_do",
        &["fio"],
        || {
            let loopdev = LoopDevice::new("32M", false);
            let dev = loopdev.path.to_str().expect("utf8").to_string();
            let work = tempfile::tempdir().expect("tmp");
            let cases: [(&str, &[&str]); 6] = [
                ("trim", &[]),
                ("randtrim", &[]),
                ("trimwrite", &["--end_fsync=1"]),
                ("randtrimwrite", &["--end_fsync=1"]),
                ("randtrim", &["--ioengine=io_uring", "--iodepth=4"]),
                // fio 3.33 hangs at times with io_submit_mode=offload (its documentation
                // calls offload unreliable); sinkrate's is checked against the image below.
                ("randtrim", &["--io_submit_mode=offload", "--iodepth=4"]),
            ];
            for (rw, extra) in cases {
                let filename = format!("--filename={dev}");
                let rw_arg = format!("--rw={rw}");
                let args = [
                    &[
                        "--name=discard",
                        &filename,
                        "--size=16m",
                        "--bs=64k",
                        &rw_arg,
                    ][..],
                    extra,
                ]
                .concat();
                fill(&loopdev.path, 32 * MIB);
                let before = image_blocks(&loopdev);
                let offload = extra.contains(&"--io_submit_mode=offload");
                let fio = (!offload).then(|| outcome(&fio_json(work.path(), &args), &loopdev));
                fill(&loopdev.path, 32 * MIB);
                let ours = outcome(&sinkrate_json(work.path(), &args), &loopdev);
                if let Some(fio) = fio {
                    // The image's extent blocks may differ by one between runs.
                    let same = Outcome {
                        image_blocks: fio.image_blocks,
                        ..ours
                    };
                    assert_eq!(same, fio, "rw={rw} {extra:?}");
                    assert!(ours.image_blocks.abs_diff(fio.image_blocks) <= 16);
                }
                // Independent of both: 16 MiB of the 32 were given back by the trims (and
                // written again by trimwrite's writes). The image's filesystem may add an
                // extent block or two (8 sectors each) once the file has holes.
                let given_back = |o: &Outcome| before as i64 - o.image_blocks as i64;
                let trimmed_blocks = (16 * MIB / 512) as i64;
                if rw.ends_with("write") {
                    assert!(
                        given_back(&ours).abs() <= 16,
                        "{rw}: {ours:?} from {before}"
                    );
                    assert_eq!(ours.zero_mib, 0, "{rw}");
                    assert_eq!(ours.write, (16 * MIB, 256), "{rw}");
                } else {
                    let extra = trimmed_blocks - given_back(&ours);
                    assert!((0..=16).contains(&extra), "{rw}: {ours:?} from {before}");
                    assert_eq!(ours.zero_mib, 16, "{rw}");
                }
                assert_eq!(ours.trim, (16 * MIB, 256), "rw={rw} {extra:?}");
            }

            // fio's log lines carry direction 2 for a trim; both logs hold one line per trim
            // and the same set of offsets (each 64k block once).
            let offsets = |dir: &Path, prefix: &str| {
                let mut v: Vec<(u64, String)> =
                    std::fs::read_to_string(dir.join(format!("{prefix}_lat.1.log")))
                        .expect("log")
                        .lines()
                        .map(|l| {
                            let c: Vec<&str> = l.split(", ").collect();
                            (c[4].parse().expect("offset"), c[2].to_string())
                        })
                        .collect();
                v.sort();
                v
            };
            let filename = format!("--filename={dev}");
            let logged = |prefix: &str| {
                [
                    "--name=discard",
                    filename.as_str(),
                    "--size=16m",
                    "--bs=64k",
                    "--rw=randtrim",
                    "--log_offset=1",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("--write_lat_log={prefix}")])
                .collect::<Vec<String>>()
            };
            let fio_args = logged("fio");
            fio_json(
                work.path(),
                &fio_args.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            let our_args = logged("ours");
            sinkrate_json(
                work.path(),
                &our_args.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            let fio_log = offsets(work.path(), "fio");
            assert_eq!(fio_log.len(), 256);
            assert!(fio_log.iter().all(|(_, d)| d == "2"), "{fio_log:?}");
            assert_eq!(offsets(work.path(), "ours"), fio_log);

            // A trim is guarded like a write: a device holding a filesystem is refused.
            common::mkfs("ext4", &loopdev.path);
            refuses(
                work.path(),
                &["--name=t", &filename, "--size=1m", "--rw=trim"],
                &["refusing to trim", "ext2/3/4", "--allow-mounted-write"],
            );
        },
    );
}

/// fio's falloc engine trims a file by punching holes (FALLOC_FL_PUNCH_HOLE|KEEP_SIZE):
/// a file of data gives its blocks back and keeps its size; a new file is made at the job's
/// size without data, as fio makes it.
#[test]
fn falloc_trims_punch_holes_in_a_file_as_fios_do() {
    if !common::fio_or_skip("falloc_trims_punch_holes_in_a_file_as_fios_do") {
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let file = work.path().join("held");
    let args = [
        "--name=punch",
        "--filename=held",
        "--size=8m",
        "--bs=1m",
        "--rw=randtrim",
        "--ioengine=falloc",
    ];
    let mut seen = Vec::new();
    for tool in ["fio", "sinkrate"] {
        std::fs::write(&file, vec![7u8; 8 * MIB as usize]).expect("data");
        std::fs::File::open(&file)
            .and_then(|f| f.sync_all())
            .expect("sync");
        let v = if tool == "fio" {
            fio_json(work.path(), &args)
        } else {
            sinkrate_json(work.path(), &args)
        };
        let m = std::fs::metadata(&file).expect("kept");
        let trim = &v["jobs"][0]["trim"];
        seen.push((
            trim["io_bytes"].as_u64(),
            trim["total_ios"].as_u64(),
            m.len(),
            m.blocks(),
            std::fs::read(&file).expect("read").iter().all(|b| *b == 0),
        ));
    }
    assert_eq!(seen[0], (Some(8 * MIB), Some(8), 8 * MIB, 0, true));
    assert_eq!(seen[1], seen[0]);
    std::fs::remove_file(&file).expect("rm");
    let v = sinkrate_json(work.path(), &[&args[..], &["--unlink=0"]].concat());
    assert_eq!(v["jobs"][0]["trim"]["io_bytes"].as_u64(), Some(8 * MIB));
    let m = std::fs::metadata(&file).expect("made");
    assert_eq!((m.len(), m.blocks()), (8 * MIB, 0));
}

/// Trims fio cannot do here are refused before anything is written, each in one line.
#[test]
fn trims_that_cannot_run_are_refused_in_one_line() {
    let work = tempfile::tempdir().expect("tmp");
    let d = work.path();
    refuses(
        d,
        &["--name=t", "--filename=plain", "--size=1m", "--rw=trim"],
        &["is not a block device", "ioengine=falloc"],
    );
    refuses(
        d,
        &[
            "--name=t",
            "--filename=plain",
            "--size=1m",
            "--rw=randtrim",
            "--ioengine=mmap",
        ],
        &["rw=randtrim with ioengine=mmap", "has no trim"],
    );
    refuses(
        d,
        &[
            "--name=t",
            "--filename=plain",
            "--size=1m",
            "--rw=trimwrite",
            "--ioengine=falloc",
        ],
        &["rw=trimwrite with ioengine=falloc"],
    );
    refuses(
        d,
        &[
            "--name=t",
            "--filename=plain",
            "--size=1m",
            "--rw=trim",
            "--verify=crc32c",
            "--ioengine=falloc",
        ],
        &["verify=crc32c with rw=trim"],
    );
    refuses(
        d,
        &[
            "--name=t",
            "--filename=plain",
            "--size=1m",
            "--bsrange=4k-8k,4k-8k,4k-16k",
        ],
        &["bsrange", "trim value"],
    );
    refuses(
        d,
        &[
            "--readonly",
            "--name=t",
            "--filename=plain",
            "--size=1m",
            "--rw=randtrim",
            "--ioengine=falloc",
        ],
        &["--readonly refuses every write and trim", "rw=randtrim"],
    );
}
