//! Options newer than the fio packaged here, checked against fio's documentation and
//! against what the kernel or the job's own I/O shows: steady state on latency, the
//! page_fault engine.

use crate::common;

use common::sinkrate_json;

/// `ss=lat:P%` (fio's example_latency_steadystate.fio): the mean latency of each
/// `ss_interval` is a sample; once `ss_dur` holds samples within P% of their mean, the job
/// stops. The samples are the interval means of the job's own latencies, and agree with
/// fio's averaged latency log of the same job run beside it (fio 3.33 has no ss=lat).
#[test]
fn steady_state_on_latency_stops_the_job_once_latency_settles() {
    // Direct reads: what each tool measures is the device, not its own page cache.
    let d = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let f = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let job = [
        "--name=settle",
        "--filename=ssfile",
        "--size=16m",
        "--rw=randread",
        "--direct=1",
        "--rate_iops=2000",
        "--time_based",
    ];
    let fio_windows = std::thread::scope(|s| {
        let fio = s.spawn(|| {
            if !common::have("fio") {
                return None;
            }
            let args = [
                &job[..],
                &["--runtime=6", "--write_lat_log=fio", "--log_avg_msec=2000"],
            ]
            .concat();
            common::fio_json(f.path(), &args);
            Some(averaged_log(&f.path().join("fio_lat.1.log")))
        });
        let v = sinkrate_json(
            d.path(),
            &[
                &job[..],
                &[
                    "--runtime=30",
                    "--ss=lat:50%",
                    "--ss_dur=4s",
                    "--ss_interval=2s",
                    "--ss_ramp=2s",
                    "--write_lat_log=settle",
                    "--log_avg_msec=2000",
                ],
            ]
            .concat(),
        );
        (fio.join().expect("fio thread"), v)
    });
    let (fio_windows, v) = fio_windows;
    let job = &v["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["ss"], "lat", "{ss}");
    assert_eq!(ss["attained"], 1, "{ss}");
    let samples: Vec<f64> = ss["data"]["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter_map(|s| s.as_f64())
        .collect();
    assert_eq!(samples.len(), 2, "4 s of 2 s intervals: {ss}");
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    assert!(
        samples.iter().all(|s| (s - mean).abs() <= 0.5 * mean),
        "{samples:?}"
    );
    // Each sample is a mean of the job's own latencies, in ns: between the job's least and
    // greatest (a sample in µs rather than ns falls 1000x below the least), and the mean of
    // the averaged log's window below (one counting the 500 µs rate wait would be far above
    // it). fio's log of the same job has its windows where the samples' are (2-4 s and 4-6 s,
    // after the 2 s ramp); how near its values come to sinkrate's depends on the machine's
    // load, so that figure is bench/vs-fio's (both tools' latencies, side by side).
    let read = &job["read"]["lat_ns"];
    let (least, most) = (
        read["min"].as_f64().expect("lat min"),
        read["max"].as_f64().expect("lat max"),
    );
    assert!(
        samples.iter().all(|s| (least..=most).contains(s)),
        "samples {samples:?} outside the job's latencies {least}..{most} ns"
    );
    match fio_windows {
        Some(w) => assert!(w.len() >= 3, "fio's averaged log holds {w:?}"),
        None => common::skip(
            "steady_state_on_latency_stops_the_job_once_latency_settles (beside fio)",
            "fio is not installed",
        ),
    }
    // 2 s of ramp, then two intervals; far from the 30 s runtime.
    let runtime = job["job_runtime"].as_u64().unwrap_or(u64::MAX);
    assert!((5_500..12_000).contains(&runtime), "ran {runtime} ms");
    // The averaged latency log of the same run (2 s windows) holds the same interval means.
    let logged = averaged_log(&d.path().join("settle_lat.1.log"));
    let last = &logged[logged.len().saturating_sub(2)..];
    for (s, l) in samples.iter().zip(last) {
        assert!(
            (s - l).abs() <= 0.25 * s.max(*l),
            "sample {s} against the log's {l} ({logged:?})"
        );
    }

    // The window must hold whole intervals; an unknown metric names the accepted ones.
    for (args, expect) in [
        (
            ["--ss=lat:5%", "--ss_dur=3s", "--ss_interval=2s"],
            "not a multiple of ss_interval",
        ),
        (
            ["--ss=latency:5%", "--ss_dur=4s", "--ss_interval=2s"],
            "lat, lat_slope",
        ),
    ] {
        let all = [&["--name=bad", "--filename=ssfile", "--size=1m"][..], &args].concat();
        common::refuses(d.path(), &all, &[expect]);
    }
}

/// The values of an averaged latency log, in order.
fn averaged_log(path: &std::path::Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .expect("the latency log")
        .lines()
        .filter_map(|l| l.split(',').nth(1))
        .filter_map(|v| v.trim().parse().ok())
        .collect()
}

/// `sinkrate bench ARGS` in `dir` as a child of this test: its exit code, its JSON, and the
/// minor page faults the kernel counted for the whole process (wait4's rusage).
fn run_counting_faults(
    dir: &std::path::Path,
    args: &[&str],
) -> (Option<i32>, serde_json::Value, u64) {
    let out_path = dir.join("out.json");
    let (code, usage) = common::run_with_usage(
        std::process::Command::new(common::sinkrate_path())
            .current_dir(dir)
            .arg("bench")
            .args(args)
            .arg("--output-format=json")
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::process::Stdio::null()),
    );
    let text = std::fs::read(&out_path).expect("the JSON");
    let _ = std::fs::remove_file(&out_path);
    (
        code,
        serde_json::from_slice(&text).unwrap_or(serde_json::Value::Null),
        usage.ru_minflt as u64,
    )
}

/// The smallest page the kernel gives anonymous memory that is not advised otherwise: a
/// huge page when transparent huge pages are `always`, the base page when `madvise` or
/// `never` (fio's engine advises nothing).
fn anonymous_fault_unit() -> u64 {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[always]") {
        2 << 20
    } else {
        // SAFETY: sysconf has no preconditions.
        (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as u64
    }
}

/// fio's `page_fault` engine (newer than fio 3.33): the job's "file" is `size=` of private
/// anonymous memory; each write copies into it and each read out of it, so every page is
/// faulted in once, on first touch. The kernel's own count of the process's minor faults
/// shows it: a 64 MiB write job faults every one of its pages, the same job on the null
/// engine does not; data written is read back whole (verify); what would reach outside the
/// memory is refused as fio's engine refuses it.
#[test]
fn page_fault_faults_each_page_of_its_memory_once_as_the_kernel_counts() {
    let d = tempfile::tempdir().expect("tmp");
    const SIZE: u64 = 64 << 20;
    let pages = SIZE / anonymous_fault_unit();
    let job = |engine: &str, rw: &str| {
        [
            "--name=pf".to_string(),
            format!("--ioengine={engine}"),
            format!("--rw={rw}"),
            "--bs=4k".to_string(),
            format!("--size={SIZE}"),
        ]
    };
    let mut faults = std::collections::HashMap::new();
    for (engine, rw) in [
        ("page_fault", "write"),
        ("page_fault", "read"),
        ("null", "write"),
    ] {
        let args = job(engine, rw);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, v, process_faults) = run_counting_faults(d.path(), &args);
        assert_eq!(code, Some(0), "{args:?}: {v}");
        let j = &v["jobs"][0];
        let dir = if rw == "write" { "write" } else { "read" };
        assert_eq!(j[dir]["io_bytes"], SIZE, "{args:?}");
        assert_eq!(j[dir]["total_ios"], SIZE / 4096, "{args:?}");
        assert_eq!(j["error"], 0, "{args:?}");
        let job_faults = j["minf"].as_u64().expect("minf");
        // The job's count is its own thread's: part of what the kernel counted in all.
        assert!(
            job_faults <= process_faults,
            "{args:?}: the job's {job_faults} faults against the process's {process_faults}"
        );
        faults.insert((engine, rw), (job_faults, process_faults));
        assert!(common::files_in(d.path()).is_empty(), "{args:?} left files");
    }
    for rw in ["write", "read"] {
        let (job_faults, process_faults) = faults[&("page_fault", rw)];
        assert!(
            job_faults >= pages,
            "{rw}: {job_faults} faults for {pages} pages of memory"
        );
        // Against the same job with nothing mapped: the difference is the memory's pages.
        let (_, null_process) = faults[&("null", "write")];
        assert!(
            process_faults.saturating_sub(null_process) >= pages * 95 / 100,
            "{rw}: {process_faults} faults in all against null's {null_process}, for {pages} pages"
        );
    }

    // What was written reads back whole: verify's reads go through the same memory.
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=pfv",
            "--ioengine=page_fault",
            "--rw=randwrite",
            "--bs=4k",
            "--size=4m",
            "--verify=crc32c",
        ],
    );
    let j = &v["jobs"][0];
    assert_eq!(j["write"]["total_ios"], 1024, "{j}");
    assert_eq!(j["read"]["total_ios"], 1024, "{j}");
    assert_eq!(j["error"], 0, "{j}");
    // The job's verify state is saved as fio's would be (verify_state_save=1).
    assert_eq!(common::files_in(d.path()), ["local-pfv-0-verify.state"]);
    std::fs::remove_file(d.path().join("local-pfv-0-verify.state")).expect("remove");

    for (args, expect) in [
        (
            &["--offset=4k"][..],
            "offset= with ioengine=page_fault: the job's memory starts at 0",
        ),
        (&["--nrfiles=2"][..], "maps one region of memory per job"),
        (&["--rw=trim"][..], "this engine has no trim"),
        (&["--size=1t"][..], "that ioengine=page_fault maps"),
    ] {
        let all = [
            &[
                "--name=bad",
                "--ioengine=page_fault",
                "--rw=write",
                "--size=1m",
            ][..],
            args,
        ]
        .concat();
        common::refuses(d.path(), &all, &[expect]);
    }
    common::refuses(
        d.path(),
        &["--name=bad", "--ioengine=page_fault", "--rw=write"],
        &["ioengine=page_fault needs size="],
    );

    // Memory the process may not map (an address-space limit of 512 MiB, 1 GiB asked): the
    // job fails with the system's ENOMEM, in its JSON and its exit code, never success.
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(common::sinkrate_path());
    cmd.current_dir(d.path())
        .args([
            "bench",
            "--eta=never",
            "--name=big",
            "--ioengine=page_fault",
        ])
        .args(["--rw=write", "--size=1g", "--output-format=json"]);
    // SAFETY: setrlimit between fork and exec touches no shared state.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 512 << 20,
                rlim_max: 512 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Cannot allocate memory"), "{stderr}");
    let v = common::json_after_text(&out.stdout);
    assert_eq!(v["jobs"][0]["error"], libc::ENOMEM, "{stderr}");
    assert!(common::files_in(d.path()).is_empty());
}
