//! Options newer than the fio packaged here, checked against fio's documentation and
//! against what the kernel or the job's own I/O shows: steady state on latency.

mod common;

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
    // fio's 2-4 s and 4-6 s windows are the samples' windows (after the 2 s ramp). The two
    // tools run side by side on a shared, noisy machine, so the band is a factor of 3: wide
    // enough for the noise, narrow enough to catch the mistakes that matter (a sample in µs
    // rather than ns is 1000x off; one counting the 500 µs rate wait is over 10x off).
    match fio_windows {
        Some(w) if w.len() >= 3 => {
            for (s, theirs) in samples.iter().zip(&w[1..3]) {
                let ratio = s / theirs;
                assert!(
                    (1.0 / 3.0..3.0).contains(&ratio),
                    "sample {s} ns against fio's {theirs} ns for the same window ({w:?})"
                );
            }
        }
        Some(w) => panic!("fio's averaged log holds {w:?}"),
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
