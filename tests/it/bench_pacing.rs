//! Pacing and job control: rate_iops, rate, thinktime, ramp_time, number_ios, max_latency,
//! steady state and latency targets, observed on real runs (tolerances are loose: these
//! machines are shared).

use crate::common;

use common::sinkrate_json;

fn write(v: &serde_json::Value, key: &str) -> f64 {
    v["jobs"][0]["write"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("write.{key}"))
}

#[test]
fn rate_iops_paces_a_periodic_writer() {
    let d = tempfile::tempdir().expect("tempdir");
    // A 25 fps camera writing 64 KiB frames for 2 s: 50 writes, not as many as possible.
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=cam",
            "--rw=write",
            "--bs=64k",
            "--size=64m",
            "--rate_iops=25",
            "--time_based",
            "--runtime=2",
        ],
    );
    let ios = write(&v, "total_ios");
    assert!((45.0..=52.0).contains(&ios), "{ios} writes in 2 s at 25/s");
    let poisson = sinkrate_json(
        d.path(),
        &[
            "--name=p",
            "--rw=write",
            "--bs=4k",
            "--size=64m",
            "--rate_iops=200",
            "--rate_process=poisson",
            "--time_based",
            "--runtime=2",
        ],
    );
    let ios = write(&poisson, "total_ios");
    assert!(
        (300.0..=500.0).contains(&ios),
        "{ios} writes in 2 s at a mean of 200/s"
    );
}

#[test]
fn rate_caps_bandwidth() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--rw=write",
            "--bs=64k",
            "--size=1g",
            "--rate=8m",
            "--time_based",
            "--runtime=2",
        ],
    );
    let bw = write(&v, "bw_bytes");
    let target = 8.0 * 1024.0 * 1024.0;
    assert!(
        (bw - target).abs() / target < 0.05,
        "{bw} B/s against a cap of {target}"
    );
}

#[test]
fn thinktime_pauses_between_blocks() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--rw=write",
            "--bs=4k",
            "--size=1g",
            "--thinktime=10ms",
            "--thinktime_blocks=4",
            "--time_based",
            "--runtime=1",
        ],
    );
    // 4 blocks per 10 ms pause: about 400 in a second.
    let ios = write(&v, "total_ios");
    assert!((300.0..=404.0).contains(&ios), "{ios}");
}

#[test]
fn ramp_time_is_excluded_and_number_ios_stops_the_job() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--rw=read",
            "--size=1g",
            "--ramp_time=1",
            "--time_based",
            "--runtime=1",
        ],
    );
    let runtime = v["jobs"][0]["read"]["runtime"].as_u64().expect("runtime");
    assert!(
        (950..=1100).contains(&runtime),
        "measured runtime {runtime} ms excludes the ramp"
    );
    assert!(v["jobs"][0]["elapsed"].as_u64() >= Some(2));
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1g",
            "--number_ios=1234",
        ],
    );
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 1234);
}

#[test]
fn max_latency_ends_the_job_with_an_error() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = common::sinkrate()
        .current_dir(d.path())
        .args([
            "--name=m",
            "--rw=write",
            "--bs=1m",
            "--size=16m",
            "--sync=1",
            "--max_latency=1ns",
            "--output-format=json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["jobs"][0]["error"], libc::ETIMEDOUT);
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_latency"));
    // The job's file stays, as fio's does (no unlink=1).
    assert_eq!(common::files_in(d.path()), ["m.0.0"]);
}

#[test]
fn steady_state_stops_a_steady_job_early() {
    let d = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--rw=write",
            "--bs=64k",
            "--size=1g",
            "--rate=16m",
            "--ss=bw:20%",
            "--ss_dur=2",
            "--time_based",
            "--runtime=30",
        ],
    );
    assert!(
        started.elapsed().as_secs() < 15,
        "steady state was not detected"
    );
    assert_eq!(v["jobs"][0]["steadystate"]["attained"], 1);
}

#[test]
fn latency_target_grows_the_depth_while_the_target_holds() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=l",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--iodepth=8",
            "--latency_target=1s",
            "--latency_window=100ms",
            "--time_based",
            "--runtime=2",
        ],
    );
    assert_eq!(v["jobs"][0]["latency_depth"], 8);
    let lt = &v["jobs"][0]["sinkrate"]["latency_target"];
    assert!(lt["windows"].as_u64() >= Some(10));
    assert_eq!(lt["windows"], lt["windows_met"]);
}

#[test]
fn rate_limits_count_from_the_end_of_the_ramp() {
    let d = tempfile::tempdir().expect("tempdir");
    let v = sinkrate_json(
        d.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--rw=write",
            "--bs=4k",
            "--size=1g",
            "--rate_iops=50",
            "--ramp_time=1",
            "--time_based",
            "--runtime=1",
        ],
    );
    // 50 per second over the measured second; no burst making up for the ramp.
    let ios = write(&v, "total_ios");
    assert!((45.0..=52.0).contains(&ios), "{ios}");
}
