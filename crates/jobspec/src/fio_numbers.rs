//! Sizes in job files read as fio reads them, with a record of what fio's parser ignores.
//!
//! fio reads the number at the start of a size and ignores what follows when that is not a
//! unit (`filesize=65536)`, `bsrange=512/25:1k`), and job files in use depend on it. sinkrate
//! reads them the same way and says so in a notice. The value parsers are free functions
//! called from every option's arm, so what they ignored is gathered on the parsing thread
//! and drained by the job file reader after each option, rather than threaded through
//! every parser's signature for this one rare case.

use std::cell::RefCell;

use sinkrate_units::fio::{parse_size_as_fio, KbBase};

thread_local! {
    static READ_AS_FIO: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A size in a job file: see [`parse_size_as_fio`]; what it ignored is kept for
/// [`take_read_as_fio`].
pub(crate) fn parse_size(text: &str, kb: KbBase) -> Result<u64, String> {
    let (bytes, ignored) = parse_size_as_fio(text, kb)?;
    if let Some(rest) = ignored {
        READ_AS_FIO.with(|r| {
            r.borrow_mut().push(format!(
                "'{}' read as {bytes}, as fio reads it ('{rest}' ignored)",
                text.trim()
            ))
        });
    }
    Ok(bytes)
}

/// What the sizes parsed on this thread since the last call ignored, one line each.
pub(crate) fn take_read_as_fio() -> Vec<String> {
    READ_AS_FIO.with(|r| std::mem::take(&mut *r.borrow_mut()))
}
