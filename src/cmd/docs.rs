//! Man page and shell completions, generated from the clap definitions.

#[cfg(feature = "docs")]
use std::io::Write;

use anyhow::Result;
#[cfg(feature = "docs")]
use clap::CommandFactory;

#[cfg(feature = "docs")]
use crate::cli::Cli;

/// A board build (without the `docs` feature): the pages and completions are in its tarball.
#[cfg(not(feature = "docs"))]
const NOT_BUILT: &str = "this board build leaves out the man page and completions (its 5 MB budget): they are in its release tarball, as sinkrate.1 and completions/";

#[cfg(not(feature = "docs"))]
pub fn completions(_shell: clap_complete::Shell) -> Result<()> {
    anyhow::bail!(NOT_BUILT)
}

#[cfg(not(feature = "docs"))]
pub fn man() -> Result<()> {
    anyhow::bail!(NOT_BUILT)
}

#[cfg(feature = "docs")]
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "sinkrate", &mut out);
    crate::write_stdout(&out)
}

#[cfg(feature = "docs")]
pub fn man() -> Result<()> {
    let mut cmd = Cli::command();
    // Built, the tree has the `help` subcommands its pages refer to.
    cmd.build();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    sub_pages(&cmd, "sinkrate", &mut out)?;
    crate::write_stdout(&out)
}

#[cfg(feature = "docs")]
/// One page per subcommand at every depth (`sinkrate-emulate-up`), each named as its
/// parent's page refers to it.
fn sub_pages(cmd: &clap::Command, prefix: &str, out: &mut Vec<u8>) -> Result<()> {
    for sub in cmd.get_subcommands() {
        let name = format!("{prefix}-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone())).render(&mut page)?;
        out.write_all(b"\n")?;
        out.extend(page);
        sub_pages(sub, &name, out)?;
    }
    Ok(())
}
