//! The output plan: which formats each result is printed in, and by which exporter, in one
//! table ([`Printed`]'s registrations at the end of this file). A command hands its typed
//! result and the user's `--output-format` to [`print`] (or [`OutputArgs::print`]); it
//! never matches on a format itself. `--output-format`'s accepted values and its `--help`
//! come from the same registration ([`parser`]), so a format a result does not have is
//! refused before any work, with the ones it has.
//!
//! A new format of a result is one exporter file in `src/export` and one row here; a format
//! new to the product is also one [`Format`] variant. (`bench` keeps fio's own
//! `--output-format` list, comma-separated as fio takes it: crates/bench-output.)
//!
//! [`OutputArgs::print`]: crate::cli::OutputArgs::print

use anyhow::{anyhow, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde::Serialize;

use sinkrate_model::check::CheckRun;
use sinkrate_model::record::{FindMaxReport, RecordRun};
use sinkrate_model::suite::SuiteRun;
use sinkrate_model::Envelope;

use super::Exporter;

/// Every output format of the product, by the name `--output-format` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Csv,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Text, Format::Json, Format::Markdown, Format::Csv];

    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
        }
    }

    fn about(self) -> &'static str {
        match self {
            Format::Text => "for a person",
            Format::Json => "the run schema, with the whole timeline where there is one",
            Format::Markdown => "a table for a pull request or a wiki",
            Format::Csv => "one row per run, for a spreadsheet",
        }
    }

    fn named(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the person's formats look where they go: colour only on a terminal that wants it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    pub colour: bool,
}

/// One registered exporter: a result's bytes in one format.
pub type Render<T> = fn(&T, &Style) -> Result<Vec<u8>>;

/// A result the plan prints. JSON is every result's (its serde form, written as it is
/// made, so a soak's hour of frames is never held whole); `FORMATS` registers the others.
pub trait Printed: Serialize + 'static {
    /// The formats besides JSON, in the order `--help` lists them, each with its exporter.
    const FORMATS: &'static [(Format, Render<Self>)];
}

/// The formats `T` is printed in: its registered ones, JSON after the first.
pub fn offered<T: Printed>() -> Vec<Format> {
    let mut formats: Vec<Format> = T::FORMATS.iter().map(|(f, _)| *f).collect();
    formats.insert(formats.len().min(1), Format::Json);
    formats
}

/// `--output-format`'s parser for a result `T`: exactly the formats it is printed in, each
/// with its line in `--help`.
pub fn parser<T: Printed>() -> impl TypedValueParser<Value = Format> {
    let values = offered::<T>()
        .into_iter()
        .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about()));
    PossibleValuesParser::new(values).map(|name| Format::named(&name).unwrap_or(Format::Json))
}

/// Writes `result` in `format` through `sink` (which writes what it is given where the
/// flags say, as it is made).
pub fn print<T: Printed>(
    result: &T,
    format: Format,
    style: &Style,
    sink: impl FnOnce(&mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<()>,
) -> Result<()> {
    if format == Format::Json {
        return sink(&mut |w| super::Json::write_to(result, w));
    }
    let bytes = render(result, format, style)?;
    sink(&mut |w| w.write_all(&bytes))
}

/// `result` in `format`, whole.
pub fn render<T: Printed>(result: &T, format: Format, style: &Style) -> Result<Vec<u8>> {
    if format == Format::Json {
        return super::Json.export(result);
    }
    let (_, render) = T::FORMATS
        .iter()
        .find(|(f, _)| *f == format)
        .ok_or_else(|| {
            let names: Vec<&str> = offered::<T>().iter().map(|f| f.name()).collect();
            anyhow!(
                "this result has no {format} output (it has {})",
                names.join(", ")
            )
        })?;
    render(result, style)
}

/// Prints `result` on standard output.
pub fn print_stdout<T: Printed>(result: &T, format: Format, style: &Style) -> Result<()> {
    print(result, format, style, |fill| crate::write_stdout_with(fill))
}

// The registrations: one row per result and format.

use super::audit_text::AuditText;
use super::capacity_text::{CapacityText, FillText};
use super::capture_text::CaptureText;
use super::check_text::CheckText;
use super::class_text::ClassText;
use super::compare_table::{CompareCsv, CompareMarkdown, CompareText};
use super::emulate_text::{ListText, UpText};
use super::find_max_text::FindMaxText;
use super::record_text::RecordText;
use super::search_text::SearchText;
use super::suite_text::{SuiteMarkdown, SuiteText};
use super::tune_text::TuneText;
use super::verify_text::VerifyText;
use super::watch_text::WatchText;

impl Printed for Envelope<sinkrate_model::audit::AuditReport> {
    const FORMATS: &'static [(Format, Render<Self>)] = &[(Format::Text, |r, s| {
        AuditText { colour: s.colour }.export(&r.result)
    })];
}

impl Printed for CheckRun {
    const FORMATS: &'static [(Format, Render<Self>)] = &[(Format::Text, |r, s| {
        CheckText { colour: s.colour }.export(r)
    })];
}

impl Printed for RecordRun {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| RecordText.export(r))];
}

impl Printed for Envelope<FindMaxReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| FindMaxText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_model::watch::WatchReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| WatchText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_model::verify::VerifyReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| VerifyText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_model::verify::CapacityReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| CapacityText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_model::sdclass::ClassReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| ClassText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_verify::capacity::fill::FillReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| FillText.export(&r.result))];
}

impl Printed for Envelope<sinkrate_model::settings::TuneReport> {
    const FORMATS: &'static [(Format, Render<Self>)] = &[(Format::Text, |r, _| TuneText.export(r))];
}

impl Printed for Envelope<sinkrate_model::search::SearchReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| SearchText.export(r))];
}

impl Printed for Envelope<sinkrate_model::capture::CaptureReport> {
    const FORMATS: &'static [(Format, Render<Self>)] =
        &[(Format::Text, |r, _| CaptureText.export(r))];
}

impl Printed for SuiteRun {
    const FORMATS: &'static [(Format, Render<Self>)] = &[
        (Format::Text, |r, _| SuiteText.export(r)),
        (Format::Markdown, |r, _| SuiteMarkdown.export(r)),
    ];
}

impl Printed for super::suite_text::SuiteListing {
    const FORMATS: &'static [(Format, Render<Self>)] = &[
        (Format::Text, |r, _| SuiteText.export(r)),
        (Format::Markdown, |r, _| SuiteMarkdown.export(r)),
    ];
}

impl Printed for Envelope<sinkrate_model::compare::CompareReport> {
    const FORMATS: &'static [(Format, Render<Self>)] = &[
        (Format::Text, |r, _| CompareText.export(r)),
        (Format::Markdown, |r, _| CompareMarkdown.export(r)),
        (Format::Csv, |r, _| CompareCsv.export(r)),
    ];
}

impl Printed for sinkrate_emulate::stack::State {
    const FORMATS: &'static [(Format, Render<Self>)] = &[(Format::Text, |r, _| UpText.export(r))];
}

impl Printed for Vec<sinkrate_emulate::stack::Listed> {
    const FORMATS: &'static [(Format, Render<Self>)] = &[(Format::Text, |r, _| ListText.export(r))];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_result_offers_text_first_and_json() {
        assert_eq!(
            offered::<SuiteRun>(),
            [Format::Text, Format::Json, Format::Markdown]
        );
        assert_eq!(offered::<RecordRun>(), [Format::Text, Format::Json]);
    }

    #[test]
    fn a_format_a_result_lacks_is_named_with_the_ones_it_has() {
        let devices: Vec<sinkrate_emulate::stack::Listed> = Vec::new();
        let e = render(&devices, Format::Csv, &Style::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "this result has no csv output (it has text, json)");
    }

    #[test]
    fn find_max_prints_in_records_formats() {
        // `record --find-max` shares record's `--output-format`.
        assert_eq!(offered::<Envelope<FindMaxReport>>(), offered::<RecordRun>());
    }
}
