//! `ioengine=nbd` beside fio 3.33's libnbd engine, both run under nbdkit as fio's
//! examples/nbd.fio says: the same I/O counts, and, from what neither tool wrote, the
//! export's bytes (nbdkit's file plugin) and the requests nbdkit's log filter saw.

use crate::common;

use std::path::Path;

use common::{fio_or_skip, have, refuses, skip};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Fio,
    Sinkrate,
}

const TOOLS: [Tool; 2] = [Tool::Fio, Tool::Sinkrate];

/// Runs `tool`'s job `args` with `--uri=$uri` under `nbdkit -U - PLUGIN...` (with its log
/// filter writing `log` when given) in `dir`; returns the exit code, the JSON and stderr.
fn under_nbdkit(
    dir: &Path,
    plugin: &[&str],
    log: Option<&Path>,
    tool: Tool,
    args: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let program = match tool {
        Tool::Fio => "'fio'".to_string(),
        Tool::Sinkrate => format!("'{}' bench --eta=never", common::sinkrate_path().display()),
    };
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let mut cmd = std::process::Command::new("nbdkit");
    cmd.current_dir(dir).args(["-U", "-"]);
    if log.is_some() {
        cmd.arg("--filter=log");
    }
    cmd.args(plugin);
    if let Some(log) = log {
        cmd.arg(format!("logfile={}", log.display()));
    }
    let script = format!(
        "exec {program} {} --output-format=json --uri=\"$uri\"",
        quoted.join(" ")
    );
    let out = cmd.arg("--run").arg(script).output().expect("nbdkit runs");
    (
        out.status.code(),
        // fio prints "fio: connected to NBD server" before its JSON.
        common::json_after_text(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs shell `script` in `dir` under an nbdkit serving `plugin` on a socket of its own
/// (the script finds it in `$uri`); both must succeed.
fn nbdkit_run(dir: &Path, plugin: &[&str], script: &str) -> std::process::Output {
    let out = std::process::Command::new("nbdkit")
        .current_dir(dir)
        .args(["-U", "-"])
        .args(plugin)
        .args(["--run", script])
        .output()
        .expect("nbdkit runs");
    common::succeeded(&out);
    out
}

/// (requests by kind, the most in flight at once) from nbdkit's log filter.
fn requests(log: &Path) -> (std::collections::BTreeMap<String, u64>, u64) {
    let text = std::fs::read_to_string(log).expect("nbdkit's log");
    let mut kinds = std::collections::BTreeMap::new();
    let (mut now, mut most) = (0u64, 0u64);
    for line in text.lines() {
        let Some(rest) = line.split(" connection=").nth(1) else {
            continue;
        };
        let Some((_, what)) = rest.split_once(' ') else {
            continue;
        };
        let kind = what.split_whitespace().next().unwrap_or_default();
        if !what.contains(" id=") {
            continue;
        }
        if let Some(done) = kind.strip_prefix("...") {
            if ["Read", "Write", "Trim", "Flush"].contains(&done) {
                now = now.saturating_sub(1);
            }
        } else if ["Read", "Write", "Trim", "Flush"].contains(&kind) {
            *kinds.entry(kind.to_string()).or_insert(0) += 1;
            now += 1;
            most = most.max(now);
        }
    }
    (kinds, most)
}

fn ready(test: &str) -> bool {
    if !have("nbdkit") {
        skip(
            test,
            "needs 'nbdkit' (scripts/install-deps.sh --test installs it)",
        );
        return false;
    }
    fio_or_skip(test)
}

#[test]
fn nbd_engine_writes_an_export_as_fios_does() {
    if !ready("nbd_engine_writes_an_export_as_fios_does") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let disk = d.path().join("disk.img");
    let log = d.path().join("requests.log");
    // Each write held 5 ms by the server, so that requests in flight show in its log
    // however the two tools' threads are scheduled on a loaded machine.
    let plugin = ["--filter=delay", "file", "disk.img", "delay-write=5ms"];
    let job = [
        "--name=rec",
        "--ioengine=nbd",
        "--rw=write",
        "--bs=64k",
        "--size=16m",
        "--offset=8m",
        "--iodepth=8",
        "--buffer_pattern=0x5a",
    ];
    for tool in TOOLS {
        let f = std::fs::File::create(&disk).expect("disk image");
        f.set_len(64 << 20).expect("64 MiB");
        let _ = std::fs::remove_file(&log);
        let (code, json, stderr) = under_nbdkit(d.path(), &plugin, Some(&log), tool, &job);
        assert_eq!(code, Some(0), "{tool:?}: {stderr}");
        let w = &json["jobs"][0]["write"];
        assert_eq!(
            (w["total_ios"].as_u64(), w["io_bytes"].as_u64()),
            (Some(256), Some(16 << 20)),
            "{tool:?}"
        );
        // The export's own bytes: the pattern in [8 MiB, 24 MiB), nothing written elsewhere.
        let bytes = std::fs::read(&disk).expect("disk image");
        assert!(bytes[..8 << 20].iter().all(|b| *b == 0), "{tool:?}: before");
        assert!(
            bytes[8 << 20..24 << 20].iter().all(|b| *b == 0x5a),
            "{tool:?}: the region"
        );
        assert!(bytes[24 << 20..].iter().all(|b| *b == 0), "{tool:?}: after");
        // What nbdkit saw: 256 writes and no other request, up to the depth in flight at
        // once (iodepth=8 on one connection), never more.
        let (kinds, most) = requests(&log);
        assert_eq!(kinds.get("Write"), Some(&256), "{tool:?}: {kinds:?}");
        assert_eq!(kinds.len(), 1, "{tool:?}: {kinds:?}");
        assert!((4..=8).contains(&most), "{tool:?}: {most} in flight");
    }
}

#[test]
fn nbd_engine_verifies_trims_and_flushes_as_fios_does() {
    if !ready("nbd_engine_verifies_trims_and_flushes_as_fios_does") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let memory = ["memory", "size=64M"];
    // Random writes at depth 16 read back and checked: the same counts, no error.
    let verify = [
        "--name=v",
        "--ioengine=nbd",
        "--rw=randwrite",
        "--bs=4k",
        "--size=4m",
        "--iodepth=16",
        "--verify=crc32c",
    ];
    for tool in TOOLS {
        let (code, json, stderr) = under_nbdkit(d.path(), &memory, None, tool, &verify);
        assert_eq!(code, Some(0), "{tool:?}: {stderr}");
        let j = &json["jobs"][0];
        assert_eq!(j["error"].as_u64(), Some(0), "{tool:?}");
        assert_eq!(j["write"]["total_ios"].as_u64(), Some(1024), "{tool:?}");
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(1024), "{tool:?}");
    }
    // fsync=32 sends an NBD flush after every 32 writes (but the last), and trims are
    // NBD trims: counted in the JSON and by nbdkit alike.
    let log = d.path().join("requests.log");
    for (job, kind, count) in [
        (
            &[
                "--name=f",
                "--rw=write",
                "--bs=4k",
                "--size=1m",
                "--fsync=32",
            ][..],
            "Flush",
            7,
        ),
        (
            &[
                "--name=t",
                "--rw=trim",
                "--bs=1m",
                "--size=16m",
                "--iodepth=4",
            ][..],
            "Trim",
            16,
        ),
    ] {
        let mut args = vec!["--ioengine=nbd"];
        args.extend_from_slice(job);
        for tool in TOOLS {
            let _ = std::fs::remove_file(&log);
            let (code, json, stderr) = under_nbdkit(d.path(), &memory, Some(&log), tool, &args);
            assert_eq!(code, Some(0), "{tool:?} {kind}: {stderr}");
            let counted = match kind {
                "Flush" => json["jobs"][0]["sync"]["total_ios"].as_u64(),
                _ => json["jobs"][0]["trim"]["total_ios"].as_u64(),
            };
            assert_eq!(counted, Some(count), "{tool:?} {kind}");
            assert_eq!(requests(&log).0.get(kind), Some(&count), "{tool:?} {kind}");
        }
    }
}

/// A block changed on the export behind sinkrate's back is found by a later verify read
/// through the engine: the check is of the export's bytes, not of a copy sinkrate kept.
#[test]
fn nbd_verify_finds_a_block_changed_on_the_export() {
    if !ready("nbd_verify_finds_a_block_changed_on_the_export") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let disk = d.path().join("disk.img");
    std::fs::File::create(&disk)
        .and_then(|f| f.set_len(16 << 20))
        .expect("disk image");
    let plugin = ["file", "disk.img"];
    let base = [
        "--name=v",
        "--ioengine=nbd",
        "--bs=4k",
        "--size=1m",
        "--verify=crc32c",
    ];
    let mut write = base.to_vec();
    write.extend(["--rw=write", "--do_verify=0"]);
    let (code, _, stderr) = under_nbdkit(d.path(), &plugin, None, Tool::Sinkrate, &write);
    assert_eq!(code, Some(0), "{stderr}");
    let mut bytes = std::fs::read(&disk).expect("disk image");
    bytes[5 * 4096 + 100] ^= 0xff;
    std::fs::write(&disk, &bytes).expect("changed");
    let mut read = base.to_vec();
    read.extend(["--rw=read", "--verify_fatal=1"]);
    let (code, json, stderr) = under_nbdkit(d.path(), &plugin, None, Tool::Sinkrate, &read);
    assert_ne!(code, Some(0), "a bad block is a failed run: {stderr}");
    assert_eq!(json["jobs"][0]["error"].as_u64(), Some(84), "{stderr}");
    assert!(stderr.contains("offset 20480"), "{stderr}");
}

#[test]
fn bad_nbd_jobs_are_refused_in_one_line() {
    let d = tempfile::tempdir().expect("tmp");
    let gone = format!(
        "--uri=nbd+unix:///?socket={}",
        d.path().join("none").display()
    );
    for (args, expect) in [
        (vec!["--ioengine=nbd"], &["needs uri="][..]),
        (
            vec!["--ioengine=psync", "--uri=nbd://localhost/"],
            &["uri= is an option of ioengine=nbd"][..],
        ),
        (
            vec!["--ioengine=nbd", "--uri=nbds://host/"],
            &["TLS", "nbd+unix:///"][..],
        ),
        (
            vec!["--ioengine=nbd", "--uri=/tmp/socket"],
            &["not an NBD URI"][..],
        ),
        (
            vec!["--ioengine=nbd", gone.as_str()],
            &["cannot connect to the NBD server", "No such file"][..],
        ),
        (
            vec![
                "--ioengine=nbd",
                "--uri=nbd://localhost/",
                "--sync_file_range=write:4",
            ],
            &["sync_file_range with ioengine=nbd"][..],
        ),
        (
            vec!["--ioengine=nbd", "--uri=nbd://localhost/", "--nrfiles=2"],
            &["one export per job"][..],
        ),
    ] {
        let mut all = vec!["--name=n", "--size=1m", "--rw=write"];
        all.extend(args);
        refuses(d.path(), &all, expect);
    }
    if !have("nbdkit") {
        skip(
            "bad_nbd_jobs_are_refused_in_one_line (read-only export)",
            "needs 'nbdkit' (scripts/install-deps.sh --test installs it)",
        );
        return;
    }
    let job = ["--name=n", "--ioengine=nbd", "--size=1m", "--rw=write"];
    let read_only = ["-r", "memory", "size=16M"];
    let one_error = |stderr: &str| {
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("sinkrate: error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        errors[0].to_string()
    };
    let (code, _, stderr) = under_nbdkit(d.path(), &read_only, None, Tool::Sinkrate, &job);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        one_error(&stderr).contains("the export is read-only"),
        "{stderr}"
    );
    // An export that takes no flushes: fsync= is refused before any I/O, not failed at the
    // first flush. Its plugin notes every write it is sent: none may come.
    let writes = d.path().join("writes.txt");
    let pwrite = format!("pwrite=echo w >> '{}'; cat >/dev/null", writes.display());
    let no_flush = [
        "eval",
        "get_size=echo 16777216",
        pwrite.as_str(),
        "can_write=exit 0",
        "can_flush=exit 3",
    ];
    let mut flushing = job.to_vec();
    flushing.push("--fsync=4");
    let (code, _, stderr) = under_nbdkit(d.path(), &no_flush, None, Tool::Sinkrate, &flushing);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        one_error(&stderr).contains("does not take flushes"),
        "{stderr}"
    );
    assert!(!writes.exists(), "a write reached the export");
    // The same export without fsync= takes the job's writes: the note above is real.
    let (code, _, stderr) = under_nbdkit(d.path(), &no_flush, None, Tool::Sinkrate, &job);
    assert_eq!(code, Some(0), "{stderr}");
    let noted = std::fs::read_to_string(&writes).unwrap_or_default();
    assert_eq!(noted.lines().count(), 256, "{noted}");
}

/// A status report asked for while a job reads back what it wrote (verify) holds the reads
/// so far, as fio's reports count verify reads: each read held 10 ms by nbdkit's delay
/// filter, the read-back of 256 blocks lasts 2.5 s, and the reports in it climb.
#[test]
fn status_reports_during_verify_count_the_reads_so_far() {
    if !have("nbdkit") {
        skip(
            "status_reports_during_verify_count_the_reads_so_far",
            "needs 'nbdkit' (scripts/install-deps.sh --test installs it)",
        );
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let script = format!(
        "exec '{}' bench --eta=never --name=v --ioengine=nbd --rw=write --bs=4k --size=1m \
         --verify=crc32c --status-interval=500ms --output-format=json --uri=\"$uri\"",
        common::sinkrate_path().display()
    );
    let out = nbdkit_run(
        d.path(),
        &["--filter=delay", "memory", "size=16M", "rdelay=10ms"],
        &script,
    );
    let reports = common::json_documents(&out.stdout);
    let reads: Vec<u64> = reports
        .iter()
        .map(|r| r["jobs"][0]["read"]["total_ios"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(reads.last(), Some(&256), "{reads:?}");
    assert!(
        reads.iter().any(|&n| n > 0 && n < 256),
        "no report showed the read-back under way: {reads:?}"
    );
    assert!(reads.windows(2).all(|w| w[0] <= w[1]), "{reads:?}");
}

/// The job's usr_cpu and sys_cpu count the whole engine, the reply reader's thread too
/// (fio's engine does its NBD work in the job's own thread): checked against the process's
/// CPU time as its shell's `times` reports it, which neither sinkrate nor fio measured.
#[test]
fn nbd_job_cpu_counts_the_reply_reader() {
    if !ready("nbd_job_cpu_counts_the_reply_reader") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let script = format!(
        "'{}' bench --eta=never --name=c --ioengine=nbd --rw=randread --bs=4k --size=256m \
         --iodepth=16 --time_based --runtime=2 --output-format=json --uri=\"$uri\" > out.json \
         && times > times.txt",
        common::sinkrate_path().display()
    );
    nbdkit_run(d.path(), &["memory", "size=256M"], &script);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("out.json")).expect("out.json"))
            .expect("JSON");
    let job = &json["jobs"][0];
    let runtime_s = job["read"]["runtime"].as_f64().expect("runtime") / 1000.0;
    let pct = job["usr_cpu"].as_f64().expect("usr_cpu") + job["sys_cpu"].as_f64().expect("sys");
    let job_s = pct / 100.0 * runtime_s;
    // `times`' second line: the children's user and system time, e.g. "0m1.23s 0m0.45s".
    let times = std::fs::read_to_string(d.path().join("times.txt")).expect("times");
    let seconds = |field: &str| -> f64 {
        let (m, s) = field
            .trim_end_matches('s')
            .split_once('m')
            .expect("NmS.SSs");
        m.parse::<f64>().expect("minutes") * 60.0 + s.parse::<f64>().expect("seconds")
    };
    let process_s: f64 = times
        .lines()
        .nth(1)
        .expect("the children's line")
        .split_whitespace()
        .map(seconds)
        .sum();
    // The job thread and the reader do nearly all of the process's work (the reader more
    // than half of it); the rest is the sampler's and the main thread's.
    assert!(
        job_s >= 0.7 * process_s && job_s <= process_s * 1.05 + 0.05,
        "the job reports {job_s:.2} s of CPU, the process used {process_s:.2} s ({times:?})"
    );
}
