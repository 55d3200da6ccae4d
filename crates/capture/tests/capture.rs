//! A real program captured: its files' bytes and syncs as the trace has them, against the
//! files themselves.

use std::sync::atomic::AtomicBool;

use sinkrate_capture::{find_program, read_sidecar, session, Header, Op, Recorder};

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

#[test]
fn a_shell_and_dd_are_captured_with_their_bytes_syncs_and_rename() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        "printf abc > {d}/small; dd if=/dev/zero of={d}/seg.tmp bs=4k count=3 conv=fsync status=none; \
         mv {d}/seg.tmp {d}/seg1; rm {d}/small"
    );
    let command: Vec<String> = ["sh", "-c", &script]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let program = find_program("sh").expect("sh");
    let mut iolog = Vec::new();
    let mut sidecar = Vec::new();
    let stop = AtomicBool::new(false);
    let (report, outcome) = session(
        &Recorder::Run {
            program: &program,
            command: &command,
        },
        &mut iolog,
        &mut sidecar,
        &header(&command),
        &stop,
        &mut |_| {},
    )
    .expect("capture");
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
    let trace = read_sidecar(std::str::from_utf8(&sidecar).expect("utf8")).expect("sidecar");
    assert!(trace.end.is_some());
    assert!(trace
        .calls
        .iter()
        .any(|c| matches!(&c.op, Op::Rename { to, .. } if to.ends_with("/seg1"))));
    let iolog = String::from_utf8(iolog).expect("utf8");
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
