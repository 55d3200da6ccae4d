//! `bench` mixes sinkrate's own flags with any number of fio job options, which clap cannot
//! know in advance. This splits the arguments: flags clap defines go to clap, every other
//! `--key[=value]` is a fio job option.

use std::ffi::OsString;

use clap::CommandFactory;

use super::Cli;

/// Long names (without `--`) that `bench` itself defines, and whether each takes a value.
fn bench_flags() -> Vec<(String, bool)> {
    let cmd = Cli::command();
    let mut out = vec![("help".to_string(), false)];
    if let Some(bench) = cmd.find_subcommand("bench") {
        for arg in bench.get_arguments() {
            let takes_value = arg.get_action().takes_values();
            if let Some(long) = arg.get_long() {
                out.push((long.to_string(), takes_value));
            }
            for alias in arg.get_all_aliases().unwrap_or_default() {
                out.push((alias.to_string(), takes_value));
            }
        }
    }
    out
}

/// Splits `argv` (program name first). Returns the arguments for clap (paths stay as the
/// system gave them, UTF-8 or not) and the fio options; a fio option that is not UTF-8 is
/// an error naming it (fio's job grammar is text).
pub fn split(argv: Vec<OsString>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let Some(pos) = argv.iter().position(|a| a == "bench") else {
        return Ok((argv, Vec::new()));
    };
    // Only when "bench" is the subcommand (the first non-flag argument).
    if argv[1..pos]
        .iter()
        .any(|a| !a.as_encoded_bytes().starts_with(b"-"))
    {
        return Ok((argv, Vec::new()));
    }
    let flags = bench_flags();
    let mut clap_args: Vec<OsString> = argv[..=pos].to_vec();
    let mut job_options = Vec::new();
    let mut rest = argv[pos + 1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            clap_args.push(arg.clone());
            clap_args.extend(rest.by_ref().cloned());
            break;
        }
        let lossy = arg.to_string_lossy();
        if let Some(body) = lossy.strip_prefix("--") {
            let name = body.split('=').next().unwrap_or("");
            match flags.iter().find(|(f, _)| f == name) {
                Some((_, takes_value)) => {
                    clap_args.push(arg.clone());
                    if *takes_value && !body.contains('=') {
                        if let Some(v) = rest.next() {
                            clap_args.push(v.clone());
                        }
                    }
                }
                None => match arg.to_str() {
                    Some(option) => job_options.push(option.to_string()),
                    None => {
                        return Err(format!(
                            "{lossy}: the value is not valid UTF-8 (fio's options are text; rename the path, or use a job file's directory= with a UTF-8 name)"
                        ))
                    }
                },
            }
        } else {
            clap_args.push(arg.clone());
        }
    }
    Ok((clap_args, job_options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn splits_own_flags_from_fio_options() {
        let (c, j) = split(s(&[
            "sinkrate",
            "bench",
            "job.fio",
            "--rw=write",
            "--output-format",
            "json",
            "--time_based",
            "--output=x.json",
            "--parse-only",
        ]))
        .expect("text");
        assert_eq!(
            c,
            s(&[
                "sinkrate",
                "bench",
                "job.fio",
                "--output-format",
                "json",
                "--output=x.json",
                "--parse-only"
            ])
        );
        assert_eq!(j, ["--rw=write", "--time_based"]);
    }

    #[test]
    fn other_commands_are_untouched() {
        let (c, j) = split(s(&["sinkrate", "completions", "bash"])).expect("text");
        assert_eq!(c, s(&["sinkrate", "completions", "bash"]));
        assert!(j.is_empty());
    }
}
