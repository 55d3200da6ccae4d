//! Each run kind's section of the report, one file per kind: the verdict in words, findings
//! with their fixes, tables, configuration and host. The charts come from
//! [`crate::recording`], [`crate::timeline`] and [`crate::bench`].

pub mod audit;
pub mod bench;
pub mod capture;
pub mod check;
pub mod compare;
pub mod fields;
pub mod find_max;
pub mod record;
pub mod search;
pub mod suite;
pub mod tune;
pub mod verify;
pub mod watch;

use sinkrate_model::audit::Finding as AuditFinding;
use sinkrate_model::document::Document;
use sinkrate_model::{Envelope, RunKind};

use crate::figures::{Finding, Page, Section, Tone};
use crate::{empty_section, host_facts, Input};

pub fn section(page: &mut Page, run: usize, prefix: &str, input: &Input) -> Section {
    match &input.document {
        Document::Fio {
            ours,
            output,
            value,
        } => bench::section(page, run, prefix, input, *ours, output, value),
        Document::Record(env) => record::section(page, run, prefix, input, env),
        Document::Check(env) => check::section(page, run, prefix, input, env),
        Document::Watch(env) => watch::section(page, run, prefix, input, env),
        Document::Audit(env) => audit::section(input, env),
        Document::Suite(env) => words(input, RunKind::Suite, env, suite::words),
        Document::FindMax(env) => words(input, RunKind::FindMax, env, find_max::words),
        Document::TuneSearch(env) => words(input, RunKind::TuneSearch, env, search::words),
        Document::Tune(env) => words(input, RunKind::Tune, env, tune::words),
        Document::Verify(env) => words(input, RunKind::Verify, env, verify::blocks),
        Document::Capacity(env) => words(input, RunKind::Capacity, env, verify::capacity),
        Document::Class(env) => words(input, RunKind::Class, env, verify::class),
        Document::Compare(env) => words(input, RunKind::Compare, env, compare::words),
        Document::Capture(env) => words(input, RunKind::Capture, env, capture::words),
        Document::Fields {
            kind,
            value,
            problem,
        } => fields::section(input, kind.name(), value, problem.as_deref()),
        Document::Failed { kind, error, value } => {
            fields::failed(input, kind.map(RunKind::name), &error.what, value)
        }
    }
}

/// The section of a kind whose words come from one function of its result.
pub(crate) fn words<T>(
    input: &Input,
    kind: RunKind,
    env: &Envelope<T>,
    add: impl FnOnce(&mut Section, &T),
) -> Section {
    let mut s = empty_section(input, kind.name());
    add(&mut s, &env.result);
    envelope_words(&mut s, env);
    s
}

pub(crate) fn findings(list: &[AuditFinding]) -> Vec<Finding> {
    list.iter()
        .map(|f| Finding {
            severity: f.severity.label().to_string(),
            id: f.id.to_string(),
            title: f.title.clone(),
            why: f.why.clone(),
            fix: f
                .fix
                .now
                .iter()
                .map(|c| format!("now: {c}"))
                .chain(f.fix.persistent.iter().map(|c| format!("persistent: {c}")))
                .chain(f.tradeoff.iter().map(|t| format!("trade-off: {t}")))
                .collect(),
        })
        .collect()
}

pub(crate) fn envelope_words<T>(s: &mut Section, env: &Envelope<T>) {
    if let Some(e) = &env.error {
        s.warnings.insert(0, format!("the run failed: {}", e.what));
        if let Some(h) = s.headline.as_mut() {
            h.tone = Tone::Bad;
        }
    }
    if env.interrupted {
        s.warnings.insert(
            0,
            "the run was interrupted: its figures cover part of it".into(),
        );
    }
    s.warnings
        .extend(env.warnings.iter().map(|w| w.text.clone()));
    s.warnings.extend(env.notices.iter().cloned());
    s.facts.push(("started".into(), env.started_at.clone()));
    s.facts.push((
        "tool".into(),
        format!("{} {}", env.tool.name, env.tool.version),
    ));
    if let Some(h) = &env.host {
        s.facts.extend(host_facts(h));
    }
}
