//! Man page and shell completions, generated from the clap definitions.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::Cli;

pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "sinkrate", &mut out);
    crate::write_stdout(&out)
}

pub fn man() -> Result<()> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    for sub in cmd.get_subcommands() {
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(format!("sinkrate-{}", sub.get_name())))
            .render(&mut page)?;
        out.write_all(b"\n")?;
        out.extend(page);
    }
    crate::write_stdout(&out)
}
