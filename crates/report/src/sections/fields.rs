//! A kind without a picture of its own, or one whose fields did not match its type: its
//! fields as facts and tables.

use serde_json::Value;

use crate::figures::{Headline, Section, Table, Tone};
use crate::{empty_section, Input};

/// A kind without a picture of its own, or one whose fields did not match its type: its
/// fields as facts and tables.
pub(crate) fn section(input: &Input, kind: &str, value: &Value, problem: Option<&str>) -> Section {
    let mut s = empty_section(input, kind);
    if let Some(e) = value
        .get("error")
        .and_then(|e| e.get("what"))
        .and_then(Value::as_str)
    {
        s.warnings.insert(0, format!("the run failed: {e}"));
    }
    if let Some(e) = problem {
        s.warnings.push(format!(
            "{}: {e}; shown as its fields",
            input.file.display()
        ));
    }
    generic(&mut s, value);
    s
}

/// A run that failed before it had a result (a board a lab could not reach, install on or
/// run on): FAILED and why, then what else its document says (the lab's task, when).
pub(crate) fn failed(input: &Input, kind: Option<&str>, what: &str, value: &Value) -> Section {
    let mut s = empty_section(input, kind.unwrap_or("failed"));
    s.headline = Some(Headline {
        verdict: "FAILED".into(),
        tone: Tone::Bad,
        lines: vec![what.to_string()],
    });
    generic(&mut s, value);
    s
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
