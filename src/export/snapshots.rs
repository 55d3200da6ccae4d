//! The text layouts of record, check, audit and watch as reviewed snapshots: each renders a
//! result the real command wrote (tests/fixtures/results), so a layout change is a diff to
//! review (`cargo insta review`), not a surprise.

use std::path::Path;

use serde::de::DeserializeOwned;
use sinkrate_model::{Envelope, RunKind};

use super::audit_text::AuditText;
use super::check_text::CheckText;
use super::record_text::RecordText;
use super::watch_text::WatchText;
use super::Exporter;

fn load<T: DeserializeOwned>(name: &str, kind: RunKind) -> Envelope<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/results")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Envelope::from_json(&bytes, kind).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("utf-8")
}

#[test]
fn record_text() {
    let run = load("record.json", RunKind::Record);
    insta::assert_snapshot!(text(RecordText.export(&run).expect("renders")));
}

#[test]
fn check_text() {
    let run = load("check.json", RunKind::Check);
    insta::assert_snapshot!(text(
        CheckText { colour: false }.export(&run).expect("renders")
    ));
}

#[test]
fn check_text_in_colour() {
    let run = load("check.json", RunKind::Check);
    let coloured = text(CheckText { colour: true }.export(&run).expect("renders"));
    assert!(coloured.contains("\x1b[1;32mKEEPS UP"), "{coloured}");
}

#[test]
fn audit_text() {
    let run = load::<sinkrate_model::audit::AuditReport>("audit.json", RunKind::Audit);
    insta::assert_snapshot!(text(
        AuditText { colour: false }
            .export(&run.result)
            .expect("renders")
    ));
}

#[test]
fn watch_text() {
    let run = load::<sinkrate_model::watch::WatchReport>("watch.json", RunKind::Watch);
    insta::assert_snapshot!(text(WatchText.export(&run.result).expect("renders")));
}
