//! The same job run by fio and by sinkrate: bytes done must match exactly, rates within a
//! tolerance (both tools run here, one after the other, on the same files).

use crate::common;
use crate::common::FioOutput;

use common::{fio_json, fio_or_skip, sinkrate_json};

fn dir_bytes(v: &serde_json::Value, dir: &str) -> u64 {
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j[dir]["io_bytes"].as_u64().expect("io_bytes"))
        .sum()
}

fn compare(
    test: &str,
    args: &[&str],
    split_must_match: bool,
) -> (serde_json::Value, serde_json::Value) {
    let d = tempfile::tempdir().expect("tempdir");
    let fio = fio_json(d.path(), args);
    for f in common::files_in(d.path()) {
        let _ = std::fs::remove_file(d.path().join(f));
    }
    let ours = sinkrate_json(d.path(), args);
    let (fr, fw) = (dir_bytes(&fio, "read"), dir_bytes(&fio, "write"));
    let (sr, sw) = (dir_bytes(&ours, "read"), dir_bytes(&ours, "write"));
    assert_eq!(
        fr + fw,
        sr + sw,
        "{test}: total bytes: fio {fr}+{fw}, sinkrate {sr}+{sw}"
    );
    if split_must_match {
        assert_eq!((fr, fw), (sr, sw), "{test}: per-direction bytes");
    }
    assert_eq!(
        fio["jobs"].as_array().map(|a| a.len()),
        ours["jobs"].as_array().map(|a| a.len()),
        "{test}: reported jobs"
    );
    (fio, ours)
}

#[test]
fn bytes_match_fio_for_common_jobs() {
    if !fio_or_skip("bytes_match_fio_for_common_jobs") {
        return;
    }
    let cases: &[(&str, &[&str], bool)] = &[
        (
            "seq write",
            &["--name=a", "--rw=write", "--bs=4k", "--size=16m"],
            true,
        ),
        (
            "seq read 64k x3 loops",
            &[
                "--name=a",
                "--rw=read",
                "--bs=64k",
                "--size=8m",
                "--loops=3",
            ],
            true,
        ),
        (
            "rand read",
            &["--name=a", "--rw=randread", "--bs=4k", "--size=8m"],
            true,
        ),
        (
            "rand write sync engine",
            &[
                "--name=a",
                "--rw=randwrite",
                "--bs=8k",
                "--size=8m",
                "--ioengine=sync",
            ],
            true,
        ),
        (
            "mixed 70/30",
            &[
                "--name=a",
                "--rw=randrw",
                "--rwmixread=70",
                "--bs=4k",
                "--size=8m",
            ],
            false,
        ),
        (
            "seq rw",
            &["--name=a", "--rw=rw", "--bs=16k", "--size=8m"],
            false,
        ),
        (
            "four files",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=16m",
                "--nrfiles=4",
            ],
            true,
        ),
        (
            "offset",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=8m",
                "--offset=4m",
            ],
            true,
        ),
        (
            "io_uring depth 8",
            &[
                "--name=a",
                "--rw=randread",
                "--bs=4k",
                "--size=8m",
                "--ioengine=io_uring",
                "--iodepth=8",
            ],
            true,
        ),
        (
            "libaio maps to io_uring",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=8m",
                "--ioengine=libaio",
                "--iodepth=4",
            ],
            true,
        ),
        (
            "vsync",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=4m",
                "--ioengine=vsync",
            ],
            true,
        ),
        (
            "pvsync",
            &[
                "--name=a",
                "--rw=read",
                "--bs=4k",
                "--size=4m",
                "--ioengine=pvsync",
            ],
            true,
        ),
        (
            "mmap read",
            &[
                "--name=a",
                "--rw=read",
                "--bs=4k",
                "--size=4m",
                "--ioengine=mmap",
            ],
            true,
        ),
        (
            "fsync every 16",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=4m",
                "--fsync=16",
            ],
            true,
        ),
        (
            "end_fsync",
            &[
                "--name=a",
                "--rw=write",
                "--bs=1m",
                "--size=16m",
                "--end_fsync=1",
            ],
            true,
        ),
        (
            "direct",
            &[
                "--name=a",
                "--rw=write",
                "--bs=64k",
                "--size=16m",
                "--direct=1",
            ],
            true,
        ),
        (
            "bsrange",
            &["--name=a", "--rw=write", "--bsrange=4k-64k", "--size=8m"],
            true,
        ),
        (
            "number_ios",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=8m",
                "--number_ios=100",
            ],
            true,
        ),
        (
            "null engine",
            &[
                "--name=a",
                "--ioengine=null",
                "--rw=randread",
                "--bs=4k",
                "--size=1g",
            ],
            true,
        ),
        (
            "numjobs with group_reporting",
            &[
                "--name=a",
                "--rw=write",
                "--bs=4k",
                "--size=4m",
                "--numjobs=2",
                "--group_reporting",
            ],
            true,
        ),
        (
            "two jobs, stonewall",
            &[
                "--bs=4k",
                "--size=4m",
                "--name=a",
                "--rw=write",
                "--name=b",
                "--rw=read",
                "--stonewall",
            ],
            true,
        ),
    ];
    // Three cases at a time, each in its own directory: only counts are compared.
    let results = common::each_at_once(cases, 3, |(name, args, split)| {
        let (fio, ours) = compare(name, args, *split);
        (*name, *args, fio, ours)
    });
    for (name, args, fio, ours) in results {
        let sync_fio = fio["jobs"][0]["sync"]["total_ios"].as_u64();
        let sync_ours = ours["jobs"][0]["sync"]["total_ios"].as_u64();
        if args.contains(&"--fsync=16") {
            assert_eq!(sync_fio, sync_ours, "{name}: fsync count");
        }
        let io_fio = fio["jobs"][0]["write"]["total_ios"].as_u64().unwrap_or(0)
            + fio["jobs"][0]["read"]["total_ios"].as_u64().unwrap_or(0);
        let io_ours = ours["jobs"][0]["write"]["total_ios"].as_u64().unwrap_or(0)
            + ours["jobs"][0]["read"]["total_ios"].as_u64().unwrap_or(0);
        if !args.iter().any(|a| a.starts_with("--bsrange")) {
            assert_eq!(io_fio, io_ours, "{name}: I/O count");
        }
    }
}

/// A device-bound job (direct 1 MiB writes to ext4 on a loop device capped at 100 MB/s):
/// the rate and the mean completion latency, which the device sets, agree with fio's. The
/// device's image is in memory: on the machine's disk, a writer beside the test (a busy CI
/// runner's) set the rate instead, differently for each tool's turn (sinkrate/fio 0.82 to
/// 1.49 beside a `dd` writer, with the latencies mirrored).
/// blk-throttle lets most I/Os through at once and holds every tenth for ~100 ms, so its
/// p50 reflects each tool's per-I/O cost, not the device; percentiles are compared on the
/// emulated slow device instead.
#[test]
fn device_bound_rates_agree_with_fio() {
    if !fio_or_skip("device_bound_rates_agree_with_fio") {
        return;
    }
    common::with_root(
        "device_bound_rates_agree_with_fio",
        &["mkfs.ext4", "losetup"],
        || {
            let fs = common::ScratchFs::in_memory("1G", "ext4", "");
            let Some(throttle) = common::WriteThrottle::new(&fs.device, 100_000_000) else {
                common::skip(
                    "device_bound_rates_agree_with_fio",
                    "no cgroup-v1 blkio throttling on this kernel",
                );
                return;
            };
            let job = [
                "--name=d",
                "--rw=write",
                "--bs=1m",
                "--size=96m",
                "--direct=1",
                "--filename=f",
            ];
            let with_json = |tool: &str| {
                let mut v: Vec<&str> = vec!["--output-format=json"];
                if tool == "sinkrate" {
                    v = vec!["bench", "--eta=never", "--output-format=json"];
                }
                v.extend(job);
                v
            };
            // Lay the file out once so neither tool pays for allocating it.
            let _ = fio_json(fs.path(), &job);
            let mut bw_ratios = Vec::new();
            let mut p50_ratios = Vec::new();
            for round in 0..4 {
                let run_fio =
                    || throttle.run_json(fs.path(), &common::fio_path(), &with_json("fio"));
                let run_ours = || {
                    throttle.run_json(fs.path(), &common::sinkrate_path(), &with_json("sinkrate"))
                };
                let (f, s) = if round % 2 == 0 {
                    let f = run_fio();
                    (f, run_ours())
                } else {
                    let s = run_ours();
                    (run_fio(), s)
                };
                let w =
                    |v: &serde_json::Value, k: &str| v["jobs"][0]["write"][k].as_f64().expect(k);
                let p50 = |v: &serde_json::Value| {
                    v["jobs"][0]["write"]["clat_ns"]["mean"]
                        .as_f64()
                        .expect("mean")
                };
                bw_ratios.push(w(&s, "bw_bytes") / w(&f, "bw_bytes"));
                p50_ratios.push(p50(&s) / p50(&f));
            }
            let median = |mut v: Vec<f64>| {
                v.sort_by(|a, b| a.total_cmp(b));
                (v[1] + v[2]) / 2.0
            };
            eprintln!("sinkrate/fio bandwidth {bw_ratios:?}, mean latency {p50_ratios:?}");
            let bw = median(bw_ratios.clone());
            let p50 = median(p50_ratios.clone());
            assert!(
                (0.85..1.15).contains(&bw),
                "sinkrate/fio bandwidth ratios {bw_ratios:?}"
            );
            assert!(
                (0.9..1.1).contains(&p50),
                "sinkrate/fio mean latency ratios {p50_ratios:?}"
            );
        },
    );
}

/// Object keys and the JSON type of each value, for comparing documents' shapes.
fn shape(v: &serde_json::Value) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = v
        .as_object()
        .expect("an object")
        .iter()
        .map(|(k, v)| {
            let t = match v {
                serde_json::Value::Number(_) => "number",
                serde_json::Value::String(_) => "string",
                serde_json::Value::Bool(_) => "bool",
                serde_json::Value::Array(_) => "array",
                serde_json::Value::Object(_) => "object",
                serde_json::Value::Null => "null",
            };
            (k.clone(), t)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn global_options_job_options_and_disk_util_as_fio_writes_them() {
    if !fio_or_skip("global_options_job_options_and_disk_util_as_fio_writes_them") {
        return;
    }
    // /var/tmp: a disk on most systems (/tmp may be tmpfs, where neither tool has a disk).
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let job = d.path().join("two.fio");
    std::fs::write(
        &job,
        "[global]\nrw=write\nbs=64k\ndirect=1\n\n[a]\nsize=4m\nfilename=a.dat\n\n[b]\nsize=2m\nfilename=b.dat\n",
    )
    .expect("job file");
    let job_arg = job.to_str().expect("utf-8");
    let fio = fio_json(d.path(), &[job_arg]);
    let ours = sinkrate_json(d.path(), &[job_arg]);
    assert_eq!(ours["global options"], fio["global options"]);
    for (f, o) in fio["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .zip(ours["jobs"].as_array().expect("jobs"))
    {
        assert_eq!(o["job options"], f["job options"], "job {}", f["jobname"]);
    }
    // disk_util: the same disks, the same keys and types, direct writes counted.
    let (fd, od) = (
        fio["disk_util"].as_array().expect("fio disk_util"),
        ours["disk_util"].as_array().expect("our disk_util"),
    );
    let names = |v: &Vec<serde_json::Value>| -> Vec<String> {
        v.iter()
            .map(|d| d["name"].as_str().expect("name").to_string())
            .collect()
    };
    assert_eq!(names(od), names(fd), "the disks under the files");
    for (f, o) in fd.iter().zip(od) {
        assert_eq!(shape(o), shape(f), "disk {}", f["name"]);
        // 6 MiB of 64 KiB direct writes: at least 96 requests (fewer only if merged), and a
        // share of the run never above all of it. Not above zero: the kernel counts busy
        // time in jiffies, so a few ms of I/O can count none (fio reports 0.00% then too).
        let ios =
            o["write_ios"].as_u64().expect("write_ios") + o["write_merges"].as_u64().unwrap_or(0);
        assert!(ios >= 48, "{o}");
        let util = o["util"].as_f64().expect("util");
        assert!((0.0..=100.0).contains(&util), "{o}");
    }
    let text = common::sinkrate()
        .current_dir(d.path())
        .arg(job_arg)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    if !od.is_empty() {
        assert!(text.contains("Disk stats (read/write):"), "{text}");
    }
    // On the command line, options before the first --name are global; the job's own
    // options list its name first; without global options the key is absent, as in fio.
    let cli = [
        "--bs=64k",
        "--name=c",
        "--rw=write",
        "--size=1m",
        "--filename=c.dat",
    ];
    let fio = fio_json(d.path(), &cli);
    let ours = sinkrate_json(d.path(), &cli);
    assert_eq!(ours["global options"], fio["global options"]);
    assert_eq!(
        ours["jobs"][0]["job options"],
        fio["jobs"][0]["job options"]
    );
    let bare = &cli[1..];
    let fio = fio_json(d.path(), bare);
    let ours = sinkrate_json(d.path(), bare);
    assert!(fio.get("global options").is_none());
    assert!(
        ours.get("global options").is_none(),
        "{}",
        ours["global options"]
    );
    assert_eq!(
        ours["jobs"][0]["job options"],
        fio["jobs"][0]["job options"]
    );
}

#[test]
fn number_ios_stops_at_the_count_at_any_depth_as_fio_does() {
    if !fio_or_skip("number_ios_stops_at_the_count_at_any_depth_as_fio_does") {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    // Queued engines: I/Os in flight when the count is reached must not be added to it.
    for engine in ["io_uring", "libaio"] {
        for depth in ["1", "8", "32"] {
            let args = [
                "--name=n",
                "--rw=write",
                "--bs=4k",
                "--size=8m",
                "--filename=n.dat",
                &format!("--ioengine={engine}"),
                &format!("--iodepth={depth}"),
                "--number_ios=10",
            ];
            let fio = fio_json(d.path(), &args);
            let ours = sinkrate_json(d.path(), &args);
            for key in ["total_ios", "io_bytes"] {
                assert_eq!(
                    ours["jobs"][0]["write"][key], fio["jobs"][0]["write"][key],
                    "{engine} depth {depth}: {key}"
                );
            }
        }
    }
}

#[test]
fn directory_lists_spread_clones_as_fio_does() {
    if !fio_or_skip("directory_lists_spread_clones_as_fio_does") {
        return;
    }
    let placed = |tool: &str| -> Vec<String> {
        let d = tempfile::tempdir().expect("tempdir");
        for sub in ["da", "db"] {
            std::fs::create_dir(d.path().join(sub)).expect("dir");
        }
        let args = [
            "--rw=write",
            "--size=256k",
            "--directory=da:db",
            "--name=j",
            "--numjobs=3",
            "--nrfiles=2",
            // Named files go in the first directory only.
            "--name=named",
            "--filename=f.dat",
            "--numjobs=2",
        ];
        let ok = if tool == "fio" {
            std::process::Command::new("fio")
                .current_dir(d.path())
                .args(["--output-format=terse"])
                .args(args)
                .fio_output()
                .status
                .success()
        } else {
            common::sinkrate()
                .current_dir(d.path())
                .args(args)
                .arg("--keep")
                .output()
                .expect("sinkrate runs")
                .status
                .success()
        };
        assert!(ok, "{tool} failed");
        let mut out = Vec::new();
        for sub in ["da", "db"] {
            for f in common::files_in(&d.path().join(sub)) {
                out.push(format!("{sub}/{f}"));
            }
        }
        out.sort();
        out
    };
    assert_eq!(placed("sinkrate"), placed("fio"));
}

/// (distinct 4 KiB blocks, all 4 KiB blocks) of a file.
fn distinct_blocks(path: &std::path::Path) -> (usize, usize) {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(path).expect("the written file");
    let blocks: std::collections::HashSet<u64> = bytes
        .chunks(4096)
        .map(|b| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            b.hash(&mut h);
            h.finish()
        })
        .collect();
    (blocks.len(), bytes.len() / 4096)
}

/// fio's default buffer contents (random once, scrambled per 512-byte sector per write):
/// a file written in 1 MiB blocks holds no two equal 4 KiB blocks, for fio and for sinkrate
/// (which once changed 16 bytes a write and left 382 distinct blocks of 16,384), so a device
/// that deduplicates or compresses sees the same data from both.
#[test]
fn default_buffers_defeat_deduplication_as_fios_do() {
    if !fio_or_skip("default_buffers_defeat_deduplication_as_fios_do") {
        return;
    }
    let args = [
        "--name=dedupe",
        "--filename=data",
        "--rw=write",
        "--bs=1m",
        "--size=64m",
    ];
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    fio_json(a.path(), &args);
    sinkrate_json(b.path(), &[&args[..], &["--keep"]].concat());
    let fio = distinct_blocks(&a.path().join("data"));
    let ours = distinct_blocks(&b.path().join("data"));
    assert_eq!(fio, (16384, 16384), "fio's file");
    assert_eq!(ours, fio, "sinkrate's file: distinct 4 KiB blocks of all");
}

/// buffer_compress_percentage, buffer_compress_chunk, dedupe_percentage and dedupe_mode:
/// files written by fio and by sinkrate compress as well (gzip) and hold as many distinct
/// 4 KiB blocks, within 3 points.
#[test]
fn compressible_and_deduplicable_buffers_as_fios() {
    if !fio_or_skip("compressible_and_deduplicable_buffers_as_fios") {
        return;
    }
    let measure = |path: &std::path::Path| {
        let (distinct, all) = distinct_blocks(path);
        let raw = std::fs::metadata(path).expect("the written file").len();
        let gz = std::process::Command::new("gzip")
            .arg("-c")
            .arg(path)
            .output()
            .expect("gzip runs");
        (
            gz.stdout.len() as f64 / raw as f64,
            distinct as f64 / all as f64,
        )
    };
    let shapes: [&[&str]; 5] = [
        &["--buffer_compress_percentage=50"],
        &[
            "--buffer_compress_percentage=75",
            "--buffer_compress_chunk=4k",
        ],
        &["--dedupe_percentage=50"],
        &[
            "--dedupe_percentage=60",
            "--dedupe_mode=working_set",
            "--dedupe_working_set_percentage=10",
        ],
        &["--dedupe_percentage=30", "--buffer_compress_percentage=40"],
    ];
    // Each shape written by both tools at once: only the files' contents are compared.
    let measured = common::each_at_once(&shapes, 3, |extra| {
        let mut args = vec![
            "--name=shape",
            "--filename=data",
            "--rw=write",
            "--bs=4k",
            "--size=16m",
        ];
        args.extend_from_slice(extra);
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        fio_json(a.path(), &args);
        sinkrate_json(b.path(), &[&args[..], &["--keep"]].concat());
        (
            measure(&a.path().join("data")),
            measure(&b.path().join("data")),
        )
    });
    for (extra, (fio, ours)) in shapes.iter().zip(measured) {
        eprintln!(
            "{extra:?}: gzip ratio fio {:.3} sinkrate {:.3}; distinct blocks fio {:.3} sinkrate {:.3}",
            fio.0, ours.0, fio.1, ours.1
        );
        assert!(
            (fio.0 - ours.0).abs() <= 0.03,
            "{extra:?}: compressed {fio:?} vs {ours:?}"
        );
        assert!(
            (fio.1 - ours.1).abs() <= 0.03,
            "{extra:?}: distinct {fio:?} vs {ours:?}"
        );
    }
}

/// Per-I/O log lines as fio 3.33 writes them: `time, value, direction, block size,
/// priority`, and with `log_offset=1` the offset before the priority. A 1 MiB file written
/// at random in 4 KiB blocks: 256 entries, every block's offset once, from both.
#[test]
fn log_lines_and_log_offset_as_fio_writes_them() {
    if !fio_or_skip("log_lines_and_log_offset_as_fio_writes_them") {
        return;
    }
    let lines = |dir: &std::path::Path, prefix: &str| -> Vec<Vec<u64>> {
        std::fs::read_to_string(dir.join(format!("{prefix}_lat.1.log")))
            .expect("the latency log")
            .lines()
            .map(|l| {
                l.split(", ")
                    .map(|c| c.parse().expect("a number"))
                    .collect()
            })
            .collect()
    };
    for with_offset in [false, true] {
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let mut args = vec![
            "--name=lg",
            "--rw=randwrite",
            "--bs=4k",
            "--size=1m",
            "--filename=data",
            "--write_lat_log=lg",
        ];
        if with_offset {
            args.push("--log_offset=1");
        }
        fio_json(a.path(), &args);
        sinkrate_json(b.path(), &args);
        let (fio, ours) = (lines(a.path(), "lg"), lines(b.path(), "lg"));
        assert_eq!(ours.len(), fio.len(), "entries, log_offset={with_offset}");
        assert_eq!(fio.len(), 256);
        let columns = if with_offset { 6 } else { 5 };
        for entries in [&fio, &ours] {
            assert!(entries
                .iter()
                .all(|e| e.len() == columns && e[2] == 1 && e[3] == 4096 && e[columns - 1] == 0));
        }
        if with_offset {
            let offsets = |e: &[Vec<u64>]| {
                let mut o: Vec<u64> = e.iter().map(|e| e[4]).collect();
                o.sort_unstable();
                o
            };
            let every: Vec<u64> = (0..256).map(|k| k * 4096).collect();
            assert_eq!(offsets(&fio), every, "fio");
            assert_eq!(offsets(&ours), every, "sinkrate");
        }
    }
}

/// `randrepeat`, per-clone seeds and `blockalign`, as fio defines them: with randrepeat=1
/// two runs repeat their offsets and with randrepeat=0 they do not; numjobs clones on one
/// file each visit every block in their own order; `blockalign` below a fixed `bs` places
/// I/Os at its alignment (fio's random map then draws freely). Checked on fio and sinkrate.
#[test]
fn random_offsets_follow_randrepeat_clones_and_blockalign_as_in_fio() {
    if !fio_or_skip("random_offsets_follow_randrepeat_clones_and_blockalign_as_in_fio") {
        return;
    }
    let base = [
        "--name=rnd",
        "--rw=randwrite",
        "--bs=8k",
        "--size=1m",
        "--filename=data",
        "--log_offset=1",
    ];
    for tool in ["fio", "sinkrate"] {
        let run = |extra: &[&str], prefix: &str| -> tempfile::TempDir {
            let d = tempfile::tempdir().expect("tempdir");
            let log = format!("--write_lat_log={prefix}");
            let args: Vec<&str> = [&base[..], extra, &[log.as_str()]].concat();
            if tool == "fio" {
                fio_json(d.path(), &args);
            } else {
                sinkrate_json(d.path(), &args);
            }
            d
        };
        let every: Vec<u64> = (0..128).map(|k| k * 8192).collect();
        let sorted = |mut v: Vec<u64>| {
            v.sort_unstable();
            v
        };
        for (repeat, alike) in [("--randrepeat=1", true), ("--randrepeat=0", false)] {
            let (a, b) = (run(&[repeat], "r"), run(&[repeat], "r"));
            let (a, b) = (
                common::logged_offsets(a.path(), "r", 1),
                common::logged_offsets(b.path(), "r", 1),
            );
            assert_eq!(a == b, alike, "{tool} {repeat}: two runs alike");
            assert_eq!(sorted(a), every, "{tool} {repeat}: every block once");
        }
        let clones = run(&["--numjobs=2"], "c");
        let (one, two) = (
            common::logged_offsets(clones.path(), "c", 1),
            common::logged_offsets(clones.path(), "c", 2),
        );
        assert_ne!(one, two, "{tool}: clones in their own order");
        assert_eq!(sorted(one), every, "{tool}: clone 1 visits every block");
        assert_eq!(sorted(two), every, "{tool}: clone 2 visits every block");
        let aligned = run(&["--blockalign=4k"], "a");
        let offsets = common::logged_offsets(aligned.path(), "a", 1);
        assert_eq!(offsets.len(), 128, "{tool}");
        assert!(
            offsets
                .iter()
                .all(|o| o % 4096 == 0 && *o <= (1 << 20) - 8192),
            "{tool}: {offsets:?}"
        );
        assert!(
            offsets.iter().any(|o| o % 8192 != 0),
            "{tool}: placed at 4 KiB, not only at bs: {offsets:?}"
        );
    }
}

/// `clat_percentiles`, `lat_percentiles`, `slat_percentiles` and `percentile_list` shape the
/// JSON's `percentile` objects and the text's percentile tables as in fio.
#[test]
fn percentile_options_shape_the_output_as_in_fio() {
    if !fio_or_skip("percentile_options_shape_the_output_as_in_fio") {
        return;
    }
    let shape = |v: &serde_json::Value| -> Vec<(String, Option<Vec<String>>)> {
        ["slat_ns", "clat_ns", "lat_ns"]
            .iter()
            .map(|k| {
                let keys = v["jobs"][0]["write"][k]["percentile"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect());
                (k.to_string(), keys)
            })
            .collect()
    };
    for (engine, extra) in [
        ("psync", vec!["--lat_percentiles=1"]),
        ("psync", vec!["--clat_percentiles=0"]),
        ("psync", vec!["--lat_percentiles=1", "--clat_percentiles=0"]),
        ("psync", vec!["--slat_percentiles=1"]),
        (
            "io_uring",
            vec!["--slat_percentiles=1", "--percentile_list=50:99.5"],
        ),
    ] {
        let d = tempfile::tempdir().expect("tempdir");
        let engine_arg = format!("--ioengine={engine}");
        let args: Vec<&str> = [
            &[
                "--name=p",
                engine_arg.as_str(),
                "--rw=write",
                "--bs=4k",
                "--size=1m",
                "--filename=data",
            ][..],
            &extra,
        ]
        .concat();
        let (fio, ours) = (fio_json(d.path(), &args), sinkrate_json(d.path(), &args));
        assert_eq!(shape(&ours), shape(&fio), "{engine} {extra:?}");
        let text = |out: std::process::Output| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains("percentiles ("))
                .map(|l| l.split(" (").next().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        };
        let fio_text = std::process::Command::new("fio")
            .current_dir(d.path())
            .args(&args)
            .fio_output();
        let our_text = common::sinkrate()
            .current_dir(d.path())
            .args(&args)
            .output()
            .expect("sinkrate runs");
        assert_eq!(text(our_text), text(fio_text), "{engine} {extra:?}: tables");
    }
}

/// fio's `buffer_pattern` syntax, side by side: hex (an odd digit count gets a leading 0),
/// quoted text, 32-bit decimal numbers (little-endian) and any sequence of them, pieces
/// run together as fio splits them (`"abcd"-120xdeadface`, `0xff0x14`); the files
/// both tools write hold the same bytes. A file's contents (`'name'`, its first 512 bytes
/// as fio's); a file that cannot be read is named.
#[test]
fn buffer_pattern_syntax_writes_fios_bytes() {
    if !fio_or_skip("buffer_pattern_syntax_writes_fios_bytes") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    std::fs::write(d.path().join("seven"), b"ABCDEFG").expect("pattern file");
    let long: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.path().join("long"), long).expect("pattern file");
    for pattern in [
        "'seven'",
        "'seven'0xff",
        "'long'",
        "0x123",
        "\"abcd\"",
        "300",
        "-12",
        "0xde\"ab\"12",
        "0x0102030405",
        // A number ends where a 0x begins; a 0 before an x starts the next hex number.
        "\"abcd\"-120xdeadface",
        "0xff0x14",
    ] {
        let arg = format!("--buffer_pattern={pattern}");
        let fio_file = "--filename=fio.dat";
        let our_file = "--filename=ours.dat";
        let job = |file: &'static str| {
            [
                "--name=p",
                file,
                "--size=64k",
                "--bs=4k",
                "--rw=write",
                "--unlink=0",
            ]
        };
        fio_json(d.path(), &[&job(fio_file)[..], &[arg.as_str()]].concat());
        sinkrate_json(d.path(), &[&job(our_file)[..], &[arg.as_str()]].concat());
        let theirs = std::fs::read(d.path().join("fio.dat")).expect("fio's file");
        let ours = std::fs::read(d.path().join("ours.dat")).expect("our file");
        assert_eq!(theirs.len(), 64 << 10);
        assert!(ours == theirs, "{pattern}: the files differ");
    }
    common::refuses(
        d.path(),
        &[
            "--name=p",
            "--filename=x",
            "--size=4k",
            "--buffer_pattern='data.bin'",
        ],
        &["buffer_pattern", "cannot read the pattern file 'data.bin'"],
    );
}

/// `offset_increment`: each numjobs clone starts that much further (in bytes, or a percent
/// of the file), so clones write disjoint stripes of one file; the offsets each job wrote,
/// from both tools' logs, are fio's.
#[test]
fn offset_increment_gives_each_clone_its_stripe_as_fio_does() {
    if !fio_or_skip("offset_increment_gives_each_clone_its_stripe_as_fio_does") {
        return;
    }
    for increment in ["1m", "25%"] {
        let d = tempfile::tempdir_in("/var/tmp").expect("tmp");
        // A 4 MiB file first, so that 25% has something to be a share of.
        std::fs::write(d.path().join("striped"), vec![0u8; 4 << 20]).expect("file");
        let arg = format!("--offset_increment={increment}");
        let job = |prefix: &'static str| {
            [
                "--name=s",
                "--filename=striped",
                "--size=1m",
                "--bs=256k",
                "--rw=write",
                "--numjobs=4",
                "--offset=0",
                prefix,
                "--log_offset=1",
            ]
        };
        fio_json(
            d.path(),
            &[&job("--write_lat_log=fio")[..], &[arg.as_str()]].concat(),
        );
        sinkrate_json(
            d.path(),
            &[&job("--write_lat_log=ours")[..], &[arg.as_str()]].concat(),
        );
        for n in 1..=4u64 {
            let mut ours = common::logged_offsets(d.path(), "ours", n as u32);
            let mut theirs = common::logged_offsets(d.path(), "fio", n as u32);
            ours.sort_unstable();
            theirs.sort_unstable();
            assert_eq!(ours, theirs, "{increment}: job {n}");
            // fio's clones after the first count down: job 2 is subjob 3.
            let subjob = if n == 1 { 0 } else { 5 - n };
            let start = subjob << 20;
            assert_eq!(
                ours,
                (0..4).map(|i| start + i * (256 << 10)).collect::<Vec<_>>()
            );
        }
    }
}

/// The distributions in the JSON are fio's shares, floors included: a depth bucket that
/// was used shows at least 0.1% (fio's stat_calc_dist), a latency bucket that holds any
/// I/O at least 0.01% (stat_calc_lat), so a queue's first I/O at depth 1 among a second of
/// depth 8 is 0.1 in both tools, not a share of a few millionths.
#[test]
fn distributions_keep_fios_floors() {
    if !fio_or_skip("distributions_keep_fios_floors") {
        return;
    }
    let job = [
        "--name=floors",
        "--filename=data",
        "--size=32m",
        "--ioengine=io_uring",
        "--iodepth=8",
        "--rw=randread",
        "--bs=4k",
        "--invalidate=0",
        "--time_based",
        "--runtime=1",
    ];
    let runs = common::each_at_once(&[true, false], 2, |&fio| {
        let dir = tempfile::tempdir().expect("tempdir");
        if fio {
            fio_json(dir.path(), &job)
        } else {
            sinkrate_json(dir.path(), &job)
        }
    });
    for (who, v) in [("fio", &runs[0]), ("sinkrate", &runs[1])] {
        let j = &v["jobs"][0];
        assert_eq!(j["iodepth_level"]["1"].as_f64(), Some(0.1), "{who}: {j}");
        for (map, floor) in [
            ("iodepth_level", 0.1),
            ("iodepth_submit", 0.1),
            ("iodepth_complete", 0.1),
            ("latency_ns", 0.01),
            ("latency_us", 0.01),
            ("latency_ms", 0.01),
        ] {
            let shares = j[map].as_object().expect("a distribution");
            for (bucket, share) in shares {
                let s = share.as_f64().expect("a share");
                assert!(
                    s == 0.0 || s >= floor,
                    "{who}: {map}[{bucket}] = {s}, under fio's floor {floor}"
                );
            }
        }
    }
}

/// A job block's lines as fio's text lays them out, numbers and units masked: each line's
/// head (before its first `:`), repeated heads once. sinkrate's own lines (its flush
/// account) are left out.
fn text_heads(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let mut heads: Vec<String> = vec![];
    let mut inside = false;
    for line in text.lines() {
        if line.contains("(groupid=") {
            inside = true;
            continue;
        }
        if line.starts_with("Run status group") {
            break;
        }
        if !inside || line.trim_start().starts_with("flush ") {
            continue;
        }
        let head = line.split(':').next().unwrap_or_default();
        let masked: String = head
            .replace("nsec", "U")
            .replace("usec", "U")
            .replace("msec", "U")
            .replace("KiB", "U")
            .replace("MiB", "U")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let masked = if masked.starts_with('|') {
            "|".to_string()
        } else {
            masked
        };
        // A percentile table counts once: how many lines it takes depends on its widest
        // value (checked by `percentile_rows_follow_the_widest_value`), which differs
        // between two runs that measured different latencies.
        if heads.last() != Some(&masked) {
            heads.push(masked);
        }
    }
    heads
}

/// Each percentile table of a text output, as the number of entries on each of its lines
/// and the widest value in it.
fn percentile_tables(stdout: &[u8]) -> Vec<(Vec<usize>, usize)> {
    let text = String::from_utf8_lossy(stdout);
    let mut tables: Vec<(Vec<usize>, usize)> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let cells: Vec<&str> = line
            .split("th=[")
            .skip(1)
            .map(|c| c.split(']').next().unwrap_or_default().trim())
            .collect();
        if line.trim_start().starts_with('|') && !cells.is_empty() {
            if !in_table {
                tables.push((Vec::new(), 0));
                in_table = true;
            }
            let table = tables.last_mut().expect("a table");
            table.0.push(cells.len());
            table.1 = table
                .1
                .max(cells.iter().map(|c| c.len()).max().unwrap_or(0));
        } else {
            in_table = false;
        }
    }
    tables
}

/// fio's rule (stat.c, show_clat_percentiles, precision 2): as many entries to a line as
/// fit 73 columns at 12 + the widest value's digits each; every line full but the last.
fn percentile_rows_follow_the_widest_value(stdout: &[u8], who: &str) {
    let tables = percentile_tables(stdout);
    assert!(!tables.is_empty(), "{who}: no percentile table");
    for (rows, width) in tables {
        let per_line = (73 / (12 + width)).max(1);
        let (last, full) = rows.split_last().expect("a row");
        assert!(
            full.iter().all(|n| *n == per_line) && *last <= per_line && *last > 0,
            "{who}: rows {rows:?} with values {width} wide, {per_line} to a line"
        );
    }
}

/// The text output's layout as fio's, line by line (heads compared, numbers masked): the
/// latency lines in the unit fio's rules pick, percentile tables as many to a line as
/// fio's, the latency buckets five to a line, then the fsync block with its percentiles.
#[test]
fn text_output_lays_out_a_job_as_fio_does() {
    if !fio_or_skip("text_output_lays_out_a_job_as_fio_does") {
        return;
    }
    let job = [
        "--name=text",
        "--filename=data",
        "--size=8m",
        "--rw=write",
        "--bs=4k",
        "--fsync=64",
        "--time_based",
        "--runtime=1",
    ];
    let runs = common::each_at_once(&[true, false], 2, |&fio| {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = common::bench_command(fio)
            .current_dir(dir.path())
            .args(job)
            .output()
            .expect("runs");
        common::succeeded(&out);
        out.stdout
    });
    let (theirs, ours) = (text_heads(&runs[0]), text_heads(&runs[1]));
    assert!(
        theirs.contains(&"sync percentiles (U)".to_string()),
        "{theirs:?}"
    );
    assert_eq!(ours, theirs, "sinkrate's lines against fio's");
    percentile_rows_follow_the_widest_value(&runs[0], "fio");
    percentile_rows_follow_the_widest_value(&runs[1], "sinkrate");
}
