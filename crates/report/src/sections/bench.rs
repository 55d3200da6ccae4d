//! A bench run's section: sinkrate's or fio's own JSON.

use serde::Deserialize;
use serde_json::Value;
use sinkrate_model::fio::BenchReport;
use sinkrate_model::Envelope;

use super::envelope_words;
use crate::figures::{Page, Section};
use crate::{bench, empty_section, Input};

pub(crate) fn section(
    page: &mut Page,
    run: usize,
    prefix: &str,
    input: &Input,
    ours: bool,
    output: &BenchReport,
    value: &Value,
) -> Section {
    let mut s = empty_section(input, if ours { "bench" } else { "fio" });
    let extras = bench::extras(value);
    bench::add(page, run, prefix, output, &extras);
    s.headline = Some(bench::headline(output, ours, &extras));
    s.tables.push(bench::table(output));
    if ours {
        if let Ok(env) = Envelope::<Value>::deserialize(value) {
            envelope_words(&mut s, &env);
        }
    }
    s
}
