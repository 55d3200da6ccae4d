//! The settings journal read as audit reads it: what sinkrate holds changed, and whether
//! each change's run is still going. Reads only; the settings crate alone writes it.

use sinkrate_model::facts::JournaledSetting;
use sinkrate_model::settings::{Entry, JournalFile, DEFAULT_JOURNAL};

use crate::root::SysRoot;

/// The journal's entries under `root` (the live one, or a fixture's /var/lib/sinkrate):
/// none when there is no journal; an error naming the file when it cannot be read or is
/// not a journal.
pub fn entries(root: &SysRoot) -> Result<Vec<JournaledSetting>, String> {
    let path = root.host_path(DEFAULT_JOURNAL);
    let file: JournalFile = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a settings journal ({e})", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => JournalFile::default(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let boot = boot_id(root);
    Ok(file
        .entries
        .into_iter()
        .map(|entry| JournaledSetting {
            running: is_live(&entry, &boot),
            entry,
        })
        .collect())
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`), empty when unreadable.
pub fn boot_id(root: &SysRoot) -> String {
    std::fs::read_to_string(root.host_path("/proc/sys/kernel/random/boot_id"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Whether an entry's process is still running in the boot `boot`.
pub fn is_live(e: &Entry, boot: &str) -> bool {
    e.boot_id == boot && (e.pid == std::process::id() || crate::process::alive(e.pid))
}
