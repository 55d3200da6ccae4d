//! A recording's section.

use sinkrate_model::record::RecordReport;
use sinkrate_model::{Envelope, RunKind};

use super::envelope_words;
use crate::figures::{Page, Section};
use crate::{empty_section, recording, Input};

pub(crate) fn section(
    page: &mut Page,
    run: usize,
    prefix: &str,
    input: &Input,
    env: &Envelope<RecordReport>,
) -> Section {
    let mut s = empty_section(input, RunKind::Record.name());
    let r = &env.result;
    recording::add(page, run, prefix, r);
    s.headline = Some(recording::headline(r));
    s.tables.push(recording::streams_table(r));
    s.facts = recording::facts(r);
    envelope_words(&mut s, env);
    s.warnings.extend(r.errors.iter().cloned());
    s
}
