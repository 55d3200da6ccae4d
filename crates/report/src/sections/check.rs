//! A check's section: the sustained write, the recording test and the findings to fix first.

use sinkrate_model::check::CheckReport;
use sinkrate_model::{Envelope, RunKind};

use super::{envelope_words, findings};
use crate::figures::{Headline, Page, Section};
use crate::{empty_section, recording, Input};

pub(crate) fn section(
    page: &mut Page,
    run: usize,
    prefix: &str,
    input: &Input,
    env: &Envelope<CheckReport>,
) -> Section {
    let mut s = empty_section(input, RunKind::Check.name());
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
