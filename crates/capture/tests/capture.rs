//! A real program captured: its files' bytes and syncs as the trace has them, against the
//! files themselves.

use std::sync::atomic::AtomicBool;

use sinkrate_capture::{find_program, read_sidecar, session, Header, Op, Recorder};

/// One capture at a time: a capture with the interposer takes the process's SIGCHLD handler.
static ONE_CAPTURE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn header(command: &[String]) -> Header {
    Header {
        sinkrate_trace: sinkrate_capture::trace::SIDECAR_VERSION,
        command: command.to_vec(),
        started_at: "2026-01-01T00:00:00Z".into(),
        arch: std::env::consts::ARCH.into(),
        kernel: None,
        tool_version: "test".into(),
    }
}

/// Captures a program: the report, the outcome, the iolog and the sidecar.
fn capture_of(
    program: &str,
    args: &[&str],
    interpose: bool,
) -> (
    sinkrate_model::capture::CaptureReport,
    sinkrate_capture::Outcome,
    String,
    String,
) {
    let command: Vec<String> = std::iter::once(program)
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    let program = find_program(program).expect("program");
    let _one = ONE_CAPTURE_AT_A_TIME.lock();
    let mut iolog = Vec::new();
    let mut sidecar = Vec::new();
    let stop = AtomicBool::new(false);
    let (report, outcome) = session(
        &Recorder::Run {
            program: &program,
            command: &command,
            interpose,
        },
        &mut iolog,
        &mut sidecar,
        &header(&command),
        &stop,
        // The kernel's account of slow calls is tested end to end (tests/it/causes.rs).
        &sinkrate_capture::Explain {
            stall_threshold: std::time::Duration::from_millis(100),
            kernel_events_off: Some("not read in these tests".into()),
        },
        &mut |_| {},
    )
    .expect("capture");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf8");
    (report, outcome, text(iolog), text(sidecar))
}

/// The bytes the capture saw written to the file at `path`.
fn bytes_of(report: &sinkrate_model::capture::CaptureReport, path: &std::path::Path) -> u64 {
    report
        .files
        .iter()
        .find(|f| std::path::Path::new(&f.file) == path)
        .unwrap_or_else(|| panic!("{} not captured: {report:#?}", path.display()))
        .bytes
}

#[test]
fn writes_come_through_the_interposer_and_the_same_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        "dd if=/dev/zero of={d}/a bs=4k count=5 conv=fsync status=none; printf abcd > {d}/b"
    );
    let (fast, fast_outcome, ..) = capture_of("sh", &["-c", &script], true);
    let (slow, slow_outcome, ..) = capture_of("sh", &["-c", &script], false);
    for r in [&fast, &slow] {
        assert_eq!(bytes_of(r, &dir.path().join("a")), 20480);
        assert_eq!(bytes_of(r, &dir.path().join("b")), 4);
        assert_eq!(r.calls, fast.calls, "the same calls either way");
    }
    // dd's five writes and its fsync, and the shell's printf: no stop for any of them.
    assert!(fast_outcome.interposed >= 7, "{fast_outcome:?}");
    assert_eq!(slow_outcome.interposed, 0);
    assert!(
        fast_outcome.stops < slow_outcome.stops,
        "{fast_outcome:?} {slow_outcome:?}"
    );
}

/// The tracer reads each interposed record's file from /proc once per descriptor: a number
/// closed and opened again on another file, or a file renamed while open, is named as it is
/// when the write is made, through the interposer as without it.
#[test]
fn a_descriptor_reused_or_renamed_names_the_file_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        "exec 7>{d}/a; printf 1 >&7; printf 22 >&7; exec 7>&-; \
         exec 7>{d}/b; printf 333 >&7; exec 7>{d}/c; printf 4444 >&7; \
         mv {d}/c {d}/d; printf 55555 >&7; exec 7>&-"
    );
    for interpose in [true, false] {
        // dash: its printf calls write() (bash's goes through stdio, inside libc).
        let (report, outcome, _, sidecar) = capture_of("sh", &["-c", &script], interpose);
        assert_eq!(outcome.exit_code, Some(0), "{report:#?}");
        // Each write as the trace has it: its file and its length.
        let writes: Vec<(String, u64)> = sidecar
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["op"] == "write")
            .map(|v| {
                let file = v["file"].as_str().unwrap_or_default();
                let name = file.rsplit('/').next().unwrap_or_default().to_string();
                (name, v["len"].as_u64().unwrap_or(0))
            })
            .collect();
        let expected: Vec<(String, u64)> = [("a", 1), ("a", 2), ("b", 3), ("c", 4), ("d", 5)]
            .iter()
            .map(|(f, n)| (f.to_string(), *n))
            .collect();
        assert_eq!(writes, expected, "interposer {interpose}: {sidecar}");
        if interpose {
            assert!(outcome.interposed >= 5, "{outcome:?}");
        }
    }
}

/// A recorder that closes the interposer's pipe (as a daemon closes what it inherited) is
/// captured whole by the tracer instead; one that closes it behind the interposer's back and
/// puts a file of its own under the same number never finds a record in that file.
#[test]
fn a_recorder_that_closes_the_pipe_is_captured_whole_and_its_files_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        "fd=${{SINKRATE_CAPTURE_CHANNEL%%:*}}; eval \"exec $fd>&-\"; printf abc > {d}/a; \
         dd if=/dev/zero of={d}/b bs=4k count=3 status=none"
    );
    let (report, outcome, ..) = capture_of("bash", &["-c", &script], true);
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(bytes_of(&report, &dir.path().join("a")), 3);
    assert_eq!(bytes_of(&report, &dir.path().join("b")), 12288);
    assert_eq!(outcome.interposed, 0, "{outcome:?}");

    // Closed with a raw system call (not through close()), a file put under its number.
    let program = r#"
import ctypes, fcntl, os, sys
ch = int(os.environ["SINKRATE_CAPTURE_CHANNEL"].split(":")[0])
ctypes.CDLL(None).syscall(3 if os.uname().machine == "x86_64" else 57, ch)
f = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
at = fcntl.fcntl(f, fcntl.F_DUPFD, ch)
assert at == ch, (at, ch)
os.write(at, b"mine")
os.write(at, b" alone")
"#;
    let path = dir.path().join("c");
    let (report, outcome, ..) = capture_of(
        "python3",
        &["-c", program, path.to_str().expect("utf8")],
        true,
    );
    assert_eq!(outcome.exit_code, Some(0), "{report:#?}");
    assert_eq!(std::fs::read(&path).expect("c"), b"mine alone");
    assert_eq!(bytes_of(&report, &path), 10);
}

#[test]
fn a_shell_and_dd_are_captured_with_their_bytes_syncs_and_rename() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        "printf abc > {d}/small; dd if=/dev/zero of={d}/seg.tmp bs=4k count=3 conv=fsync status=none; \
         mv {d}/seg.tmp {d}/seg1; rm {d}/small"
    );
    let (report, outcome, iolog, sidecar) = capture_of("sh", &["-c", &script], true);
    assert_eq!(outcome.exit_code, Some(0));
    let seg = report
        .files
        .iter()
        .find(|f| f.file.ends_with("/seg1"))
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!((seg.bytes, seg.size), (12288, 12288));
    assert_eq!(
        seg.size,
        std::fs::metadata(dir.path().join("seg1"))
            .expect("seg1")
            .len()
    );
    assert_eq!(seg.fsyncs + seg.fdatasyncs, 1, "{seg:?}");
    assert!(seg.earlier_names[0].ends_with("/seg.tmp"));
    let small = report
        .files
        .iter()
        .find(|f| f.file.ends_with("/small"))
        .expect("small");
    assert_eq!(small.bytes, 3);
    assert!(small.unlinked);
    assert_eq!((report.renames, report.unlinks), (1, 1));
    // The sidecar reads back whole; the iolog is fio's.
    let trace = read_sidecar(&sidecar).expect("sidecar");
    assert!(trace.end.is_some());
    assert!(trace
        .calls
        .iter()
        .any(|c| matches!(&c.op, Op::Rename { to, .. } if to.ends_with("/seg1"))));
    assert!(iolog.starts_with("fio version 3 iolog\n"), "{iolog}");
    let written: u64 = iolog
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("write"))
        .map(|l| {
            l.split_whitespace()
                .nth(4)
                .and_then(|n| n.parse::<u64>().ok())
                .expect("len")
        })
        .sum();
    assert_eq!(written, 12288 + 3, "{iolog}");
}

#[test]
fn a_program_that_does_not_exist_is_named() {
    let e = find_program("no-such-recorder-here").expect_err("not found");
    assert!(
        e.contains("no-such-recorder-here: command not found"),
        "{e}"
    );
}
