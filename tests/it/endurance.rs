//! Cards that wear out (`emulate up --wear-out BYTES:MODE`) under record, verify and check,
//! and the lifetime a recording's device write rate gives. Each failure ends FAILED (never
//! a keeps-up verdict) with its cause and moment; the emulated card's own account of when
//! it wore out, and the bytes it counted, are the independent figures.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{
    card_account, card_took, error_lines, run_json as run, sinkrate_path, with_root, RecordArgs,
    SlowDev,
};

const TOOLS: &[&str] = &["nbdkit", "nbdfuse", "losetup", "mkfs.ext4"];

#[test]
fn record_on_a_card_that_turns_read_only_fails_with_the_moment_and_keeps_what_it_wrote() {
    with_root(
        "record_on_a_card_that_turns_read_only_fails_with_the_moment_and_keeps_what_it_wrote",
        TOOLS,
        || {
            let card = SlowDev::new(&[
                "--write-rate",
                "200M",
                "--size",
                "256M",
                "--wear-out",
                "32M:read-only",
            ]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let (code, v, stderr) = run(&RecordArgs::on(&dir)
                .with("--frame-size", "1M")
                .with("--duration", "4s")
                .args());
            assert_eq!(code, Some(2), "{stderr}");
            assert_eq!(v["verdict"], "failed", "{v}");
            let errors = error_lines(&stderr);
            assert_eq!(errors.len(), 1, "one error line: {stderr}");
            let account = card_account(&card);
            assert_eq!(account["worn_out"], true, "{account}");
            assert!(
                account["wear_failed_writes"].as_u64() > Some(0),
                "{account}"
            );
            // The kernel's report of the failure, its moment and the bytes up to it.
            let failure = &v["device_failure"];
            assert!(
                failure["messages"][0]
                    .as_str()
                    .is_some_and(|m| m.contains("I/O error")),
                "{failure}"
            );
            let at_s = failure["at_s"].as_f64().expect("at_s");
            assert!(at_s < 4.5, "within the recording: {at_s}");
            assert!(
                errors[0].contains("the device failed at 00:00:0"),
                "{}",
                errors[0]
            );
            // What the devices wrote up to then: about what the card took before it wore
            // out (its own count), at most the frames of one sample interval more.
            let worn_after = account["worn_out_after_bytes"].as_u64().expect("bytes") as f64;
            let before_failure = failure["device_written_bytes"].as_u64().expect("bytes") as f64;
            assert!(
                before_failure > 0.8 * worn_after && before_failure < worn_after + 40e6,
                "the kernel's count {before_failure} against the card's {worn_after}"
            );
            // The frames written before the failure are the report's, and on the card.
            let written = v["streams"][0]["frames_written"].as_u64().expect("frames");
            let offered = v["streams"][0]["frames_offered"].as_u64().expect("frames");
            assert!(written > 0 && written < offered, "{written} of {offered}");
            assert_eq!(
                v["lifetime"]["endurance"]["remaining_bytes"]
                    .as_u64()
                    .map(|b| b > 0),
                Some(true),
                "{v}"
            );
        },
    );
}

#[test]
fn record_on_a_card_whose_errors_rise_fails() {
    with_root("record_on_a_card_whose_errors_rise_fails", TOOLS, || {
        let card = SlowDev::new(&[
            "--write-rate",
            "200M",
            "--size",
            "256M",
            "--wear-out",
            "16M:errors",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&RecordArgs::on(&dir)
            .with("--frame-size", "1M")
            .with("--duration", "4s")
            .args());
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
        assert!(stderr.contains("Input/output error"), "{stderr}");
        let account = card_account(&card);
        assert_eq!(account["worn_out"], true, "{account}");
        // Errors rise from none at 16 MiB: the card took more than that before the first.
        assert!(
            account["wear_written_bytes"].as_u64() > Some(16 << 20),
            "{account}"
        );
    });
}

/// A 256 MiB card at 200 MB/s that wears out after 16 MiB, the `mode` way.
fn card_wearing_out_at_16m(mode: &str) -> SlowDev {
    let wear = format!("16M:{mode}");
    SlowDev::new(&[
        "--write-rate",
        "200M",
        "--size",
        "256M",
        "--wear-out",
        &wear,
    ])
}

/// `verify` of 48 MiB in 1 MiB blocks on `card`.
fn verify_48m(card: &SlowDev) -> (Option<i32>, serde_json::Value, String) {
    let dir = card.path().to_str().expect("utf8");
    run(&[
        "verify",
        dir,
        "--size",
        "48M",
        "--block-size",
        "1M",
        "--output-format",
        "json",
    ])
}

#[test]
fn verify_on_a_card_that_turns_read_only_fails_and_reads_back_what_it_wrote() {
    with_root(
        "verify_on_a_card_that_turns_read_only_fails_and_reads_back_what_it_wrote",
        TOOLS,
        || {
            let card = card_wearing_out_at_16m("read-only");
            let (code, v, stderr) = verify_48m(&card);
            assert_eq!(code, Some(2), "{stderr}");
            assert_eq!(v["verdict"], "failed", "{v}");
            let text = v["verdict_text"].as_str().expect("text");
            assert!(text.starts_with("writing failed after"), "{text}");
            // The blocks written before the card refused read back from it as written: 16
            // MiB of its life once ready (the filesystem's own writes since take a little).
            let written = v["write"]["bytes"].as_u64().expect("written");
            let before = written / (1 << 20);
            assert!((8..=16).contains(&before), "{v}");
            assert_eq!(v["counts"]["ok"].as_u64(), Some(before), "{v}");
            assert!(
                text.contains(&format!(
                    "the {before} blocks written before it read back as written"
                )),
                "{text}"
            );
            let account = card_account(&card);
            assert_eq!(account["worn_out"], true, "{account}");
            assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
        },
    );
}

#[test]
fn verify_on_a_card_that_keeps_stale_data_finds_where_it_started() {
    with_root(
        "verify_on_a_card_that_keeps_stale_data_finds_where_it_started",
        TOOLS,
        || {
            let card = card_wearing_out_at_16m("stale");
            let before = card_took(&card);
            let (code, v, stderr) = verify_48m(&card);
            assert_eq!(code, Some(1), "{stderr}");
            assert_ne!(v["verdict"], "ok", "{v}");
            let account = card_account(&card);
            // What the write cost the card, as the kernel counted it: the 48 MiB and the
            // filesystem's own, no more than the card itself took in.
            let took = account["wear_written_bytes"].as_u64().expect("bytes") - before;
            let counted = v["device_bytes_written"].as_u64().expect("counted");
            assert!(
                counted >= 48 << 20 && counted <= took + (1 << 20),
                "the kernel counted {counted}, the card took {took}"
            );
            let lost = account["wear_lost_bytes"].as_u64().expect("lost");
            assert!(lost > 0, "{account}");
            // The first bad block lies where the card stopped keeping data: 16 MiB of its
            // life, less what the filesystem wrote before the file.
            let first = v["bad_blocks"][0]["offset_bytes"].as_u64().expect("offset");
            assert!(
                (8 << 20..=16 << 20).contains(&first),
                "first bad block at {first}: {v}"
            );
        },
    );
}

#[test]
fn check_on_a_card_that_wears_out_names_its_health_and_the_moment() {
    with_root(
        "check_on_a_card_that_wears_out_names_its_health_and_the_moment",
        TOOLS,
        || {
            // Worn out within what the shortest sustained write puts on it anywhere: ended
            // once steady (2 s at the least), it wrote less than 64 MiB beside heavy load.
            let card = SlowDev::new(&["--write-rate", "100M", "--size", "1G", "--wear-out", "24M"]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let (code, v, stderr) = run(&["check", &dir, "--quick", "--output-format", "json"]);
            assert_eq!(code, Some(2), "{stderr}");
            assert_eq!(v["verdict"], "failed", "{v}");
            let errors = error_lines(&stderr);
            assert_eq!(errors.len(), 1, "{stderr}");
            assert!(
                errors[0].contains("into the sustained write, after")
                    && errors[0].contains("Input/output error"),
                "{}",
                errors[0]
            );
            let wear = v["audit"]["findings"]
                .as_array()
                .expect("findings")
                .iter()
                .find(|f| f["id"] == "card.wear")
                .unwrap_or_else(|| panic!("card.wear: {v}"));
            assert_eq!(wear["severity"], "critical", "{wear}");
            assert!(
                wear["title"]
                    .as_str()
                    .is_some_and(|t| t.contains("wore out after") && t.contains("read-only")),
                "{wear}"
            );
            assert_eq!(v["audit"]["health"]["emulated"]["worn_out"], true, "{v}");
        },
    );
}

/// Check's sustained write ends once the card's rate has held, and check says what its
/// test cost the card, by the kernel's count, against the emulated card's own.
#[test]
fn a_check_says_what_its_test_cost_the_card() {
    with_root("a_check_says_what_its_test_cost_the_card", TOOLS, || {
        let card = SlowDev::new(&["--write-rate", "50M", "--size", "1G", "--wear-out", "100G"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let before = card_took(&card);
        let (code, v, stderr) = run(&["check", &dir, "--quick", "--output-format", "json"]);
        assert!(matches!(code, Some(0 | 1)), "{stderr}");
        let took = card_took(&card) - before;
        let m = &v["raw_write"]["measured"];
        let seconds = m["seconds"].as_f64().expect("seconds");
        // Steady or not is the machine's (a busy one makes the card's rate uneven); ended
        // early means steady, and steady is never before 2 s.
        if m["stopped_steady"] == true {
            assert!((2.0..3.9).contains(&seconds), "{m}");
        } else {
            assert!(seconds >= 3.9, "{m}");
        }
        eprintln!(
            "sustained write: {seconds:.1} s, steady: {}",
            m["stopped_steady"]
        );
        // The parts: the sustained write's bytes all reached the card, and the recording's.
        let sustained = m["device_bytes_written"].as_u64().expect("sustained");
        assert!(
            sustained >= m["bytes_written"].as_u64().expect("bytes"),
            "{m}"
        );
        let recording = v["record"]["totals"]["device_bytes_written"]
            .as_u64()
            .expect("recording");
        assert!(
            recording
                >= v["record"]["totals"]["bytes_written"]
                    .as_u64()
                    .expect("written"),
            "{}",
            v["record"]["totals"]
        );
        // The whole, as the kernel counted it, against what the card itself took in (the
        // audit's reads and the filesystem's writes between the phases are the card's too).
        let total = v["device_bytes_written"].as_u64().expect("total");
        assert_eq!(total, sustained + recording);
        assert!(
            total <= took && took - total < took / 20 + (4 << 20),
            "the kernel counted {total}, the card took {took}"
        );
    });
}

#[test]
fn the_lifetime_is_the_cards_endurance_over_what_the_recording_writes_a_day() {
    with_root(
        "the_lifetime_is_the_cards_endurance_over_what_the_recording_writes_a_day",
        TOOLS,
        || {
            let card =
                SlowDev::new(&["--write-rate", "200M", "--size", "512M", "--wear-out", "4G"]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let before = card_took(&card);
            let (code, v, stderr) = run(&RecordArgs::on(&dir)
                .with("--frame-size", "256k")
                .with("--hours-per-day", "8")
                .args());
            // Kept up or dropped frames (a busy machine's), the lifetime is of what was
            // written.
            assert!(matches!(code, Some(0 | 1)), "{stderr}");
            let after = card_took(&card);
            let l = &v["lifetime"];
            // The recording's bytes an hour, as the card itself counted them.
            let duration = v["totals"]["duration_s"].as_f64().expect("duration");
            let card_per_hour = (after - before) as f64 / duration * 3600.0;
            let per_hour = l["device_bytes_per_hour"].as_f64().expect("per hour");
            assert!(
                (per_hour / card_per_hour - 1.0).abs() < 0.2,
                "{per_hour} against the card's {card_per_hour}"
            );
            assert_eq!(l["hours_per_day"], 8.0);
            let remaining = l["endurance"]["remaining_bytes"].as_f64().expect("left");
            assert!(
                remaining <= 4.0 * (1u64 << 30) as f64 && remaining > 3e9,
                "{l}"
            );
            let days = l["days"].as_f64().expect("days");
            assert!(
                (days - remaining / (per_hour * 8.0)).abs() < 1e-6 * days,
                "{l}"
            );
            // The recording's cost as the kernel counted it, the card's own count beside.
            let counted = v["totals"]["device_bytes_written"]
                .as_u64()
                .expect("counted");
            assert!(
                counted <= after - before
                    && after - before - counted < (after - before) / 20 + (1 << 20),
                "the kernel counted {counted}, the card took {}",
                after - before
            );
            let wa = l["write_amplification"].as_f64().expect("wa");
            assert!(
                (0.9..1.5).contains(&wa),
                "a file written once, direct: {wa}"
            );
            // Given by the user, the endurance is the user's.
            let (code, v, stderr) = run(&RecordArgs::on(&dir)
                .with("--duration", "2s")
                .with("--endurance", "20000h@26M")
                .args());
            assert!(matches!(code, Some(0 | 1)), "{stderr}");
            assert_eq!(
                v["lifetime"]["endurance"]["remaining_bytes"].as_f64(),
                Some(20000.0 * 3600.0 * 26e6 / 8.0),
                "{v}"
            );
        },
    );
}

#[test]
fn bad_endurance_and_duty_cycles_get_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf8");
    for (args, expect) in [
        (vec!["--endurance", "40"], "needs its unit"),
        (vec!["--endurance", "0TB"], "above zero"),
        (vec!["--endurance", "40XB"], "the unit is one of"),
        (vec!["--endurance", "20000@26M"], "hours end in h"),
        (vec!["--hours-per-day", "25"], "a day has 24 hours"),
        (vec!["--hours-per-day", "0"], "a day has 24 hours"),
    ] {
        for command in ["record", "check"] {
            let mut full = vec![command];
            if command == "record" {
                full.extend(["--dir", d, "--duration", "1s"]);
            } else {
                full.push(d);
            }
            full.extend(args.iter().copied());
            let out = Command::new(sinkrate_path())
                .current_dir(d)
                .args(&full)
                .output()
                .expect("runs");
            let line = common::one_error_line(&out, &full);
            assert!(line.contains(expect), "{full:?}: {line}");
            assert!(
                common::files_in(Path::new(d)).is_empty(),
                "{full:?} wrote files"
            );
        }
    }
    // An emulated card's endurance needs its bytes.
    for (wear, expect) in [
        ("0:read-only", "at least 1 byte"),
        ("1G:melts", "read-only, errors, stale"),
    ] {
        let out = Command::new(sinkrate_path())
            .args([
                "emulate",
                "up",
                &format!("{d}/card"),
                "--write-rate",
                "10M",
                "--size",
                "64M",
                "--wear-out",
                wear,
            ])
            .output()
            .expect("runs");
        let line = common::one_error_line(&out, &wear);
        assert!(line.contains(expect), "{line}");
    }
}
