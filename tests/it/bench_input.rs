//! Bad input: one clear line naming what and where, exit 2, nothing written.

use crate::common;
use crate::common::FioOutput;

use common::{files_in, refuses, sinkrate};

#[test]
fn bad_values_on_the_command_line() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    refuses(
        p,
        &["--name=a", "--size=12q"],
        &["--size=12q", "unknown size suffix 'q'", "accepted"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--rwmixread=150"],
        &["rwmixread", "out of range"],
    );
    refuses(
        p,
        &["--name=a", "--size=4k", "--bs=1m"],
        &["larger than size"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--runtime=ten"],
        &["runtime", "not a time"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--ioengine=rbd"],
        &["engine 'rbd' is not supported by sinkrate (supported:"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--xyz=1"],
        &[
            "option 'xyz' is not supported by sinkrate (it takes ",
            "sinkrate bench --cmdhelp lists them",
        ],
    );
    // A misspelling gets the option meant, in a short line.
    refuses(
        p,
        &["--name=a", "--size=1m", "--iodpeth=4"],
        &["option 'iodpeth' is not supported by sinkrate; did you mean iodepth"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--rw=sideways"],
        &["'sideways' is not a mode"],
    );
    refuses(p, &["--name=a", "--size=1m", "--iodepth=0"], &["iodepth"]);
    refuses(
        p,
        &["--name=a", "--size=1m", "--rate_iops_min=-1"],
        &["rate_iops_min", "negative"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--rate_cycle=soon"],
        &["rate_cycle", "not a whole number"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--thinktime_iotime=soon"],
        &["thinktime_iotime"],
    );
    refuses(
        p,
        &[
            "--name=a",
            "--size=1m",
            "--rate_iops=100",
            "--rate_iops_min=200",
        ],
        &["rate_iops_min (200) is above rate_iops (100)"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--output-format=xml"],
        &["'xml' is not a format"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--directory=/nonexistent/dir"],
        &["/nonexistent/dir", "does not exist"],
    );
    refuses(p, &["--name=a", "--rw=read"], &["size= is not set"]);
    refuses(
        p,
        &["--name=a", "--size=900t", "--rw=write"],
        &["not enough free space"],
    );
    refuses(
        p,
        &["--name=a", "--size=1m", "--filename=/dev/nonexistent-disk"],
        &["never created as a file"],
    );
    refuses(
        p,
        &[
            "--name=a",
            "--ioengine=null",
            "--size=1m",
            "--output=/nonexistent/run.json",
        ],
        &["--output", "does not exist"],
    );
}

#[test]
fn bad_job_files_name_file_and_line() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    std::fs::write(
        p.join("bad.fio"),
        "[global]\nbs=4k\n\n[j]\nsize=1m\nverify_async=2\n",
    )
    .expect("write");
    refuses(
        p,
        &["bad.fio"],
        &["bad.fio:6: option 'verify_async' is not supported by sinkrate"],
    );
    std::fs::write(p.join("syntax.fio"), "[j\nsize=1m\n").expect("write");
    refuses(p, &["syntax.fio"], &["syntax.fio:1:", "closing ']'"]);
    std::fs::write(p.join("orphan.fio"), "size=1m\n").expect("write");
    refuses(
        p,
        &["orphan.fio"],
        &["orphan.fio:1:", "before any [section]"],
    );
    std::fs::write(p.join("env.fio"), "[j]\nsize=${SINKRATE_TEST_UNSET_VAR}\n").expect("write");
    refuses(p, &["env.fio"], &["env.fio:2:", "SINKRATE_TEST_UNSET_VAR"]);
    refuses(p, &["missing.fio"], &["missing.fio", "No such file"]);
    std::fs::write(p.join("incl.fio"), "[j]\ninclude nothere.fio\n").expect("write");
    refuses(p, &["incl.fio"], &["incl.fio:2:", "cannot include"]);
}

/// fio's "simple math" on reserved keywords in job files (`size=8*$mb_memory`): fio 3.33
/// hands such a value to bc, whole numbers with truncating division; sinkrate computes the
/// same, and the two run the same jobs of the same sizes.
#[test]
fn keyword_arithmetic_in_job_files_sizes_jobs_as_fio_does() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("kw.fio"),
        "[global]\nioengine=null\nrw=write\nbs=$pagesize\n[two]\nsize=2*$pagesize*256\nnumjobs=$ncpus\n[three]\nsize=(1+$ncpus)*$pagesize/2*2\n",
    )
    .expect("write");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let expected: Vec<(String, u64)> =
        std::iter::repeat_n(("two".to_string(), 512 * page), ncpus as usize)
            .chain([("three".to_string(), (1 + ncpus) * page / 2 * 2)])
            .collect();
    let sizes = |v: &serde_json::Value| -> Vec<(String, u64)> {
        v["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap_or_default().to_string(),
                    j["write"]["io_bytes"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    let ours = common::sinkrate_json(d.path(), &["kw.fio"]);
    assert_eq!(sizes(&ours), expected);
    if common::fio_or_skip("keyword_arithmetic_in_job_files_sizes_jobs_as_fio_does (fio beside)") {
        let fio = common::fio_json(d.path(), &["kw.fio"]);
        assert_eq!(sizes(&fio), expected, "fio");
    }
    std::fs::write(
        d.path().join("zero.fio"),
        "[z]\nioengine=null\nsize=$pagesize/0\n",
    )
    .expect("write");
    refuses(d.path(), &["zero.fio"], &["zero.fio:3:", "divides by zero"]);
}

#[test]
fn ignore_unsupported_turns_the_refusal_into_a_warning() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("j.fio"),
        "[j]\nioengine=null\nsize=1m\nverify_async=2\n",
    )
    .expect("write");
    let out = sinkrate()
        .current_dir(d.path())
        .args(["j.fio", "--ignore-unsupported"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Among the results' closing notes (standard error stays fio's).
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "note: j.fio:4: warning: option 'verify_async' is not supported by sinkrate; ignored"
        ),
        "{stdout}"
    );
}

#[test]
fn parse_only_does_no_io() {
    let d = tempfile::tempdir().expect("tempdir");
    let out = sinkrate()
        .current_dir(d.path())
        .args([
            "--parse-only",
            "--name=a",
            "--rw=randwrite",
            "--bs=4k",
            "--size=1g",
            "--numjobs=2",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains("rw=randwrite bs=4096,4096"), "{stdout}");
    assert!(files_in(d.path()).is_empty());
}

/// The values the coordination, behaviour, data-shape and zone options refuse: one line
/// naming the option and what it takes, exit 2, nothing written.
#[test]
fn job_coordination_and_shape_options_refuse_bad_values() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    let job = ["--name=a", "--size=1m"];
    for (extra, expect) in [
        (&["--flow=2000"][..], &["flow", "0 to 1000"][..]),
        (
            &["--exit_what=some"],
            &["exit_what", "group, stonewall or all"],
        ),
        (
            &["--io_submit_mode=later"],
            &["io_submit_mode", "inline or offload"],
        ),
        (
            &["--wait_for=nobody"],
            &["wait_for=nobody", "jobs before it: none"],
        ),
        (
            &["--random_generator=mt"],
            &["random_generator", "tausworthe, lfsr or tausworthe64"],
        ),
        (
            &["--fadvise_hint=maybe"],
            &["fadvise_hint", "sequential or random"],
        ),
        (
            &["--file_service_type=zipf:1.2"],
            &["file_service_type", "roundrobin, sequential, random"],
        ),
        (
            &["--clocksource=gettimeofday"],
            &["clocksource", "monotonic"],
        ),
        (&["--openfiles=0"], &["openfiles"]),
        (&["--ss_interval=0"], &["ss_interval"]),
        (
            &["--buffer_compress_percentage=150"],
            &["buffer_compress_percentage", "0 to 100"],
        ),
        (
            &["--dedupe_mode=often"],
            &["dedupe_mode", "repeat or working_set"],
        ),
        (
            &["--dedupe_percentage=10", "--dedupe_global=1"],
            &["dedupe_global", "working_set"],
        ),
        (
            &["--dedupe_percentage=10", "--zero_buffers=1"],
            &["zero_buffers"],
        ),
        (&["--zonemode=zbd"], &["zonemode", "zbd"]),
        (
            &[
                "--zonemode=strided",
                "--zonesize=256k",
                "--random_distribution=zipf:1.2",
            ],
            &["random_distribution"],
        ),
    ] {
        refuses(p, &[&job[..], extra].concat(), expect);
    }
}

fn corpus_dir() -> std::path::PathBuf {
    match std::env::var_os("SINKRATE_FIO_EXAMPLES") {
        Some(dir) => dir.into(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fio-examples"),
    }
}

/// Whether sinkrate would tell of an option without effect in this job file
/// (`--parse-only` lists them as notices).
fn no_effect_used(job: &std::path::Path) -> bool {
    let out = sinkrate()
        .arg("--parse-only")
        .arg(job)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    String::from_utf8_lossy(&out.stdout).contains("has no effect")
        || String::from_utf8_lossy(&out.stderr).contains("has no effect")
}

/// Every fio example either runs (shrunk by command-line overrides) or is refused with one
/// line naming the file and what is unsupported; none may panic, hang or leave files.
#[test]
fn fio_example_corpus_runs_or_is_refused_clearly() {
    let corpus = corpus_dir();
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        common::skip(
            "fio_example_corpus_runs_or_is_refused_clearly",
            &format!(
                "{} is not there (set SINKRATE_FIO_EXAMPLES)",
                corpus.display()
            ),
        );
        return;
    };
    let mut paths: Vec<std::path::PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    // Four examples at a time, each in its own directory (a few run for seconds, most wait
    // out their one-second runtime; nothing here is timed).
    let outcomes: Vec<Outcome> = common::each_at_once(&paths, 4, |p| run_example(p));
    let ran = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Ran))
        .count();
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Refused))
        .count();
    let without_effect: Vec<&String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::WithoutEffect(name) => Some(name),
            _ => None,
        })
        .collect();
    eprintln!("fio examples: {ran} ran, {refused} refused, with an option without effect: {without_effect:?}");
    // nbd.fio runs under an NBD server, as its header says; without nbdkit it cannot.
    let floor = if common::have("nbdkit") {
        45
    } else {
        common::skip(
            "fio_example_corpus_runs_or_is_refused_clearly (nbd.fio)",
            "needs 'nbdkit' (scripts/install-deps.sh --test installs it)",
        );
        44
    };
    assert!(ran >= floor, "only {ran} examples ran");
    assert_eq!(ran + refused + without_effect.len(), paths.len());
}

enum Outcome {
    Ran,
    Refused,
    WithoutEffect(String),
}

/// Runs one fio example, shrunk, in a directory of its own, and checks what it did: no
/// panic, no hang, no file left, and a refusal in one line naming the file.
fn run_example(path: &std::path::Path) -> Outcome {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let d = tempfile::tempdir().expect("tempdir");
    let work = d.path().join("work");
    let job_text = std::fs::read_to_string(path).unwrap_or_default();
    // A job that fills its device and then verifies it (surface-scan) fills a small
    // filesystem of its own, to its end, as written: on the disk's free space, cut at a
    // time limit, a busy disk's write phase was shorter than a verify phase held to 16 MiB
    // (fio then fails its verify too).
    let fills_the_device = ["fill_device=1", "fill_fs=1"]
        .iter()
        .any(|o| job_text.lines().any(|l| l.trim() == *o));
    let _small_fs =
        (fills_the_device && common::is_root()).then(|| common::MemoryFs::new(&work, "24m"));
    let mut args: Vec<String> = Vec::new();
    if _small_fs.is_none() {
        std::fs::create_dir(&work).expect("mkdir");
        args.extend(["--size=16m", "--runtime=1"].map(String::from));
    }
    args.extend(["--startdelay=0", "--ramp_time=0"].map(String::from));
    args.push(format!("--directory={}", work.display()));
    let runs_on_nbd = job_text.lines().any(|l| l.trim() == "ioengine=nbd");
    let mut cmd = if runs_on_nbd && common::have("nbdkit") {
        // As the example's header runs it: under nbdkit's RAM disk, which exports $uri.
        // Under coreutils' timeout, which stops the whole group on a hang: sinkrate runs
        // in nbdkit's shell, and would hold the output pipes open past nbdkit's kill.
        let mut c = assert_cmd::Command::new("timeout");
        c.args(["--kill-after=5", "60", "nbdkit"])
            .args(["-U", "-", "memory", "size=256M", "--run"])
            .arg(format!(
                "export uri; exec '{}' bench --eta=never '{}' {}",
                common::sinkrate_path().display(),
                path.display(),
                args.iter()
                    .map(|a| format!("'{a}'"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        c
    } else {
        let mut c = sinkrate();
        c.arg(path).args(&args);
        c
    };
    let out = cmd
        .current_dir(d.path())
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    let outcome = match out.status.code() {
        // A run that leaned on an option without effect does not count as run.
        Some(0) if stderr.contains("has no effect") || no_effect_used(path) => {
            Outcome::WithoutEffect(name.clone())
        }
        Some(0) => Outcome::Ran,
        Some(2) => {
            let errors: Vec<&str> = stderr
                .lines()
                .filter(|l| l.starts_with("sinkrate: error:"))
                .collect();
            assert_eq!(errors.len(), 1, "{name}: {stderr}");
            assert!(
                errors[0].contains(&name),
                "{name}: the error does not name the file: {}",
                errors[0]
            );
            Outcome::Refused
        }
        other => panic!("{name}: exit {other:?} (a hang ends as a timeout): {stderr}"),
    };
    // A job file with unlink=1 removes what it made; without it the files stay, as fio's.
    let removes = job_text
        .lines()
        .any(|l| matches!(l.trim(), "unlink=1" | "unlink=true"));
    assert!(
        !removes || common::files_in(&work).is_empty(),
        "{name} left {:?}",
        common::files_in(&work)
    );
    outcome
}

/// GNU time, which reports the peak resident memory of the program it starts.
const GNU_TIME: &str = "/usr/bin/time";

/// Runs `sinkrate ARGS` in `dir` with the open-file limit at `nofile` (soft, hard), and
/// returns its exit code, stdout, stderr and peak resident memory in bytes (`None` without GNU
/// time). The peak is GNU time's: a process's own wait4 figure also counts the memory of
/// the process that started it (Linux carries it across fork and exec), here the test
/// binary's with every other test running in it; GNU time starts sinkrate from its own
/// few megabytes.
fn run_measured(
    dir: &std::path::Path,
    args: &[&str],
    nofile: Option<(u64, u64)>,
) -> (Option<i32>, String, String, Option<u64>) {
    use std::os::unix::process::CommandExt;
    let out_path = dir.join("stdout.txt");
    let err_path = dir.join("stderr.txt");
    let peak_path = dir.join("peak.txt");
    let timed = std::path::Path::new(GNU_TIME).exists();
    let mut cmd = if timed {
        let mut c = std::process::Command::new(GNU_TIME);
        c.args(["-f", "%M", "-o"])
            .arg(&peak_path)
            .arg(common::sinkrate_path());
        c
    } else {
        std::process::Command::new(common::sinkrate_path())
    };
    cmd.current_dir(dir)
        .args(args)
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    if let Some((soft, hard)) = nofile {
        // SAFETY: setrlimit between fork and exec touches no shared state.
        unsafe {
            cmd.pre_exec(move || {
                let l = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let code = cmd.status().expect("runs").code();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    // GNU time's last line is the figure (a line before it says a non-zero exit).
    let peak = std::fs::read_to_string(&peak_path).ok().map(|t| {
        t.lines()
            .last()
            .and_then(|l| l.trim().parse::<u64>().ok())
            .expect("GNU time's %M")
            * 1024
    });
    let _ = std::fs::remove_file(&peak_path);
    (code, stdout, stderr, peak)
}

#[test]
fn memory_stays_within_what_was_planned_and_a_set_that_does_not_fit_is_refused_before_any_file() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut jobs = String::from("[global]\nrw=write\nsize=64k\nunlink=1\n");
    for i in 0..1000 {
        jobs.push_str(&format!("[j{i}]\n"));
    }
    std::fs::write(d.path().join("many.fio"), jobs).expect("job file");
    let (code, out, err, peak) =
        run_measured(d.path(), &["bench", "many.fio", "--debug=mem"], None);
    assert_eq!(code, Some(0), "{err}");
    // What holds on any machine: the run never takes more than the memory guard planned for
    // it (the figure a set is refused by). How small the peak is depends on the latencies
    // the histograms must span, which a busy machine stretches: that figure is
    // bench/jobs-memory's, against fio's (152 KiB a job idle; 486 MB for these 1,000 jobs
    // once seen on a busy machine before results were rendered without a copy).
    let planned: u64 = out
        .lines()
        .find_map(|l| l.split("planned: 1000 job(s) at once need ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a --debug=mem plan line for 1000 jobs in {out:?}"));
    match peak {
        Some(peak) => assert!(
            peak <= planned,
            "1000 jobs peaked at {} MB, over the {} MB planned",
            peak >> 20,
            planned >> 20
        ),
        None => common::skip(
            "memory_stays_within_what_was_planned (the peak)",
            "needs GNU time (scripts/install-deps.sh --test installs it)",
        ),
    }
    assert_eq!(files_in(d.path()), vec!["many.fio".to_string()]);

    // Four jobs of 64 x 256 MiB buffers: 64 GiB, more than any test machine has.
    let big = "[g]\nrw=write\nsize=256M\nbs=256M\nioengine=libaio\niodepth=64\nnumjobs=4\n";
    std::fs::write(d.path().join("big.fio"), big).expect("job file");
    refuses(
        d.path(),
        &["big.fio"],
        &[
            "4 job(s) running at once need about 64.0GiB of memory",
            "available",
        ],
    );
}

#[test]
fn more_open_files_than_the_process_may_hold_is_refused_before_any_file() {
    let d = tempfile::tempdir().expect("tempdir");
    let job = "[j]\nrw=write\nsize=4M\nbs=4k\nnrfiles=1000\n";
    std::fs::write(d.path().join("nf.fio"), job).expect("job file");
    let (code, _, err, _) = run_measured(d.path(), &["bench", "nf.fio"], Some((256, 256)));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("hold 1000 files open") && err.contains("ulimit -n 256"),
        "{err}"
    );
    assert_eq!(files_in(d.path()), vec!["nf.fio".to_string()]);
    // A soft limit below what the job needs is raised to the hard limit when that is enough.
    let (code, _, err, _) = run_measured(
        d.path(),
        &["bench", "nf.fio", "--output-format", "terse"],
        Some((256, 4096)),
    );
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_failed_job_reports_the_systems_errno_as_fio_does() {
    common::with_root(
        "a_failed_job_reports_the_systems_errno_as_fio_does",
        &["mkfs.ext4", "fio"],
        || {
            let fs = common::ScratchFs::new("64M", "ext4", "ro");
            let file = format!("--filename={}/f", fs.path().display());
            let job = [
                "--name=x",
                "--rw=write",
                "--size=1M",
                &file,
                "--output-format=json",
            ];
            let errno = |program: &std::path::Path, bench: bool| -> i64 {
                let mut cmd = std::process::Command::new(program);
                if bench {
                    cmd.arg("bench");
                }
                let out = cmd.args(job).output().expect("runs");
                let v: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("a JSON report");
                v["jobs"][0]["error"].as_i64().expect("error number")
            };
            let fio = errno(&common::fio_path(), false);
            assert_eq!(fio, i64::from(libc::EROFS), "fio's own figure");
            assert_eq!(errno(&common::sinkrate_path(), true), fio);
        },
    );
}

/// A job fio runs without a word runs without a word: libaio on the io_uring backend is kept
/// in the JSON's notices, not said on stderr.
#[test]
fn what_fio_does_silently_stays_off_stderr() {
    // Not /tmp: O_DIRECT needs a filesystem that takes it.
    let d = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let out = common::sinkrate()
        .current_dir(d.path())
        .args([
            "--name=quiet",
            "--ioengine=libaio",
            "--iodepth=4",
            "--rw=write",
            "--bs=64k",
            "--size=4m",
            "--direct=1",
            "--continue_on_error=none",
            "--output-format=json",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("libaio") && !stderr.contains("continue_on_error"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let notices = v["notices"].to_string();
    // continue_on_error is an option like any other now: nothing to note.
    assert!(
        notices.contains("io_uring backend") && !notices.contains("continue_on_error"),
        "{notices}"
    );
}

/// `--readonly` refuses a job that writes and `--section` runs only the named sections, as
/// fio's do (checked beside fio when it is installed).
#[test]
fn readonly_and_section_as_fio_has_them() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("two.fio"),
        "[global]\nsize=1m\n[a]\nrw=read\nfilename=a.dat\n[b]\nrw=write\nfilename=b.dat\n",
    )
    .expect("job file");
    // The file section a reads is there already: under --readonly fio will not lay it out.
    std::fs::write(d.path().join("a.dat"), vec![7u8; 1 << 20]).expect("a.dat");
    let ours = |args: &[&str]| {
        let out = sinkrate()
            .current_dir(d.path())
            .args(args)
            .output()
            .expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.stdout,
        )
    };
    let fio = |args: &[&str]| {
        let o = std::process::Command::new("fio")
            .current_dir(d.path())
            .args(args)
            .fio_output();
        Some((o.status.code(), o.stdout))
    };
    let names = |stdout: &[u8]| -> Vec<String> {
        let text = String::from_utf8_lossy(stdout);
        let v: serde_json::Value =
            serde_json::from_str(&text[text.find('{').expect("JSON")..]).expect("JSON");
        v["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(|j| j["jobname"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // Only section a: it reads, so --readonly lets it run; b is not run, its file not made.
    let args = [
        "two.fio",
        "--section=a",
        "--readonly",
        "--output-format=json",
    ];
    let (code, err, out) = ours(&args);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(names(&out), ["a"]);
    assert!(!d.path().join("b.dat").exists(), "section b did not run");
    assert!(
        d.path().join("a.dat").exists(),
        "the file it read is the user's: kept"
    );
    // All sections under --readonly: b writes, and nothing runs.
    let (code, err, _) = ours(&["two.fio", "--readonly"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("two.fio:") && err.contains("job 'b' writes") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!d.path().join("b.dat").exists(), "nothing written");
    let (code, err, _) = ours(&["two.fio", "--section=c"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--section c: no job of that name (the jobs: a, b)"),
        "{err}"
    );
    if let Some((code, out)) = fio(&args) {
        assert_eq!(code, Some(0));
        assert_eq!(names(&out), ["a"], "fio runs the same section");
        assert_ne!(fio(&["two.fio", "--readonly"]).map(|r| r.0), Some(Some(0)));
        assert_ne!(fio(&["two.fio", "--section=c"]).map(|r| r.0), Some(Some(0)));
    } else {
        common::skip(
            "readonly_and_section_as_fio_has_them (the fio half)",
            "fio is not installed",
        );
    }
}

/// fio's command-line options for what to print and how much to run: `--showcmd` (the same
/// options fio prints for the file), `--minimal` and `--terse-version`, `--max-jobs`,
/// `--warnings-fatal`; what sinkrate cannot do is refused in one line.
#[test]
fn showcmd_minimal_max_jobs_and_warnings_fatal_as_fio_has_them() {
    let d = tempfile::tempdir().expect("tempdir");
    let job = d.path().join("two.fio");
    std::fs::write(
        &job,
        "[global]\nbs=4k\nsize=1m\n; a comment\n[a]\nrw=read\n[b]\nrw=write\nnumjobs=2\ntime_based\n",
    )
    .expect("job file");
    let job_arg = job.to_str().expect("utf8");
    let (code, out, err) = common::sinkrate_sub("bench", &["--showcmd", job_arg]);
    assert_eq!(code, Some(0), "{err}");
    let ours = out.trim().to_string();
    assert_eq!(
        ours,
        "sinkrate bench --bs=4k --size=1m --name=a --rw=read --name=b --rw=write --numjobs=2 --time_based"
    );
    if common::have("fio") {
        let fio = common::run("fio", &["--showcmd", job_arg]);
        assert_eq!(ours.replacen("sinkrate bench", "fio", 1), fio.trim());
    }
    let (code, out, err) = common::sinkrate_sub(
        "bench",
        &["--minimal", "--name=m", "--ioengine=null", "--size=1m"],
    );
    assert_eq!(code, Some(0), "{err}");
    // fio's version form, which consumers check for, with the tool that wrote it after it.
    assert!(
        out.starts_with("3;fio-3.33-sinkrate-") && out.contains(";m;"),
        "{out}"
    );
    if common::have("fio") {
        // Every percentile label as fio's, an idle direction's too (`1.000000%=0`, then
        // `0%=0` for the slots past the list).
        let labels = |line: &str| -> Vec<String> {
            line.trim()
                .split(';')
                .filter_map(|f| f.split_once("%=").map(|(label, _)| label.to_string()))
                .collect()
        };
        let fio = common::run(
            "fio",
            &["--minimal", "--name=m", "--ioengine=null", "--size=1m"],
        );
        assert_eq!(labels(&out), labels(&fio), "{fio}");
        assert_eq!(labels(&out).len(), 40, "read and write, 20 slots each");
        // A flag given without a value is left out of "job options", as fio leaves it out.
        let d = tempfile::tempdir().expect("tempdir");
        let job = [
            "--name=t",
            "--ioengine=null",
            "--size=1m",
            "--time_based",
            "--runtime=100ms",
        ];
        let options = |v: serde_json::Value| v["jobs"][0]["job options"].clone();
        assert_eq!(
            options(common::sinkrate_json(d.path(), &job)),
            options(common::fio_json(d.path(), &job))
        );
    }
    let (code, out, _) = common::sinkrate_sub(
        "bench",
        &[
            "--minimal",
            "--terse-version=3",
            "--name=m",
            "--ioengine=null",
            "--size=1m",
        ],
    );
    assert_eq!((code, out.starts_with("3;")), (Some(0), true));
    let one = ["--name=m", "--ioengine=null", "--size=1m"];
    let cases: [(Vec<&str>, &str); 3] = [
        (
            [&["--terse-version=4", "--minimal"][..], &one].concat(),
            "--terse-version=4",
        ),
        (
            vec!["--max-jobs=2", job_arg, "--ioengine=null"],
            "define 3 jobs",
        ),
        (
            [
                &["--warnings-fatal", "--ignore-unsupported", "--gtod_cpu=1"][..],
                &one,
            ]
            .concat(),
            "gtod_cpu",
        ),
    ];
    for (args, expect) in cases {
        common::refuses(d.path(), &args, &[expect]);
    }
    let (code, _, err) = common::sinkrate_sub(
        "bench",
        &["--max-jobs=3", job_arg, "--ioengine=null", "--time_based=0"],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// `--status-interval=1`: the results so far every second, each a whole document in the
/// output format, cumulative from the job's start, then the final one; fio's count beside
/// it on the same job. With `--output`, all of them go to the file.
#[test]
fn status_interval_reports_the_results_so_far_as_fio_does() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let job = [
        "--name=st",
        "--filename=stf",
        "--size=16m",
        "--rw=randread",
        "--bs=4k",
        "--rate_iops=500",
        // Reads from the page cache, read in full before the job (the layout's own pages
        // are dropped, as fio's): the pace is then the pacer's, not the disk's while the
        // tests beside this one load it (one CI run fell to 90%).
        "--pre_read=1",
        "--time_based",
        "--runtime=2500ms",
        "--status-interval=1",
        "--output-format=json",
    ];
    let fio = std::thread::scope(|s| {
        let fio = s.spawn(|| {
            common::have("fio").then(|| {
                let f = tempfile::tempdir_in("/var/tmp").expect("tmp");
                let out = std::process::Command::new("fio")
                    .current_dir(f.path())
                    .args(job)
                    .fio_output();
                common::json_documents(&out.stdout)
            })
        });
        let out = sinkrate()
            .current_dir(d.path())
            .args(job)
            .arg("--output=st.json")
            .output()
            .expect("runs");
        common::succeeded(&out);
        fio.join().expect("fio")
    });
    let docs = common::json_documents(&std::fs::read(d.path().join("st.json")).expect("st.json"));
    // A report every second from the tool's start until the job ends, then the final one
    // when it ends: at least those at 1 s and 2 s of a 2.5 s job, and one more for each
    // second its start was late (its file laid out and read in first; beside a loaded disk
    // fio's came up to 2 s late). The same rule for fio's documents, beside it.
    let every_second = |docs: &[serde_json::Value]| -> Result<(), String> {
        let stamps: Vec<u64> = docs
            .iter()
            .map(|v| v["timestamp_ms"].as_u64().unwrap_or(0))
            .collect();
        let gaps: Vec<u64> = stamps
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
            .collect();
        let (interval, last) = gaps.split_at(gaps.len().saturating_sub(1));
        let ok = docs.len() >= 3
            && interval.iter().all(|g| (700..1300).contains(g))
            && last.iter().all(|g| *g < 1300);
        if ok {
            Ok(())
        } else {
            Err(format!("{} documents, {gaps:?} ms apart", docs.len()))
        }
    };
    assert_eq!(every_second(&docs), Ok(()), "sinkrate's reports");
    // Each report holds the job's figures from its own start (its files are laid out
    // first, later on a loaded machine): never more I/Os than its runtime allows at 500
    // IOPS, never fewer in a later report, and the whole 2.5 s of them at the end.
    let figures: Vec<(u64, u64)> = docs
        .iter()
        .map(|v| {
            let job = &v["jobs"][0];
            let ios = job["read"]["total_ios"].as_u64().expect("total_ios");
            (job["job_runtime"].as_u64().expect("job_runtime"), ios)
        })
        .collect();
    // At the end, 95% of the pace at least; on a machine too busy for that (two busy loops
    // and a writer beside the suite made 93%), no fewer than fio's own count, paced the
    // same way beside it, less 3%.
    let fio_final = fio
        .as_ref()
        .and_then(|docs| docs.last())
        .and_then(|v| v["jobs"][0]["read"]["total_ios"].as_u64());
    let floor = fio_final.map_or(1187, |theirs| 1187.min(theirs * 97 / 100));
    assert!(
        figures.iter().all(|(ms, ios)| *ios <= ms / 2 + 2)
            && figures
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
            && figures.last().is_some_and(|(ms, ios)| {
                (2500..2600).contains(ms) && (floor..=1252).contains(ios)
            }),
        "{figures:?}: (runtime ms, I/Os) at 500 IOPS; fio's final count {fio_final:?}"
    );
    let keys = |v: &serde_json::Value| {
        v["jobs"][0]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
    };
    assert_eq!(
        keys(&docs[0]),
        keys(&docs[docs.len() - 1]),
        "each report is a whole result"
    );
    // Each report carries the disks' counts so far, as fio's: the same disks in every
    // report and at the end, their reads never fewer in a later one.
    let disks = |v: &serde_json::Value| -> Vec<(String, u64)> {
        v["disk_util"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| {
                        (
                            d["name"].as_str().unwrap_or_default().to_string(),
                            d["read_ios"].as_u64().unwrap_or(u64::MAX),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let per_report: Vec<Vec<(String, u64)>> = docs.iter().map(disks).collect();
    let names = |r: &Vec<(String, u64)>| r.iter().map(|d| d.0.clone()).collect::<Vec<_>>();
    assert!(
        per_report.iter().all(|r| names(r) == names(&per_report[0]))
            && per_report
                .windows(2)
                .all(|w| w[0].iter().zip(&w[1]).all(|(a, b)| a.1 <= b.1)),
        "disk_util per report: {per_report:?}"
    );
    match fio {
        Some(theirs) => {
            assert_eq!(every_second(&theirs), Ok(()), "fio's reports");
            // Both tools' files are on the same file system (/var/tmp): the same disks. fio
            // lists a disk once a job has set up its file on it: a loaded machine's first
            // report can come while the job still lays its file out, with none (a CI run's
            // first of four did).
            let theirs: Vec<Vec<String>> = theirs.iter().map(|v| names(&disks(v))).collect();
            assert!(
                theirs
                    .iter()
                    .all(|t| t.is_empty() || *t == names(&per_report[0]))
                    && theirs.last().is_some_and(|t| *t == names(&per_report[0])),
                "fio's disks {theirs:?}, sinkrate's {per_report:?}"
            );
        }
        None => common::skip(
            "status_interval_reports_the_results_so_far_as_fio_does (beside fio)",
            "fio is not installed",
        ),
    }
}

/// `--debug=io,file`: fio's lines on standard output (`io       PID  queue: io_u 0x..:
/// off=0x1000,len=0x1000,ddir=1,file=df`), each I/O filled, prepared, queued and completed,
/// and the files set up, opened and closed: the same I/O lines as fio's for the same jobs,
/// synchronous and queued.
#[test]
fn debug_io_and_file_as_fio_prints_them() {
    let d = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let jobs: [&[&str]; 2] = [
        &[
            "--name=d",
            "--filename=df",
            "--size=16k",
            "--bs=4k",
            "--rw=write",
        ],
        &[
            "--name=q",
            "--filename=qf",
            "--size=64k",
            "--bs=4k",
            "--rw=randread",
            "--ioengine=io_uring",
            "--iodepth=4",
        ],
    ];
    // The I/O lines without the thread id and buffer address, sorted; and the file lines.
    let split = |stdout: &[u8]| {
        let text = String::from_utf8_lossy(stdout).into_owned();
        let mut io = Vec::new();
        let mut file = Vec::new();
        for line in text.lines() {
            let (kind, rest) = match line.split_once(' ') {
                Some((k, r)) if k == "io" || k == "file" => (k, r),
                _ => continue,
            };
            assert_eq!(&line[..9].trim_end(), &kind, "kind in 8 columns: {line}");
            let event = rest
                .trim_start()
                .split_once(' ')
                .map(|(_, e)| e.trim_start());
            let event = event.expect("a thread id, then the event").to_string();
            if kind == "io" {
                if let Some((stage, after)) = event.split_once(": io_u ") {
                    let (_, what) = after.split_once(": ").expect("the io_u, then the I/O");
                    io.push(format!("{stage} {what}"));
                }
            } else {
                file.push(event);
            }
        }
        io.sort();
        (io, file)
    };
    for job in jobs {
        let args = [job, &["--debug=io,file"]].concat();
        let ours = sinkrate()
            .current_dir(d.path())
            .args(&args)
            .output()
            .expect("runs");
        assert!(ours.status.success());
        assert!(String::from_utf8_lossy(&ours.stderr).contains("set debug option io"));
        let (io, file) = split(&ours.stdout);
        // fill, prep, queue, complete; a queued engine's prep also says how it went.
        let lines = if job[2] == "--size=16k" {
            4 * 4
        } else {
            16 * 5
        };
        assert_eq!(io.len(), lines, "{io:?}");
        let name = &job[1]["--filename=".len()..];
        for wanted in ["setup files", "close files"] {
            assert!(file.iter().any(|l| l == wanted), "{file:?}");
        }
        assert!(file
            .iter()
            .any(|l| l.starts_with(&format!("open file {name}, flags "))));
        assert!(file.contains(&format!("fd close {name}")), "{file:?}");
        if common::have("fio") {
            let fio = std::process::Command::new("fio")
                .current_dir(d.path())
                .args(&args)
                .fio_output();
            let (fio_io, fio_file) = split(&fio.stdout);
            assert_eq!(io, fio_io, "the same I/O lines as fio's");
            assert!(
                fio_file.contains(&format!("fd close {name}")),
                "{fio_file:?}"
            );
        }
    }
    common::refuses(
        d.path(),
        &["--name=x", "--filename=x", "--size=4k", "--debug=random"],
        &["--debug=random", "io, file and mem"],
    );
}

/// `--cmdhelp` lists every option the parser takes, each with help, and every one of them
/// is an option of fio's own (asked of the fio beside: `--cmdhelp`, or an engine's
/// `--enghelp`), except the few newer than fio 3.33, each named here.
#[test]
fn cmdhelp_lists_every_option_each_one_fio_has() {
    let (code, out, err) = common::sinkrate_out(&["bench", "--cmdhelp"]);
    assert_eq!(code, Some(0), "{err}");
    let names: Vec<&str> = out
        .lines()
        .map(|l| l.split(':').next().unwrap_or("").trim())
        .collect();
    assert!(names.len() > 140, "{} options", names.len());
    for line in out.lines() {
        let (_, help) = line.split_once(':').expect("name: help");
        assert!(help.trim().len() > 5, "an option without help: {line}");
    }
    let (code, one, _) = common::sinkrate_out(&["bench", "--cmdhelp", "bs"]);
    assert_eq!(code, Some(0));
    assert!(
        one.contains("bs: Block size") && one.contains("default: 4096"),
        "{one}"
    );
    let (code, _, err) = common::sinkrate_out(&["bench", "--cmdhelp", "blocksiz"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("did you mean blocksize"), "{err}");
    if !common::fio_or_skip("cmdhelp_lists_every_option_each_one_fio_has (fio beside)") {
        return;
    }
    let fio = |args: &[&str]| {
        let out = std::process::Command::new("fio").args(args).fio_output();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let engine_options: String = ["cpuio", "exec", "nbd", "io_uring"]
        .iter()
        .map(|e| fio(&[&format!("--enghelp={e}")]))
        .collect();
    // Newer than the fio 3.33 packaged here.
    let newer = ["random_sequence_stride", "ss_interval"];
    for name in names {
        // fio prints an option's help on standard output, "No such command" on standard
        // error.
        let known = !fio(&[&format!("--cmdhelp={name}")]).trim().is_empty()
            || engine_options
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name))
            || newer.contains(&name);
        assert!(known, "{name} is not an option of fio's");
    }
}

/// The option table's defaults and ranges are fio's: each option's `--cmdhelp` is compared
/// with what the fio beside says of it. fio's "no default" is a zeroed field, which is
/// sinkrate's "0" or none; fio's "0" for a text or time option is sinkrate's none. Where
/// sinkrate departs on purpose, the option is named with why.
#[test]
fn cmdhelp_defaults_and_ranges_are_fios() {
    if !common::fio_or_skip("cmdhelp_defaults_and_ranges_are_fios") {
        return;
    }
    // Deliberate departures, each said in --cmdhelp or the README.
    let departs = [
        // sinkrate's jobs are always threads of one process.
        "thread",
        // sinkrate times with the monotonic clock, whatever is asked.
        "clocksource",
        // fio 3.33's nbd engine prints "read" as uri's default, a slip in its help.
        "uri",
        // sinkrate's verify header is 64 bytes, fio's minimum interval 80.
        "verify_interval",
    ];
    let field = |text: &str, label: &str| -> Option<String> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == label).then(|| v.trim().to_string())
        })
    };
    let (_, all, _) = common::sinkrate_out(&["bench", "--cmdhelp"]);
    let mut compared = 0;
    let mut differ = Vec::new();
    for name in all
        .lines()
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
    {
        let (_, ours, _) = common::sinkrate_out(&["bench", "--cmdhelp", name]);
        let out = std::process::Command::new("fio")
            .arg(format!("--cmdhelp={name}"))
            .fio_output();
        let theirs = String::from_utf8_lossy(&out.stdout).into_owned();
        if theirs.trim().is_empty() || departs.contains(&name) {
            // An engine's option or one newer than this fio: --enghelp says no defaults.
            continue;
        }
        compared += 1;
        let our_default = field(&ours, "default").unwrap_or_default();
        let their_default = field(&theirs, "default").unwrap_or_default();
        let same_default = our_default == their_default
            || (their_default == "no default" && ["", "0"].contains(&our_default.as_str()))
            || (their_default == "0" && our_default.is_empty());
        if !same_default {
            differ.push(format!(
                "{name}: default {our_default:?}, fio's {their_default:?}"
            ));
        }
        // fio: "min=0, max=100" (max=-1: no bound; floats for percentiles).
        let their_range = field(&theirs, "range").and_then(|r| {
            let (min, max) = r.split_once(',')?;
            let min: f64 = min.trim().strip_prefix("min=")?.parse().ok()?;
            let max: f64 = max.trim().strip_prefix("max=")?.parse().ok()?;
            Some((min, (max >= 0.0).then_some(max)))
        });
        let our_range = field(&ours, "range").map(|r| match r.split_once(" to ") {
            Some((min, max)) => (min.parse::<f64>().unwrap_or(-1.0), max.parse::<f64>().ok()),
            None => (
                r.trim_end_matches(" or more")
                    .parse::<f64>()
                    .unwrap_or(-1.0),
                None,
            ),
        });
        match (our_range, their_range) {
            // A bounded range of fio's is sinkrate's too.
            (ours, Some((min, Some(max)))) if ours != Some((min, Some(max))) => {
                differ.push(format!("{name}: range {ours:?}, fio's {min} to {max}"))
            }
            // sinkrate's range lies within fio's: what sinkrate takes, fio takes.
            (Some((lo, hi)), Some((min, None))) if lo < min => differ.push(format!(
                "{name}: range from {lo} to {hi:?}, fio's from {min}"
            )),
            _ => {}
        }
    }
    assert!(compared > 120, "{compared} options compared");
    assert!(differ.is_empty(), "not fio's: {differ:#?}");
}
