//! `sinkrate bench`'s modes that answer a question instead of running jobs: `--cmdhelp`,
//! `--showcmd` and `--inflate-log`, as fio's.

use std::process::ExitCode;

use anyhow::{anyhow, Result};

use crate::cli::bench_config::read_stdin_job;
use crate::cli::BenchArgs;

/// The answer when `args` asks one of these questions; None when jobs are to run.
pub fn answer(args: &BenchArgs) -> Option<Result<ExitCode>> {
    if let Some(option) = &args.cmdhelp {
        return Some(option_help(option));
    }
    if args.showcmd {
        return Some(show_command(args));
    }
    let file = args.inflate_log.as_ref()?;
    Some(inflate_log(file))
}

/// `--inflate-log FILE`: a compressed log written out as text.
fn inflate_log(file: &std::path::Path) -> Result<ExitCode> {
    let text = sinkrate_engine::logs::inflate_log(file).map_err(|e| anyhow!(e))?;
    let mut out = std::io::stdout().lock();
    match std::io::Write::write_all(&mut out, &text) {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// `--cmdhelp [OPTION]`: the option table's help, for every option or for one.
fn option_help(option: &str) -> Result<ExitCode> {
    use sinkrate_jobspec::table;
    let text = if option == "all" {
        table::help_all()
    } else {
        let name = option.trim_start_matches("--");
        table::help_one(name).ok_or_else(|| {
            let near = table::near(name);
            if near.is_empty() {
                anyhow!("--cmdhelp {name}: sinkrate takes no option of that name (sinkrate bench --cmdhelp lists them)")
            } else {
                anyhow!(
                    "--cmdhelp {name}: sinkrate takes no option of that name; did you mean {}?",
                    near.join(" or ")
                )
            }
        })?
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `--showcmd`: each job file as the `sinkrate bench` command line that runs its jobs.
fn show_command(args: &BenchArgs) -> Result<ExitCode> {
    use sinkrate_jobspec::showcmd::{arguments, shell_quoted};
    let ctx = sinkrate_engine::probe::LiveContext;
    let mut out = String::new();
    for f in &args.job_files {
        let sections = if f.as_os_str() == "-" {
            let text = read_stdin_job()?;
            sinkrate_jobspec::grammar::parse_job_text(std::path::Path::new("<stdin>"), &text, &ctx)
        } else {
            sinkrate_jobspec::grammar::parse_job_file(f, &ctx)
        }
        .map_err(|e| anyhow!("{e}"))?;
        let words: Vec<String> = arguments(&sections)
            .iter()
            .chain(&args.job_options)
            .map(|a| shell_quoted(a))
            .collect();
        out.push_str(&format!("sinkrate bench {}\n", words.join(" ")));
    }
    if args.job_files.is_empty() {
        return Err(anyhow!(
            "--showcmd: no job file given (sinkrate bench --showcmd JOB.fio)"
        ));
    }
    crate::write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
