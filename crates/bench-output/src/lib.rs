//! `sinkrate bench`'s outputs in fio's formats (normal text, JSON, terse). They read a
//! finished run and never touch the system: the time of day and anything else they print
//! comes from the run itself.

pub mod fio_json;
pub mod format;
pub mod groups;
pub mod terse;
pub mod text;

/// The output formats `bench` accepts (fio's `--output-format`), combinable with commas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Terse,
}

impl OutputFormat {
    pub fn parse_list(text: &str) -> Result<Vec<OutputFormat>, String> {
        let mut out = Vec::new();
        for part in text.split(',') {
            out.push(match part.trim() {
                "normal" | "text" => OutputFormat::Normal,
                "json" => OutputFormat::Json,
                "json+" => OutputFormat::JsonPlus,
                "terse" => OutputFormat::Terse,
                other => {
                    return Err(format!(
                        "--output-format: '{other}' is not a format (accepted: normal, json, json+, terse, or several joined by commas)"
                    ))
                }
            });
        }
        Ok(out)
    }
}

/// fio's unified_rw_reporting: a job's reads, writes and trims summed into one direction,
/// "mixed" (the largest of their runtimes, as fio's sum).
pub fn mixed_direction(job: &sinkrate_model::JobResult) -> sinkrate_model::DirectionResult {
    let mut mixed = job.read.clone();
    mixed.merge(&job.write);
    mixed.merge(&job.trim);
    mixed
}
