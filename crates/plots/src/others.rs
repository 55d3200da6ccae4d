//! Each run kind's section: the verdict in words, findings with their fixes, tables,
//! configuration and host; the charts come from [`crate::recording`], [`crate::timeline`]
//! and [`crate::bench`].

use serde::Deserialize;
use serde_json::Value;
use sinkrate_model::audit::{AuditReport, Finding as AuditFinding, Severity};
use sinkrate_model::document::Document;
use sinkrate_model::record::{FindMaxReport, Searched};
use sinkrate_model::search::SearchReport;
use sinkrate_model::suite::SuiteReport;
use sinkrate_model::watch::WatchReport;
use sinkrate_model::Envelope;

use crate::figures::{Finding, Headline, Page, Section, Table, Tone};
use crate::{bench, empty_section, host_facts, recording, timeline, Input};

pub fn section(page: &mut Page, run: usize, prefix: &str, input: &Input) -> Section {
    match &input.document {
        Document::Fio {
            ours,
            output,
            value,
        } => {
            let mut s = empty_section(input, if *ours { "bench" } else { "fio" });
            let extras = bench::extras(value);
            bench::add(page, run, prefix, output, &extras);
            s.headline = Some(bench::headline(output, *ours, &extras));
            s.tables.push(bench::table(output));
            if *ours {
                if let Ok(env) = Envelope::<Value>::deserialize(value) {
                    envelope_words(&mut s, &env);
                }
            }
            s
        }
        Document::Record(env) => {
            let mut s = empty_section(input, "record");
            let r = &env.result;
            recording::add(page, run, prefix, r);
            s.headline = Some(recording::headline(r));
            s.tables.push(recording::streams_table(r));
            s.facts = recording::facts(r);
            envelope_words(&mut s, env);
            s.warnings.extend(r.errors.iter().cloned());
            s
        }
        Document::Check(env) => {
            let mut s = empty_section(input, "check");
            let c = &env.result;
            let mut lines = Vec::new();
            if let Some(b) = c.raw_write.bytes_per_s {
                lines.push(format!(
                    "sustained write, page cache excluded: {:.1} MB/s ({})",
                    b / 1e6,
                    c.raw_write
                        .method
                        .clone()
                        .unwrap_or_else(|| if c.raw_write.direct {
                            "direct I/O"
                        } else {
                            "buffered + fsync"
                        }
                        .into())
                ));
            }
            if let Some(rec) = &c.record {
                let r = &rec.result;
                recording::add(page, run, prefix, r);
                lines.extend(recording::headline(r).lines);
                s.tables.push(recording::streams_table(r));
                s.facts = recording::facts(r);
            }
            lines.extend(c.notes.iter().cloned());
            s.headline = Some(Headline {
                verdict: crate::verdict_words(c.verdict, c.headroom),
                tone: crate::tone(c.verdict),
                lines,
            });
            s.findings = findings(&c.audit.audit.findings);
            envelope_words(&mut s, env);
            s
        }
        Document::Watch(env) => watch(page, run, prefix, input, env),
        Document::Audit(env) => audit(input, env),
        Document::Suite(env) => words(input, "suite", env, suite_words),
        Document::FindMax(env) => words(input, "find_max", env, find_max_words),
        Document::TuneSearch(env) => words(input, "tune_search", env, search_words),
        Document::Fields {
            kind,
            value,
            problem,
        } => fields(input, kind.name(), value, problem.as_deref()),
    }
}

/// A kind without a picture of its own, or one whose fields did not match its type: its
/// fields as facts and tables.
fn fields(input: &Input, kind: &str, value: &Value, problem: Option<&str>) -> Section {
    let mut s = empty_section(input, kind);
    if let Some(e) = problem {
        s.warnings.push(format!(
            "{}: {e}; shown as its fields",
            input.file.display()
        ));
    }
    generic(&mut s, value);
    s
}

fn watch(
    page: &mut Page,
    run: usize,
    prefix: &str,
    input: &Input,
    env: &Envelope<WatchReport>,
) -> Section {
    let mut s = empty_section(input, "watch");
    let w = &env.result;
    let devices = w.config.devices.clone();
    timeline::add(page, run, prefix, &w.timeline, &devices);
    s.headline = Some(watch_headline(w));
    s.tables.push(Table {
        title: "Processes and kernel threads by CPU".into(),
        header: [
            "process",
            "pid",
            "CPU (s)",
            "peak (% of a core)",
            "written (MB)",
        ]
        .map(String::from)
        .to_vec(),
        rows: w
            .hogs
            .iter()
            .map(|h| {
                vec![
                    h.name.clone(),
                    h.pid.to_string(),
                    format!("{:.2}", h.cpu_seconds),
                    format!("{:.0}", h.peak_cpu_pct),
                    format!("{:.1}", h.write_bytes as f64 / 1e6),
                ]
            })
            .collect(),
    });
    if !w.config.command.is_empty() {
        s.facts.push(("command".into(), w.config.command.join(" ")));
    }
    s.facts.push((
        "interval".into(),
        format!("{} ms", w.config.interval.as_millis()),
    ));
    envelope_words(&mut s, env);
    s.warnings.extend(w.notes.iter().cloned());
    s
}

fn audit(input: &Input, env: &Envelope<AuditReport>) -> Section {
    let mut s = empty_section(input, "audit");
    let a = &env.result.audit;
    let worst = a.findings.iter().map(|f| f.severity).min();
    s.headline = Some(Headline {
        verdict: format!(
            "{} finding(s), {} to fix",
            a.findings.len(),
            a.findings
                .iter()
                .filter(|f| matches!(f.severity, Severity::Critical | Severity::Warn))
                .count()
        ),
        tone: match worst {
            Some(Severity::Critical) => Tone::Bad,
            Some(Severity::Warn) => Tone::Warn,
            _ => Tone::Good,
        },
        lines: vec![format!(
            "{} ({}) mounted at {}",
            a.target.path, a.target.fs_type, a.target.mount_point
        )],
    });
    s.findings = findings(&a.findings);
    s.facts
        .push(("mount options".into(), a.target.mount_options.join(",")));
    if let Some(root) = &env.result.sysroot {
        s.facts.push(("read from".into(), root.clone()));
    }
    envelope_words(&mut s, env);
    s.warnings.extend(a.notes.iter().cloned());
    s
}

/// The section of a kind whose words come from one function of its result.
fn words<T>(
    input: &Input,
    kind: &str,
    env: &Envelope<T>,
    add: impl FnOnce(&mut Section, &T),
) -> Section {
    let mut s = empty_section(input, kind);
    add(&mut s, &env.result);
    envelope_words(&mut s, env);
    s
}

fn watch_headline(w: &WatchReport) -> Headline {
    let sum = &w.summary;
    let mut lines = Vec::new();
    if let Some(p) = sum.peak_dirty_writeback_bytes {
        lines.push(format!(
            "peak dirty + writeback {:.0} MB{}",
            p as f64 / 1e6,
            sum.peak_ceiling_pct
                .map(|c| format!(" = {c:.0}% of the freerun ceiling"))
                .unwrap_or_default()
        ));
    }
    if let Some(r) = &sum.recommendation {
        lines.push(r.text.clone());
    } else if let Some(why) = &sum.recommendation_withheld {
        lines.push(why.clone());
    }
    let throttled = sum.throttled_seconds > 0.0;
    Headline {
        verdict: if throttled {
            format!(
                "writers throttled for {:.1} s (first at {:.1} s)",
                sum.throttled_seconds,
                sum.first_throttled_at_s.unwrap_or(0.0)
            )
        } else {
            format!("never throttled in {:.0} s watched", sum.duration_s)
        },
        tone: if throttled { Tone::Warn } else { Tone::Good },
        lines,
    }
}

fn find_max_words(s: &mut Section, r: &FindMaxReport) {
    let what = r.what.name();
    let value = |v: f64| match r.what {
        Searched::Bitrate => format!("{:.1} Mbit/s", v / 1e6),
        _ => format!("{v}"),
    };
    s.headline = Some(Headline {
        verdict: match r.max {
            Some(m) => format!("highest {what} that keeps up: {}", value(m)),
            None => format!("no {what} tried kept up"),
        },
        tone: if r.max.is_some() {
            Tone::Good
        } else {
            Tone::Bad
        },
        lines: r
            .max_requested_bytes_per_s
            .map(|b| format!("{:.1} MB/s of frames at that {what}", b / 1e6))
            .into_iter()
            .chain(std::iter::once(format!(
                "the device's raw direct write rate: {:.1} MB/s",
                r.raw_direct_write_bytes_per_s / 1e6
            )))
            .collect(),
    });
    s.tables.push(Table {
        title: "Runs, in the order tried".into(),
        header: [what, "verdict", "requested (MB/s)"]
            .map(String::from)
            .to_vec(),
        rows: r
            .probes
            .iter()
            .map(|p| {
                vec![
                    value(p.value),
                    p.verdict.label().to_string(),
                    format!("{:.1}", p.requested_bytes_per_s / 1e6),
                ]
            })
            .collect(),
    });
    if let Some(t) = &r.target {
        s.facts.extend(crate::target_facts(t));
    }
}

fn search_words(s: &mut Section, r: &SearchReport) {
    let winner = r.winner();
    s.headline = Some(Headline {
        verdict: match winner {
            Some(w) => format!("best: {}", w.candidate.label),
            None => "no candidate kept up".into(),
        },
        tone: if winner.is_some() {
            Tone::Good
        } else {
            Tone::Bad
        },
        lines: r
            .comparison
            .iter()
            .map(|c| c.text.clone())
            .chain(r.failed.iter().cloned())
            .collect(),
    });
    s.tables.push(Table {
        title: "Candidates, best first".into(),
        header: [
            "candidate",
            "runs",
            "drops per run",
            "dropped",
            "worst write (ms)",
            "lateness p99 (ms)",
            "CPU (s)",
            "peak dirty (MB)",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .ranked
            .iter()
            .map(|c| {
                let f = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
                vec![
                    c.candidate.label.clone(),
                    format!(
                        "{}{}",
                        c.trials.len(),
                        if c.screened_only { " (screening)" } else { "" }
                    ),
                    format!("{:.1}", c.drops_per_run),
                    format!("{:.2}%", 100.0 * c.dropped_share),
                    f(c.worst_write_ms),
                    f(c.p99_lateness_ms),
                    format!("{:.2}", c.cpu_s),
                    f(c.peak_dirty_bytes.map(|b| b as f64 / 1e6)),
                ]
            })
            .collect(),
    });
    s.facts.push(("directory".into(), r.dir.clone()));
    s.facts.push(("workload".into(), r.workload.clone()));
    s.facts.push((
        "budget".into(),
        format!("{:.0} s, spent {:.0} s", r.budget_s, r.spent_s),
    ));
    s.warnings.extend(r.notes.iter().cloned());
}

fn findings(list: &[AuditFinding]) -> Vec<Finding> {
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

fn envelope_words<T>(s: &mut Section, env: &Envelope<T>) {
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

/// A kind without a picture of its own: scalars as facts, arrays of objects as tables.
fn generic(s: &mut Section, value: &Value) {
    let Some(obj) = value.as_object() else { return };
    let skip = [
        "schema", "kind", "tool", "host", "warnings", "notices", "error",
    ];
    for (k, v) in obj {
        if skip.contains(&k.as_str()) {
            continue;
        }
        match v {
            Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
                let mut header: Vec<String> = Vec::new();
                for item in items {
                    for key in item.as_object().into_iter().flatten().map(|(k, _)| k) {
                        if !header.contains(key) {
                            header.push(key.clone());
                        }
                    }
                }
                s.tables.push(Table {
                    title: k.clone(),
                    rows: items
                        .iter()
                        .map(|i| header.iter().map(|h| scalar(i.get(h))).collect())
                        .collect(),
                    header,
                });
            }
            Value::Object(_) | Value::Array(_) => {
                s.facts.push((k.clone(), compact(v)));
            }
            _ => s.facts.push((k.clone(), scalar(Some(v)))),
        }
    }
    for w in obj
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = w.get("text").and_then(Value::as_str) {
            s.warnings.push(t.to_string());
        }
    }
}

fn scalar(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(t)) => t.clone(),
        Some(other) => compact(other),
    }
}

/// A nested value in one line, cut short: a fact, not a dump.
fn compact(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 200 {
        format!("{}...", text.chars().take(200).collect::<String>())
    } else {
        text
    }
}

/// A suite's tables as the report shows them: each cell the median and the runs' range.
fn suite_words(s: &mut Section, r: &SuiteReport) {
    s.headline = Some(Headline {
        verdict: format!("suite {}", r.suite),
        tone: Tone::Neutral,
        lines: vec![
            r.about.clone(),
            format!(
                "{} run(s) of each condition; median, and the runs' range in brackets",
                r.runs
            ),
        ],
    });
    for t in &r.tables {
        let described = t.rows.iter().any(|r| !r.about.is_empty());
        let mut header = vec!["condition".to_string()];
        if described {
            header.push("what".into());
        }
        header.extend(t.columns.iter().map(|c| c.title.clone()));
        header.push("remark".into());
        let rows = t
            .rows
            .iter()
            .map(|row| {
                let mut cells = vec![row.label.clone()];
                if described {
                    cells.push(row.about.clone());
                }
                match &row.not_run {
                    Some(why) => {
                        cells.extend(t.columns.iter().map(|_| "-".to_string()));
                        cells.push(format!("not run: {why}"));
                    }
                    None => {
                        cells.extend(t.columns.iter().zip(&row.cells).map(|(c, cell)| {
                            sinkrate_model::suite::format::cell_range(c.unit, cell)
                        }));
                        cells.push(row.mark.clone().unwrap_or_default());
                    }
                }
                cells
            })
            .collect();
        s.tables.push(Table {
            title: t.title.clone(),
            header,
            rows,
        });
    }
    s.facts.push(("source".into(), r.source.clone()));
    s.facts.push(("directory".into(), r.dir.clone()));
    if let Some(m) = &r.made_on {
        s.facts.push(("devices made".into(), m.clone()));
    }
    for c in &r.settings_changed {
        s.facts.push(("setting".into(), c.clone()));
    }
    s.warnings.extend(r.notes.iter().cloned());
}
