pub mod audit;
pub mod bench;
pub mod check;
pub mod compare;
pub mod docs;
pub mod emulate;
pub mod find_max;
pub mod record;
pub mod report;
pub mod suite;
pub mod tune;
pub mod verify;
pub mod watch;
pub mod watch_tui;

use std::path::Path;

use sinkrate_model::document::Document;

/// A result file (any sinkrate run, or fio's JSON) read through the types that wrote it, or
/// one line saying what is wrong with it.
pub fn read_result(path: &Path) -> Result<Document, String> {
    let name = path.display().to_string();
    let bytes = sinkrate_sys::input::read_capped(path, sinkrate_sys::input::RESULT_BYTES)
        .map_err(|e| format!("{name}: {e}"))?;
    Document::parse(&name, &bytes)
}
