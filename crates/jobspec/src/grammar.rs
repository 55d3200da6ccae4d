//! fio's job-file grammar: `[section]` headers, `key=value` and bare flags, `;`/`#` comments,
//! `include FILE`, `${VAR}` and `$pagesize`/`$ncpus`/`$mb_memory` substitution.
//!
//! Written by hand because no crate parses fio's dialect of INI (includes, bare flags,
//! reserved variables, options that repeat) with line numbers kept for every option.

use std::path::{Path, PathBuf};

use crate::{Origin, SpecError};

/// One `key[=value]` as written, with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOption {
    pub key: String,
    pub value: Option<String>,
    pub origin: Origin,
}

/// A `[name]` section and its options, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSection {
    pub name: String,
    pub origin: Origin,
    pub options: Vec<RawOption>,
}

impl RawSection {
    pub fn is_global(&self) -> bool {
        self.name == "global"
    }
}

/// What the grammar needs from the world: file contents (for `include`) and variables.
/// Keeping these behind a trait keeps the grammar free of I/O and testable.
pub trait SourceContext {
    fn read_file(&self, path: &Path) -> Result<String, String>;
    fn env_var(&self, name: &str) -> Option<String>;
    /// fio's reserved keywords: `pagesize`, `ncpus`, `mb_memory`.
    fn reserved(&self, name: &str) -> Option<String>;
}

const MAX_INCLUDE_DEPTH: usize = 16;

/// Parses one job file (and what it includes) into sections.
pub fn parse_job_file(path: &Path, ctx: &dyn SourceContext) -> Result<Vec<RawSection>, SpecError> {
    let text = ctx
        .read_file(path)
        .map_err(|e| SpecError::new(Origin::file(path, 0), e))?;
    let mut sections = Vec::new();
    parse_text_into(path, &text, ctx, &mut sections, 0)?;
    Ok(sections)
}

/// Parses job-file text as if read from `path` (used for tests and for stdin).
pub fn parse_job_text(
    path: &Path,
    text: &str,
    ctx: &dyn SourceContext,
) -> Result<Vec<RawSection>, SpecError> {
    let mut sections = Vec::new();
    parse_text_into(path, text, ctx, &mut sections, 0)?;
    Ok(sections)
}

fn parse_text_into(
    path: &Path,
    text: &str,
    ctx: &dyn SourceContext,
    sections: &mut Vec<RawSection>,
    depth: usize,
) -> Result<(), SpecError> {
    for (index, raw_line) in text.lines().enumerate() {
        let origin = Origin::file(path, index + 1);
        let line = strip_comment(raw_line).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                SpecError::new(
                    origin.clone(),
                    format!("section header '{line}' has no closing ']'"),
                )
            })?;
            let name = name.trim();
            if name.is_empty() {
                return Err(SpecError::new(origin, "empty section name '[]'"));
            }
            sections.push(RawSection {
                name: name.to_string(),
                origin,
                options: Vec::new(),
            });
            continue;
        }
        if let Some(target) = include_target(line) {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(SpecError::new(
                    origin,
                    format!("include nested deeper than {MAX_INCLUDE_DEPTH} levels (a loop?)"),
                ));
            }
            let target = substitute(target, &origin, ctx)?;
            let included = resolve_include(path, &target);
            let text = ctx.read_file(&included).map_err(|e| {
                SpecError::new(
                    origin.clone(),
                    format!("cannot include '{}': {e}", included.display()),
                )
            })?;
            parse_text_into(&included, &text, ctx, sections, depth + 1)?;
            continue;
        }
        let (key, value) = split_option(line);
        let key = key.trim().to_ascii_lowercase();
        if key.is_empty() {
            return Err(SpecError::new(
                origin,
                format!("'{line}' has no option name"),
            ));
        }
        let value = match value {
            Some(v) => Some(substitute(v.trim(), &origin, ctx)?),
            None => None,
        };
        let Some(section) = sections.last_mut() else {
            return Err(SpecError::new(
                origin,
                format!(
                    "option '{key}' comes before any [section] (start with [global] or [jobname])"
                ),
            ));
        };
        section.options.push(RawOption { key, value, origin });
    }
    Ok(())
}

fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if rest.starts_with(char::is_whitespace) {
        Some(rest.trim())
    } else {
        None
    }
}

fn resolve_include(from: &Path, target: &str) -> PathBuf {
    let target = Path::new(target);
    if target.is_absolute() {
        return target.to_path_buf();
    }
    match from.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(target),
        _ => target.to_path_buf(),
    }
}

/// A comment starts a line, or follows whitespace (so `filename=a#b` keeps its `#`).
fn strip_comment(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with(';') || trimmed.starts_with('#') {
        return "";
    }
    let bytes = line.as_bytes();
    for i in 1..bytes.len() {
        if (bytes[i] == b';' || bytes[i] == b'#') && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

fn split_option(line: &str) -> (&str, Option<&str>) {
    match line.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (line, None),
    }
}

/// Expands `${NAME}` from the environment and `$pagesize`, `$ncpus`, `$mb_memory`.
pub fn substitute(
    value: &str,
    origin: &Origin,
    ctx: &dyn SourceContext,
) -> Result<String, SpecError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    let mut keyword_replaced = false;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(|| {
                SpecError::new(
                    origin.clone(),
                    format!("'${{' without closing '}}' in '{value}'"),
                )
            })?;
            let name = &braced[..end];
            let replacement = ctx.env_var(name).or_else(|| ctx.reserved(name)).ok_or_else(|| {
                SpecError::new(
                    origin.clone(),
                    format!("environment variable '{name}' is not set (export it, or write the value)"),
                )
            })?;
            out.push_str(&replacement);
            rest = &braced[end + 1..];
            continue;
        }
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        match ctx.reserved(name) {
            Some(replacement) => {
                out.push_str(&replacement);
                rest = &after[name_len..];
                keyword_replaced = true;
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if keyword_replaced && crate::keyword_math::wants_math(&out) {
        match crate::keyword_math::evaluate(&out) {
            Some(Ok(v)) => return Ok(v.to_string()),
            Some(Err(why)) => {
                return Err(SpecError::new(
                    origin.clone(),
                    format!("'{value}' (computed as '{out}') {why} (fio computes keyword values with whole numbers and + - * / % ^)"),
                ))
            }
            None => {}
        }
    }
    Ok(out)
}

/// Turns fio-style command-line job options (`--name=a --rw=write --name=b ...`) into
/// sections: options before the first `--name` form a `[global]` section, and every `--name`
/// starts a job.
pub fn sections_from_args(
    args: &[String],
    ctx: &dyn SourceContext,
) -> Result<Vec<RawSection>, SpecError> {
    let mut sections: Vec<RawSection> = Vec::new();
    for arg in args {
        let origin = Origin::CommandLine(arg.clone());
        let body = arg.strip_prefix("--").ok_or_else(|| {
            SpecError::new(origin.clone(), "expected an option of the form --key=value")
        })?;
        let (key, value) = split_option(body);
        let key = key.trim().to_ascii_lowercase();
        let value = match value {
            Some(v) => Some(substitute(v, &origin, ctx)?),
            None => None,
        };
        if key == "name" {
            let name = value.clone().unwrap_or_default();
            if name.is_empty() {
                return Err(SpecError::new(
                    origin,
                    "--name needs a value, e.g. --name=job1",
                ));
            }
            sections.push(RawSection {
                name,
                origin: origin.clone(),
                options: Vec::new(),
            });
        }
        if sections.is_empty() {
            sections.push(RawSection {
                name: "global".into(),
                origin: origin.clone(),
                options: Vec::new(),
            });
        }
        if key != "name" {
            if let Some(last) = sections.last_mut() {
                last.options.push(RawOption { key, value, origin });
            }
        }
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Fake {
        files: HashMap<PathBuf, String>,
        env: HashMap<String, String>,
    }

    impl SourceContext for Fake {
        fn read_file(&self, path: &Path) -> Result<String, String> {
            self.files
                .get(path)
                .cloned()
                .ok_or_else(|| "No such file or directory".into())
        }
        fn env_var(&self, name: &str) -> Option<String> {
            self.env.get(name).cloned()
        }
        fn reserved(&self, name: &str) -> Option<String> {
            match name {
                "pagesize" => Some("4096".into()),
                "ncpus" => Some("2".into()),
                "mb_memory" => Some("24000".into()),
                _ => None,
            }
        }
    }

    fn fake(files: &[(&str, &str)], env: &[(&str, &str)]) -> Fake {
        Fake {
            files: files
                .iter()
                .map(|(p, t)| (PathBuf::from(p), t.to_string()))
                .collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn sections_options_flags_and_comments() {
        let ctx = fake(
            &[(
                "j.fio",
                "; leading comment\n[global]\nbs=4k ; trailing\n# hash comment\ntime_based\n\n[job1]\nrw = randwrite\nfilename=a#b\n",
            )],
            &[],
        );
        let s = parse_job_file(Path::new("j.fio"), &ctx).expect("parses");
        assert_eq!(s.len(), 2);
        assert!(s[0].is_global());
        assert_eq!(s[0].options[0].key, "bs");
        assert_eq!(s[0].options[0].value.as_deref(), Some("4k"));
        assert_eq!(s[0].options[1].key, "time_based");
        assert_eq!(s[0].options[1].value, None);
        assert_eq!(s[0].options[1].origin, Origin::file(Path::new("j.fio"), 5));
        assert_eq!(s[1].name, "job1");
        assert_eq!(s[1].options[0].value.as_deref(), Some("randwrite"));
        assert_eq!(s[1].options[1].value.as_deref(), Some("a#b"));
    }

    #[test]
    fn include_is_relative_to_the_including_file() {
        let ctx = fake(
            &[
                ("dir/main.fio", "[global]\ninclude common.fio\n[a]\n"),
                ("dir/common.fio", "bs=8k\n"),
            ],
            &[],
        );
        let s = parse_job_file(Path::new("dir/main.fio"), &ctx).expect("parses");
        assert_eq!(s[0].options[0].key, "bs");
        assert_eq!(
            s[0].options[0].origin,
            Origin::file(Path::new("dir/common.fio"), 1)
        );
    }

    #[test]
    fn include_loops_and_missing_includes_are_errors() {
        let ctx = fake(&[("a.fio", "include a.fio\n")], &[]);
        let e = parse_job_file(Path::new("a.fio"), &ctx).unwrap_err();
        assert!(e.to_string().contains("nested deeper"), "{e}");
        let ctx = fake(&[("a.fio", "[x]\ninclude nope.fio\n")], &[]);
        let e = parse_job_file(Path::new("a.fio"), &ctx).unwrap_err();
        assert_eq!(e.origin, Origin::file(Path::new("a.fio"), 2));
        assert!(e.to_string().contains("nope.fio"), "{e}");
    }

    #[test]
    fn variables_are_substituted() {
        let ctx = fake(
            &[(
                "v.fio",
                "[j]\nsize=${SIZE}\nbs=$pagesize\nnumjobs=$ncpus\ncost=$5\n",
            )],
            &[("SIZE", "64m")],
        );
        let s = parse_job_file(Path::new("v.fio"), &ctx).expect("parses");
        let values: Vec<_> = s[0]
            .options
            .iter()
            .map(|o| o.value.clone().unwrap_or_default())
            .collect();
        assert_eq!(values, ["64m", "4096", "2", "$5"]);
    }

    #[test]
    fn keyword_values_with_arithmetic_are_computed_as_fio_has_bc_compute_them() {
        let ctx = fake(
            &[(
                "m.fio",
                "[j]\nsize=5*1024*1024*$mb_memory/8\nsize=8*1024*$pagesize\nfilename=/dev/$ncpus-x\nsize=2*4096\nnumjobs=$ncpus\nsize=$pagesize/0\n",
            )],
            &[],
        );
        let e = parse_job_file(Path::new("m.fio"), &ctx).unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.fio:7: '$pagesize/0' (computed as '4096/0') divides by zero (fio computes keyword values with whole numbers and + - * / % ^)"
        );
        let ctx = fake(
            &[(
                "m.fio",
                "[j]\nsize=5*1024*1024*$mb_memory/8\nsize=8*1024*$pagesize\nfilename=/dev/$ncpus-x\nsize=2*4096\nnumjobs=$ncpus\n",
            )],
            &[],
        );
        let s = parse_job_file(Path::new("m.fio"), &ctx).expect("parses");
        let values: Vec<_> = s[0]
            .options
            .iter()
            .map(|o| o.value.clone().unwrap_or_default())
            .collect();
        // Without a keyword there is no math, as in fio ("2*4096" reaches the option).
        assert_eq!(
            values,
            ["15728640000", "33554432", "/dev/2-x", "2*4096", "2"]
        );
    }

    #[test]
    fn unset_variable_is_an_error_with_its_line() {
        let ctx = fake(&[("v.fio", "[j]\n\nsize=${NOPE}\n")], &[]);
        let e = parse_job_file(Path::new("v.fio"), &ctx).unwrap_err();
        assert_eq!(
            e.to_string(),
            "v.fio:3: environment variable 'NOPE' is not set (export it, or write the value)"
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        let ctx = fake(&[("b.fio", "bs=4k\n")], &[]);
        let e = parse_job_file(Path::new("b.fio"), &ctx).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("b.fio:1: option 'bs' comes before any [section]"));
        let ctx = fake(&[("b.fio", "[job\n")], &[]);
        assert!(parse_job_file(Path::new("b.fio"), &ctx)
            .unwrap_err()
            .to_string()
            .contains("closing"));
        let ctx = fake(&[("b.fio", "[]\n")], &[]);
        assert!(parse_job_file(Path::new("b.fio"), &ctx).is_err());
        let ctx = fake(&[("b.fio", "[j]\n=4k\n")], &[]);
        assert!(parse_job_file(Path::new("b.fio"), &ctx).is_err());
        let ctx = fake(&[], &[]);
        assert!(parse_job_file(Path::new("missing.fio"), &ctx).is_err());
    }

    #[test]
    fn command_line_jobs() {
        let ctx = fake(&[], &[]);
        let args: Vec<String> = [
            "--bs=4k",
            "--name=a",
            "--rw=write",
            "--name=b",
            "--direct=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let s = sections_from_args(&args, &ctx).expect("parses");
        assert_eq!(s.len(), 3);
        assert!(s[0].is_global());
        assert_eq!(s[1].name, "a");
        assert_eq!(s[1].options[0].key, "rw");
        assert_eq!(s[2].name, "b");
        assert!(sections_from_args(&["rw=write".to_string()], &ctx).is_err());
        assert!(sections_from_args(&["--name=".to_string()], &ctx).is_err());
    }
}
