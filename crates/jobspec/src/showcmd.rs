//! fio's `--showcmd`: a job file as the command-line options that run the same jobs. The
//! global options come first, then each job as `--name=SECTION` and its own options, in
//! the file's order.

use crate::grammar::RawSection;

/// The arguments (`--bs=4k`, `--name=a`, `--time_based`) for `sections`.
pub fn arguments(sections: &[RawSection]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sections {
        if !s.is_global() {
            out.push(format!("--name={}", s.name));
        }
        for o in &s.options {
            out.push(match &o.value {
                Some(v) => format!("--{}={v}", o.key),
                None => format!("--{}", o.key),
            });
        }
    }
    out
}

/// One argument as a shell reads it back: quoted when it holds anything but plain
/// characters.
pub fn shell_quoted(arg: &str) -> String {
    let plain = arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=./:,%+@".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_first_then_each_job_as_fio_prints_it() {
        struct NoFiles;
        impl crate::grammar::SourceContext for NoFiles {
            fn read_file(&self, p: &std::path::Path) -> Result<String, String> {
                Err(format!("{}: no files here", p.display()))
            }
            fn env_var(&self, _: &str) -> Option<String> {
                None
            }
            fn reserved(&self, _: &str) -> Option<String> {
                None
            }
        }
        let text = "[global]\nbs=4k\nsize=1m\n[a]\nrw=read\n[b]\nrw=write\nnumjobs=2\ntime_based\n";
        let sections =
            crate::grammar::parse_job_text(std::path::Path::new("j.fio"), text, &NoFiles)
                .expect("parses");
        assert_eq!(
            arguments(&sections).join(" "),
            "--bs=4k --size=1m --name=a --rw=read --name=b --rw=write --numjobs=2 --time_based"
        );
        assert_eq!(shell_quoted("--name=a b"), "'--name=a b'");
        assert_eq!(shell_quoted("--filename=/dev/sda"), "--filename=/dev/sda");
    }
}
