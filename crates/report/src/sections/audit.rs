//! An audit's section: its findings, worst first.

use sinkrate_model::audit::{AuditReport, Severity};
use sinkrate_model::{Envelope, RunKind};

use super::{envelope_words, findings};
use crate::figures::{Headline, Section, Tone};
use crate::{empty_section, Input};

pub(crate) fn section(input: &Input, env: &Envelope<AuditReport>) -> Section {
    let mut s = empty_section(input, RunKind::Audit.name());
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
