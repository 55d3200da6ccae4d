//! System settings (sysctls, block-queue attributes, mount options) changed only through one
//! journal, and always put back.
//!
//! Every change is journaled before it is made: the value in force, then (once written) the
//! value sinkrate wrote, whether the change is *temporary* (a test's, undone when its process
//! ends) or *applied* (`tune apply`, kept until `tune restore`), the process and the boot.
//! The journal is written to a temporary file, fsynced and renamed over the old one, under a
//! lock, so a crash leaves either the old journal or the new. A temporary change whose
//! process is gone (killed) is undone by the next sinkrate that touches settings; a change
//! from an earlier boot is gone with it and dropped. A value someone else changed after
//! sinkrate wrote it is left alone and named.

pub mod persist;
pub mod setting;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub use setting::Host;

use sinkrate_model::settings::{Entry, JournalFile, Mode, Outcome, Setting, DEFAULT_JOURNAL};
use sinkrate_model::tunables::Assignment;
use sinkrate_sys::sysctl_conf::companion;

/// A test seam, `PHASE:SECONDS`: wait that long at that phase, so a test can kill the
/// process in exactly that window. Phases: `journaled` (changes journaled, none made),
/// `applied-one` (the first of several made), `restored-one` (the first of several put
/// back).
const PAUSE_ENV: &str = "SINKRATE_TEST_PAUSE";

fn test_pause(phase: &str) {
    let Ok(v) = std::env::var(PAUSE_ENV) else {
        return;
    };
    if let Some(secs) = v
        .split_once(':')
        .filter(|(p, _)| *p == phase)
        .and_then(|(_, s)| s.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

impl From<sinkrate_model::tunables::BadSetting> for Error {
    fn from(b: sinkrate_model::tunables::BadSetting) -> Error {
        Error::BadSetting {
            text: b.text,
            why: b.why,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {}", .0.display(), .1)]
    Io(PathBuf, std::io::Error),
    #[error("{}: not a settings journal sinkrate can read ({}); nothing was changed (move it away once no sinkrate runs)", .0.display(), .1)]
    Corrupt(PathBuf, String),
    #[error("{0}: unknown")]
    Unknown(String),
    #[error("{}: {why}; nothing was changed", .path.display())]
    NotReplaceable { path: PathBuf, why: String },
    #[error("'{text}': {why}")]
    BadSetting { text: String, why: String },
    #[error("{setting} = {value}: the kernel refused it: {why}")]
    Refused {
        setting: String,
        value: String,
        why: String,
    },
    #[error(
        "{setting} is held by another sinkrate run (pid {pid}) that is still going; wait for it"
    )]
    Busy { setting: String, pid: u32 },
}

fn alive(pid: u32) -> bool {
    pid == std::process::id() || sinkrate_sys::process::alive(pid)
}

/// The journal and the host it describes.
#[derive(Debug, Clone)]
pub struct Journal {
    host: Host,
    path: PathBuf,
}

/// An exclusive lock on the journal, held while it is read, changed and written.
struct Lock {
    _file: std::fs::File,
}

impl Journal {
    pub fn live() -> Journal {
        Journal::at(Host::live(), Path::new(DEFAULT_JOURNAL))
    }

    pub fn at(host: Host, path: &Path) -> Journal {
        Journal {
            host,
            path: path.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    fn boot_id(&self) -> String {
        sinkrate_sys::settings_journal::boot_id(self.host.root())
    }

    fn lock(&self) -> Result<Lock, Error> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
        let lock_path = self.path.with_extension("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| Error::Io(lock_path.clone(), e))?;
        // SAFETY: flock on a descriptor this function owns; released when it is closed.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            return Err(Error::Io(lock_path, std::io::Error::last_os_error()));
        }
        Ok(Lock { _file: file })
    }

    fn load(&self) -> Result<JournalFile, Error> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| Error::Corrupt(self.path.clone(), e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(JournalFile::default()),
            Err(e) => Err(Error::Io(self.path.clone(), e)),
        }
    }

    /// Atomically replaces the journal (removes it when empty): a temporary file, fsynced,
    /// renamed over it, and the directory fsynced.
    fn save(&self, j: &JournalFile) -> Result<(), Error> {
        let io = |e| Error::Io(self.path.clone(), e);
        if j.entries.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                _ => Ok(()),
            };
        }
        let text = serde_json::to_vec_pretty(&JournalFile {
            version: 1,
            entries: j.entries.clone(),
        })
        .map_err(|e| io(std::io::Error::other(e)))?;
        sinkrate_platform::durable::replace(&self.path, &text, 0o600).map_err(io)?;
        Ok(())
    }

    /// Every entry, as journaled (for `tune status` and audit). Reads only.
    pub fn entries(&self) -> Result<Vec<Entry>, Error> {
        Ok(self.load()?.entries)
    }

    /// Whether an entry's process is still running in this boot.
    pub fn is_live(&self, e: &Entry) -> bool {
        sinkrate_sys::settings_journal::is_live(e, &self.boot_id())
    }

    /// Undoes the temporary changes of processes that are gone, drops entries of earlier
    /// boots. Every command that reads or changes settings calls this first.
    pub fn recover(&self) -> Result<Outcome, Error> {
        let _lock = self.lock()?;
        let mut j = self.load()?;
        let boot = self.boot_id();
        let mut out = Outcome::default();
        let host = &self.host;
        j.entries.retain_mut(|e| {
            if e.boot_id == boot {
                return true;
            }
            // A reboot undid every runtime value, remounts included, except a file written
            // with --persist, and a value that file (or fstab, or a udev rule) set again at
            // boot: those are still sinkrate's to put back.
            let persisted = matches!(e.setting, Setting::File { .. })
                || (e.mode == Mode::Applied
                    && e.written.is_some()
                    && host.read(&e.setting).ok() == e.written);
            if persisted {
                e.boot_id = boot.clone();
            } else {
                out.dropped.push(e.setting.clone());
            }
            persisted
        });
        // An apply killed before it finished (no value read back yet) is undone like a
        // temporary change: the user never got the report that it took effect.
        let finished = |e: &Entry| {
            j.entries
                .iter()
                .any(|x| x.pid == e.pid && x.mode == e.mode && x.written.is_some())
        };
        let dead: Vec<Entry> = j
            .entries
            .iter()
            .filter(|e| {
                !alive(e.pid)
                    && (e.mode == Mode::Temporary || (e.mode == Mode::Applied && !finished(e)))
            })
            .cloned()
            .collect();
        let restored = self.restore_entries(&dead)?;
        j.entries.retain(|e| !dead.contains(e));
        self.save(&j)?;
        out.restored = restored.restored;
        out.left_alone = restored.left_alone;
        Ok(out)
    }

    /// The exact form of a device's dirty-memory share that a change of `s` (its
    /// `max_bytes` or `max_ratio`) moves: `max_ratio_fine` where the kernel has it (6.2+),
    /// else `max_ratio`. It is journaled beside the change and is what a restore writes:
    /// `max_bytes` reads as the ratio times the dirty limit in force, so it moves whenever
    /// vm.dirty_* do and cannot be put back byte for byte itself.
    fn share_companion(&self, s: &Setting) -> Option<Setting> {
        let Setting::Bdi { bdi, .. } = s else {
            return None;
        };
        if !s.is_bdi_share() {
            return None;
        }
        let fine = Setting::Bdi {
            bdi: bdi.clone(),
            attr: "max_ratio_fine".into(),
        };
        let exact = if self.host.has(&fine) {
            fine
        } else {
            Setting::Bdi {
                bdi: bdi.clone(),
                attr: "max_ratio".into(),
            }
        };
        (&exact != s).then_some(exact)
    }

    /// Journals `changes`, then makes them. Sysctls' `_bytes`/`_ratio` companions are
    /// journaled too, and a device's share in its exact form. On any failure what this call
    /// wrote is put back.
    pub fn apply(&self, changes: &[Assignment], mode: Mode) -> Result<Vec<Entry>, Error> {
        self.recover()?;
        let _lock = self.lock()?;
        let mut j = self.load()?;
        let boot = self.boot_id();
        let pid = std::process::id();
        let mut settings: Vec<Setting> = Vec::new();
        for Assignment { setting: s, .. } in changes {
            settings.push(s.clone());
            if let Setting::Sysctl { name } = s {
                if let Some(c) = companion(name) {
                    if self.host.sysctl_path(&c).exists() {
                        settings.push(Setting::Sysctl { name: c });
                    }
                }
            }
            settings.extend(self.share_companion(s));
        }
        settings.dedup();
        let mut mine: Vec<Entry> = Vec::new();
        for s in &settings {
            if mine.iter().any(|e| &e.setting == s) {
                continue;
            }
            let journaled: Vec<&Entry> = j.entries.iter().filter(|e| &e.setting == s).collect();
            if let Some(e) = journaled
                .iter()
                .find(|e| e.mode == Mode::Temporary && e.pid != pid && alive(e.pid))
            {
                return Err(Error::Busy {
                    setting: s.to_string(),
                    pid: e.pid,
                });
            }
            // A test's change over an applied one comes back to the applied value, and the
            // applied entry stays; otherwise a setting already journaled keeps the value from
            // before sinkrate's first change.
            let original = match (mode, journaled.first()) {
                (Mode::Temporary, _) => {
                    match journaled.iter().find(|e| e.mode == Mode::Temporary) {
                        Some(e) => e.original.clone(),
                        None => self.host.read(s)?,
                    }
                }
                (Mode::Applied, Some(e)) => journaled
                    .iter()
                    .find(|e| e.mode == Mode::Applied)
                    .unwrap_or(e)
                    .original
                    .clone(),
                (Mode::Applied, None) => self.host.read(s)?,
            };
            mine.push(Entry {
                setting: s.clone(),
                original,
                written: None,
                mode,
                pid,
                boot_id: boot.clone(),
            });
        }
        j.entries.retain(|e| !replaced_by(e, &settings, mode));
        j.entries.extend(mine.iter().cloned());
        self.save(&j)?;
        test_pause("journaled");
        for (i, Assignment { setting: s, value }) in changes.iter().enumerate() {
            if i == 1 {
                test_pause("applied-one");
            }
            if let Err(e) = self.host.write(s, value) {
                // Put back what this call changed, and forget it.
                let done: Vec<Entry> = mine
                    .iter()
                    .filter(|m| {
                        changes[..i].iter().any(|Assignment { setting: c, .. }| {
                            same_or_companion(c, &m.setting)
                                || self.share_companion(c).as_ref() == Some(&m.setting)
                        })
                    })
                    .cloned()
                    .collect();
                let _ = self.restore_entries(&done);
                j.entries.retain(|x| !mine.contains(x));
                let _ = self.save(&j);
                return Err(e);
            }
        }
        // A companion the kernel zeroed is not sinkrate's value: only what was asked for is
        // checked for someone else's change at restore, and a device's share in its exact
        // form, which is what this call set.
        let exact: Vec<Setting> = changes
            .iter()
            .filter_map(|c| self.share_companion(&c.setting))
            .collect();
        for m in mine.iter_mut() {
            if changes.iter().any(|c| c.setting == m.setting) || exact.contains(&m.setting) {
                m.written = Some(self.host.read(&m.setting)?);
            }
        }
        j.entries.retain(|e| !replaced_by(e, &settings, mode));
        j.entries.extend(mine.iter().cloned());
        self.save(&j)?;
        Ok(mine)
    }

    /// Restores the entries `which` selects (after recovering the dead) and removes them
    /// from the journal.
    pub fn restore(&self, which: &dyn Fn(&Entry) -> bool) -> Result<Outcome, Error> {
        let mut out = self.recover()?;
        let _lock = self.lock()?;
        let mut j = self.load()?;
        let chosen: Vec<Entry> = j.entries.iter().filter(|e| which(e)).cloned().collect();
        let done = self.restore_entries(&chosen)?;
        j.entries.retain(|e| !chosen.contains(e));
        self.save(&j)?;
        out.restored.extend(done.restored);
        out.left_alone.extend(done.left_alone);
        Ok(out)
    }

    /// Writes the originals back, a sysctl pair in the form that was in force; a setting
    /// someone else changed since sinkrate wrote it is left alone.
    fn restore_entries(&self, entries: &[Entry]) -> Result<Outcome, Error> {
        let mut out = Outcome::default();
        let mut done: Vec<&Setting> = Vec::new();
        // What the kernel holds before any write: writing one setting back can change
        // another (a queue's scheduler resets its nr_requests), which is not someone else's
        // change.
        let mut before: Vec<(&Setting, String)> = Vec::new();
        for e in entries.iter().filter(|e| e.written.is_some()) {
            before.push((&e.setting, self.host.read(&e.setting)?));
        }
        // A scheduler first: it resets the queue's other settings, which then go back.
        let mut ordered: Vec<&Entry> = entries.iter().collect();
        ordered.sort_by_key(|e| !e.setting.is_scheduler());
        for e in ordered {
            if done.contains(&&e.setting) {
                continue;
            }
            let pair = match &e.setting {
                Setting::Sysctl { name } => companion(name).and_then(|c| {
                    entries
                        .iter()
                        .find(|x| x.setting == Setting::Sysctl { name: c.clone() })
                }),
                Setting::Bdi { bdi, .. } if e.setting.is_bdi_share() => entries.iter().find(|x| {
                    x.setting != e.setting
                        && x.setting.is_bdi_share()
                        && matches!(&x.setting, Setting::Bdi { bdi: b, .. } if b == bdi)
                }),
                _ => None,
            };
            let members: Vec<&Entry> = std::iter::once(e).chain(pair).collect();
            // Changed by someone else: the value now is not what sinkrate wrote.
            let mut changed = None;
            for m in &members {
                // max_bytes moves with the machine's dirty limit: its exact form is checked.
                if matches!(&m.setting, Setting::Bdi { attr, .. } if attr == "max_bytes") {
                    continue;
                }
                if let Some(w) = &m.written {
                    let now = match before.iter().find(|(s, _)| **s == m.setting) {
                        Some((_, v)) => v.clone(),
                        None => self.host.read(&m.setting)?,
                    };
                    if &now != w {
                        changed = Some((m.setting.clone(), now, w.clone()));
                        break;
                    }
                }
            }
            for m in &members {
                done.push(&m.setting);
            }
            if let Some(c) = changed {
                out.left_alone.push(c);
                continue;
            }
            let target = match pair {
                // The exact form of a device's share is what goes back.
                Some(other) if e.setting.is_bdi_share() => {
                    if share_exactness(&other.setting) < share_exactness(&e.setting) {
                        other
                    } else {
                        e
                    }
                }
                Some(other) => {
                    let (bytes, ratio) = if e.setting.to_string().ends_with("_bytes") {
                        (e, other)
                    } else {
                        (other, e)
                    };
                    if bytes.original != "0" {
                        bytes
                    } else {
                        ratio
                    }
                }
                None => e,
            };
            if !out.restored.is_empty() {
                test_pause("restored-one");
            }
            self.host.write(&target.setting, &target.original)?;
            out.restored
                .push((target.setting.clone(), target.original.clone()));
        }
        Ok(out)
    }
}

/// Whether a new entry for one of `settings` in `mode` takes `e`'s place: an applied
/// change replaces every entry of its setting; a temporary one only a temporary one, so the
/// applied entry under it stays.
fn replaced_by(e: &Entry, settings: &[Setting], mode: Mode) -> bool {
    settings.contains(&e.setting) && (mode == Mode::Applied || e.mode == Mode::Temporary)
}

/// How exactly a form of a device's share puts it back: parts per million, then percent,
/// then bytes (which move with the dirty limit).
fn share_exactness(s: &Setting) -> u8 {
    match s {
        Setting::Bdi { attr, .. } if attr == "max_ratio_fine" => 0,
        Setting::Bdi { attr, .. } if attr == "max_ratio" => 1,
        _ => 2,
    }
}

fn same_or_companion(changed: &Setting, journaled: &Setting) -> bool {
    if changed == journaled {
        return true;
    }
    match (changed, journaled) {
        (Setting::Sysctl { name }, Setting::Sysctl { name: other }) => {
            companion(name).as_deref() == Some(other.as_str())
        }
        _ => false,
    }
}

/// Temporary changes for the life of a test: undone when dropped (end, error, Ctrl-C that
/// unwinds, panic); after `kill -9`, by the next sinkrate's `recover`.
#[derive(Debug)]
pub struct Temporary {
    journal: Journal,
    entries: Vec<Entry>,
    undone: bool,
}

impl Temporary {
    pub fn apply(journal: &Journal, changes: &[Assignment]) -> Result<Temporary, Error> {
        let entries = journal.apply(changes, Mode::Temporary)?;
        Ok(Temporary {
            journal: journal.clone(),
            entries,
            undone: false,
        })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn undo(&mut self) -> Result<Outcome, Error> {
        if self.undone {
            return Ok(Outcome::default());
        }
        self.undone = true;
        let mine = self.entries.clone();
        self.journal.restore(&|e| {
            e.mode == Mode::Temporary
                && e.pid == std::process::id()
                && mine.iter().any(|m| m.setting == e.setting)
        })
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in /proc/sys and /sys/block in a directory (plain files: the kernel's
    /// zeroing of a companion is done by hand where a test needs it).
    fn fake() -> (tempfile::TempDir, Journal) {
        let d = tempfile::tempdir().expect("tempdir");
        let sys = d.path().join("proc/sys");
        for (name, value) in [
            ("vm/dirty_ratio", "20"),
            ("vm/dirty_bytes", "0"),
            ("vm/dirty_expire_centisecs", "3000"),
            ("kernel/random/boot_id", "boot-a"),
        ] {
            let p = sys.join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, value).expect("write");
        }
        let q = d.path().join("sys/block/sda/queue");
        std::fs::create_dir_all(&q).expect("mkdir");
        std::fs::write(q.join("read_ahead_kb"), "128").expect("write");
        let host = Host::at(sinkrate_sys::SysRoot::at(d.path()));
        let journal = Journal::at(host, &d.path().join("j/journal.json"));
        (d, journal)
    }

    fn read(j: &Journal, name: &str) -> String {
        j.host()
            .read(&Setting::Sysctl { name: name.into() })
            .expect("read")
    }

    fn sysctl(name: &str) -> Setting {
        Setting::Sysctl { name: name.into() }
    }

    #[test]
    fn applied_changes_stay_until_restored_and_the_form_in_force_comes_back() {
        let (_d, j) = fake();
        let queue = Setting::Queue {
            device: "sda".into(),
            attr: "read_ahead_kb".into(),
        };
        j.apply(
            &[
                Assignment::new(sysctl("vm/dirty_bytes"), "16777216"),
                Assignment::new(queue.clone(), "4096"),
            ],
            Mode::Applied,
        )
        .expect("apply");
        // What the kernel does when bytes are written: the ratio reads 0.
        std::fs::write(j.host().sysctl_path("vm/dirty_ratio"), "0").expect("w");
        let entries = j.entries().expect("entries");
        assert_eq!(
            entries.len(),
            3,
            "the ratio form is journaled too: {entries:?}"
        );
        assert!(j.recover().expect("recover").is_empty(), "applied stays");
        let out = j.restore(&|e| e.mode == Mode::Applied).expect("restore");
        assert_eq!(read(&j, "vm/dirty_ratio"), "20", "the ratio was in force");
        assert_eq!(j.host().read(&queue).expect("read"), "128");
        assert_eq!(out.restored.len(), 2, "{out:?}");
        assert!(!j.path().exists(), "an empty journal is removed");
    }

    #[test]
    fn a_temporary_change_is_undone_on_drop_and_after_its_process_died() {
        let (_d, j) = fake();
        {
            let _t = Temporary::apply(
                &j,
                &[Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100")],
            )
            .expect("apply");
            assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "100");
        }
        assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "3000");
        // A journal left by a process that is gone (pid 0 never runs user code).
        let t = Temporary::apply(
            &j,
            &[Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100")],
        )
        .expect("apply");
        std::mem::forget(t);
        let mut file: JournalFile =
            serde_json::from_slice(&std::fs::read(j.path()).expect("read")).expect("json");
        for e in &mut file.entries {
            e.pid = u32::MAX;
        }
        std::fs::write(j.path(), serde_json::to_vec(&file).expect("json")).expect("write");
        let out = j.recover().expect("recover");
        assert_eq!(out.restored.len(), 1, "{out:?}");
        assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "3000");
    }

    #[test]
    fn a_test_over_an_applied_change_comes_back_to_the_applied_value() {
        let (_d, j) = fake();
        let expire = sysctl("vm/dirty_expire_centisecs");
        j.apply(&[Assignment::new(expire.clone(), "500")], Mode::Applied)
            .expect("apply");
        {
            let _t =
                Temporary::apply(&j, &[Assignment::new(expire.clone(), "100")]).expect("trial");
            assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "100");
        }
        assert_eq!(
            read(&j, "vm/dirty_expire_centisecs"),
            "500",
            "the applied value"
        );
        let entries = j.entries().expect("entries");
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].mode, Mode::Applied);
        j.restore(&|e| e.mode == Mode::Applied).expect("restore");
        assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "3000");
    }

    #[test]
    fn a_value_someone_else_changed_is_left_alone_and_named() {
        let (_d, j) = fake();
        j.apply(
            &[Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100")],
            Mode::Applied,
        )
        .expect("apply");
        std::fs::write(j.host().sysctl_path("vm/dirty_expire_centisecs"), "500").expect("w");
        let out = j.restore(&|_| true).expect("restore");
        assert_eq!(read(&j, "vm/dirty_expire_centisecs"), "500");
        assert!(
            out.describe().contains("changed by someone else"),
            "{out:?}"
        );
    }

    #[test]
    fn entries_of_an_earlier_boot_are_dropped_and_a_corrupt_journal_changes_nothing() {
        let (_d, j) = fake();
        j.apply(
            &[Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100")],
            Mode::Applied,
        )
        .expect("apply");
        // A reboot put the kernel's value back: the entry is gone with it.
        std::fs::write(j.host().sysctl_path("kernel/random/boot_id"), "boot-b").expect("w");
        std::fs::write(j.host().sysctl_path("vm/dirty_expire_centisecs"), "3000").expect("w");
        let out = j.recover().expect("recover");
        assert_eq!(out.dropped.len(), 1);
        assert!(!j.path().exists());
        // A value a persisted file set again at boot (and the file) stay sinkrate's to put
        // back.
        let before = read(&j, "vm/dirty_expire_centisecs");
        let conf = _d.path().join("60-sinkrate.conf");
        j.apply(
            &[
                Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100"),
                Assignment::new(
                    Setting::File {
                        path: conf.display().to_string(),
                    },
                    "vm.dirty_expire_centisecs = 100\n",
                ),
            ],
            Mode::Applied,
        )
        .expect("apply");
        std::fs::write(j.host().sysctl_path("kernel/random/boot_id"), "boot-c").expect("w");
        let out = j.recover().expect("recover");
        assert!(out.dropped.is_empty(), "{out:?}");
        let out = j.restore(&|_| true).expect("restore");
        assert_eq!(out.restored.len(), 2, "{out:?}");
        assert_eq!(read(&j, "vm/dirty_expire_centisecs"), before);
        assert!(!conf.exists());
        assert!(!j.path().exists());
        std::fs::create_dir_all(j.path().parent().expect("dir")).expect("mkdir");
        std::fs::write(j.path(), b"{ not json").expect("w");
        let e = j
            .apply(
                &[Assignment::new(sysctl("vm/dirty_expire_centisecs"), "100")],
                Mode::Applied,
            )
            .expect_err("corrupt");
        assert!(e.to_string().contains("not a settings journal"), "{e}");
        assert_eq!(
            read(&j, "vm/dirty_expire_centisecs"),
            before,
            "unchanged since"
        );
    }
}
