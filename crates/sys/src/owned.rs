//! The files this process made and means to remove when it ends: what a second Ctrl-C
//! removes before the process exits at once, so that no way of stopping sinkrate leaves
//! its test files behind. Files that existed before the run are never entered here.
//!
//! Each entry is also appended to a journal of this process's (`/run/sinkrate/owned/PID`
//! as root, else under the temporary directory), written before the file is created and
//! never buffered, so a run killed with SIGKILL leaves a list: the next sinkrate run removes
//! what it names ([`sweep_left_over`]) and says so.
//!
//! A path is journaled absolute (a relative one means nothing to a run started elsewhere),
//! and a file is removed only while it is still the file this run made: its device and
//! inode are journaled once it exists, and compared before it is unlinked. A file the run
//! listed but never identified (killed between the two records) is named, not removed.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// A file's identity: device and inode, as `stat` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    pub fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The identity of the regular file at `path` now (a symlink there is not followed).
    fn at(path: &Path) -> Option<Identity> {
        std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| Identity::of(&m))
    }
}

// A map: file-operation jobs track tens of thousands of files. `None` until the file exists.
static FILES: Mutex<Option<HashMap<PathBuf, Option<Identity>>>> = Mutex::new(None);
static JOURNAL: Mutex<Option<std::fs::File>> = Mutex::new(None);
/// Files this process made and keeps on purpose (fio's `unlink=0`): no longer its to remove,
/// still its own to write again (a later trial of `tune search` on the same job).
static KEPT: Mutex<Option<HashMap<PathBuf, Identity>>> = Mutex::new(None);
/// Set once the run's cleanup has begun (`remove_all`, `finish`): a worker thread still
/// running then must not make a file the cleanup has already passed, nor reopen a journal
/// that the ending process would leave behind for every later run to report.
static ENDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn ended() -> bool {
    ENDED.load(std::sync::atomic::Ordering::SeqCst)
}

/// A unit test's turn starts with a registry that has not ended (one process, many tests).
#[cfg(test)]
pub(crate) fn begin_again() {
    ENDED.store(false, std::sync::atomic::Ordering::SeqCst);
}

fn files() -> MutexGuard<'static, Option<HashMap<PathBuf, Option<Identity>>>> {
    // A panic elsewhere while holding the map leaves it as valid as before.
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// `path` made absolute against the current directory (sinkrate never changes it), without
/// following links: what a run started in another directory can find again.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Where the journals live: one directory per user, not shared with others, on storage a
/// power cut and a reboot keep (/var/lib, or the user's state directory). A dashcam's normal
/// end of day is a power cut: a journal in /run would be gone with the proof that a file the
/// killed run left is its own. Where that storage cannot be written (a read-only root),
/// /run (or the temporary directory) still serves until the next boot.
pub fn journal_dir() -> PathBuf {
    if let Some(state) = crate::state_dir_override() {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        return state.join(format!("owned-{uid}"));
    }
    let [kept, fallback] = journal_dirs();
    if private_dir(&kept) {
        kept
    } else {
        fallback
    }
}

/// The journal directories of this user: the one that survives a reboot, then the one that
/// does not ([`journal_dir`]).
fn journal_dirs() -> [PathBuf; 2] {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if crate::is_root() {
        return [
            PathBuf::from("/var/lib/sinkrate/owned"),
            PathBuf::from("/run/sinkrate/owned"),
        ];
    }
    let state = crate::user_state_home()
        .map(|d| d.join("sinkrate/owned"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("sinkrate-{uid}-owned-state")));
    [
        state,
        std::env::temp_dir().join(format!("sinkrate-{uid}-owned")),
    ]
}

/// This boot's identity (/proc/sys/kernel/random/boot_id): a journal written in another
/// boot is a killed run's whatever process now has its pid.
fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn journal_path() -> PathBuf {
    journal_dir().join(std::process::id().to_string())
}

/// `dir`, made (0700) if absent, and whether it is to be trusted: a real directory of this
/// user's that nobody else can write. What sinkrate keeps there (the journals the sweep
/// removes files by, the list of kept files a run may write into) must be its own.
pub(crate) fn private_dir(dir: &Path) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    m.is_dir() && m.uid() == me && m.mode() & 0o022 == 0
}

/// The journal directory, when it is private ([`private_dir`]).
fn trusted_dir() -> Option<PathBuf> {
    let dir = journal_dir();
    private_dir(&dir).then_some(dir)
}

/// Appends records to this process's journal: `+path` to be made, `=dev ino path` made (its
/// identity), `-path` removed or kept, `Dpath` a work directory; each ends in a NUL.
/// Without a journal (a read-only /run), the in-memory registry still works.
fn note(records: &[u8]) {
    let mut j = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    if ended() {
        return;
    }
    if j.is_none() {
        use std::os::unix::fs::OpenOptionsExt;
        *j = trusted_dir().and_then(|dir| {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(dir.join(std::process::id().to_string()))
                .ok()?;
            // The boot it was written in first: after a reboot its pid may be another's.
            if let Some(boot) = boot_id() {
                let mut r = Vec::new();
                record(b'B', Path::new(&boot), &mut r);
                let _ = f.write_all(&r);
            }
            Some(f)
        });
    }
    if let Some(f) = j.as_mut() {
        let _ = f.write_all(records);
    }
}

fn record(sign: u8, path: &Path, out: &mut Vec<u8>) {
    out.push(sign);
    out.extend_from_slice(path.as_os_str().as_bytes());
    out.push(0);
}

fn record_identity(id: Identity, path: &Path, out: &mut Vec<u8>) {
    out.push(b'=');
    out.extend_from_slice(format!("{} {} ", id.dev, id.ino).as_bytes());
    out.extend_from_slice(path.as_os_str().as_bytes());
    out.push(0);
}

/// Notes a file this process is about to create and will remove.
pub fn track(path: &Path) {
    track_all([path]);
}

/// Notes several files at once (one lock, one journal write), before a loop that creates
/// them.
pub fn track_all<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    let paths: Vec<PathBuf> = paths.into_iter().map(absolute).collect();
    let mut r = Vec::new();
    for p in &paths {
        record(b'+', p, &mut r);
    }
    note(&r);
    let mut f = files();
    let map = f.get_or_insert_with(HashMap::new);
    for p in paths {
        map.entry(p).or_insert(None);
    }
}

/// Notes that the tracked file at `path` now exists as `meta` describes (taken from the
/// descriptor that created it): from here on the file is removed only while it is still
/// this one.
pub fn made(path: &Path, meta: &std::fs::Metadata) {
    let path = absolute(path);
    let id = Identity::of(meta);
    if ended() {
        // Made by a thread that was still running when the cleanup passed: removed at once,
        // while it is still the file this run made.
        if Identity::at(&path) == Some(id) {
            let _ = std::fs::remove_file(&path);
        }
        return;
    }
    let mut r = Vec::new();
    record_identity(id, &path, &mut r);
    note(&r);
    files()
        .get_or_insert_with(HashMap::new)
        .insert(path, Some(id));
}

/// Why `path` must not be followed: a symlink in a sticky directory that anyone may write
/// (/tmp), owned neither by this user nor by the directory's owner, is one someone else
/// could have planted there (the kernel's `fs.protected_symlinks` rule, kept whatever that
/// setting is).
pub fn planted_symlink(path: &Path) -> Option<String> {
    let link = std::fs::symlink_metadata(path).ok()?;
    if !link.file_type().is_symlink() {
        return None;
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::metadata(parent).ok()?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let shared_sticky = dir.mode() & 0o1002 == 0o1002;
    (shared_sticky && link.uid() != me && link.uid() != dir.uid()).then(|| {
        format!(
            "is a symlink owned by user {} in the shared directory {}: another user may have planted it, and sinkrate never follows one (remove it, or use a directory of your own)",
            link.uid(),
            parent.display()
        )
    })
}

/// Creates a new file at `path` for this run, the one way sinkrate creates a file: listed
/// before it exists, created exclusively (`O_CREAT|O_EXCL`, so neither a file nor a symlink
/// already at the name is ever opened), and identified once it exists. `how` says the access
/// and any flags (`custom_flags`); an existing name is `AlreadyExists`.
pub fn create_new(path: &Path, how: &mut std::fs::OpenOptions) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if ended() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the run is ending: no new file is made",
        ));
    }
    track(path);
    let created = how.create_new(true).mode(0o644).open(path);
    let file = match created {
        Ok(f) => f,
        Err(e) => {
            forget(path);
            return Err(e);
        }
    };
    match file.metadata() {
        Ok(meta) => made(path, &meta),
        Err(e) => {
            let _ = std::fs::remove_file(path);
            forget(path);
            return Err(e);
        }
    }
    Ok(file)
}

/// Notes a directory this process has just made for itself alone (a suite's work
/// directory, a replay's run directory), with its device and inode: a killed run's is
/// removed with what it holds, only while it is still that directory.
pub fn track_dir(path: &Path) {
    let abs = absolute(path);
    let mut r = Vec::new();
    record(b'D', &abs, &mut r);
    if let Some(m) = std::fs::symlink_metadata(&abs).ok().filter(|m| m.is_dir()) {
        record_identity(Identity::of(&m), &abs, &mut r);
    }
    note(&r);
}

/// The directory was removed: no longer listed.
pub fn forget_dir(path: &Path) {
    let mut r = Vec::new();
    record(b'-', &absolute(path), &mut r);
    note(&r);
}

/// Whether the file at `path` is one this process made (listed, or kept on purpose), and
/// still that file.
pub fn made_by_this_run(path: &Path) -> bool {
    let path = absolute(path);
    let Some(now) = Identity::at(&path) else {
        return false;
    };
    let listed = files()
        .as_ref()
        .and_then(|m| m.get(&path).copied())
        .flatten();
    listed == Some(now)
        || KEPT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|k| k.get(&path))
            == Some(&now)
}

/// The file was removed, or is kept on purpose (`--keep`): no longer this registry's.
pub fn forget(path: &Path) {
    let path = absolute(path);
    if let Some(map) = files().as_mut() {
        if let Some(Some(id)) = map.get(&path).copied() {
            if Identity::at(&path) == Some(id) {
                KEPT.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(path.clone(), id);
            }
        }
        if map.remove(&path).is_some() {
            let mut r = Vec::new();
            record(b'-', &path, &mut r);
            note(&r);
        }
    }
}

/// Removes the file this run made at `path`, only while it is still that file (same device
/// and inode); `Ok(true)` when it was removed. A file that cannot be removed stays listed,
/// so that the next run tries again and names it; one that is gone or is no longer this
/// run's is forgotten.
pub fn remove(path: &Path) -> std::io::Result<bool> {
    let abs = absolute(path);
    let known = files()
        .as_ref()
        .and_then(|m| m.get(&abs).copied())
        .flatten();
    let Some(id) = known else {
        return Ok(false);
    };
    if Identity::at(&abs) != Some(id) {
        forget(&abs);
        return Ok(false);
    }
    std::fs::remove_file(&abs)?;
    forget(&abs);
    Ok(true)
}

/// Removes every tracked file that is still the file this run made; returns how many were
/// removed.
pub fn remove_all() -> usize {
    ENDED.store(true, std::sync::atomic::Ordering::SeqCst);
    let entries: Vec<(PathBuf, Option<Identity>)> = files().take().into_iter().flatten().collect();
    let removed = entries
        .iter()
        .filter(|(p, id)| id.is_some() && Identity::at(p) == *id)
        .filter(|(p, _)| std::fs::remove_file(p).is_ok())
        .count();
    finish();
    removed
}

/// The process is ending: its journal goes, unless it still lists a file this run made and
/// could not remove (the next run then tries again, and names it).
pub fn finish() {
    ENDED.store(true, std::sync::atomic::Ordering::SeqCst);
    let stuck = files().as_ref().is_some_and(|m| {
        m.iter()
            .any(|(p, id)| id.is_some() && Identity::at(p) == *id)
    });
    if JOURNAL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .is_some()
        && !stuck
    {
        let _ = std::fs::remove_file(journal_path());
    }
}

/// What a killed run had left, and what became of it.
#[derive(Debug, Default, PartialEq)]
pub struct LeftOver {
    pub pid: u32,
    pub removed: Vec<PathBuf>,
    /// Listed, still there, and not removed (named so the user can), with why.
    pub kept: Vec<(PathBuf, String)>,
}

/// One entry a journal still lists as made and not yet removed.
#[derive(Debug, PartialEq)]
pub struct Listed {
    pub path: PathBuf,
    pub is_dir: bool,
    /// Device and inode once the file existed; `None` if the run was stopped before.
    pub identity: Option<Identity>,
}

fn parse_identity(rec: &[u8]) -> Option<(Identity, PathBuf)> {
    let mut parts = rec.splitn(3, |b| *b == b' ');
    let dev = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let ino = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(parts.next()?));
    Some((Identity { dev, ino }, path))
}

/// What a journal still lists as made and not yet removed, in the order first listed.
/// Linear in the journal's records: every sinkrate run sweeps the journals of runs that
/// were killed before its own work, and a run that made tens of thousands of files (a
/// `filecreate` job) leaves that many records; a search of the list per record kept
/// every later run busy at start-up for minutes.
pub fn listed(journal: &[u8]) -> Vec<Listed> {
    // Each path's slot in `order`; a removed path's slot is emptied, and the path listed
    // again later takes a new slot (at the place it was listed again).
    let mut slot_of: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    let mut order: Vec<Option<Listed>> = Vec::new();
    // A record torn by the kill (no terminating NUL) is not trusted.
    let whole = journal
        .iter()
        .rposition(|b| *b == 0)
        .map_or(&[][..], |end| &journal[..end]);
    for rec in whole.split(|b| *b == 0).filter(|r| r.len() > 1) {
        let body = &rec[1..];
        match rec[0] {
            sign @ (b'+' | b'D') => {
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(body));
                if let std::collections::hash_map::Entry::Vacant(free) = slot_of.entry(path) {
                    let path = free.key().clone();
                    free.insert(order.len());
                    order.push(Some(Listed {
                        path,
                        is_dir: sign == b'D',
                        identity: None,
                    }));
                }
            }
            b'=' => {
                if let Some((id, path)) = parse_identity(body) {
                    if let Some(l) = slot_of.get(&path).and_then(|&i| order[i].as_mut()) {
                        l.identity = Some(id);
                    }
                }
            }
            b'-' => {
                let path = Path::new(std::ffi::OsStr::from_bytes(body));
                if let Some(i) = slot_of.remove(path) {
                    order[i] = None;
                }
            }
            _ => {}
        }
    }
    order.into_iter().flatten().collect()
}

/// The boot a journal was last written in, when it says: the last writer's (a process
/// that reuses an earlier boot's pid appends to that boot's journal, after its own mark).
fn journal_boot(journal: &[u8]) -> Option<String> {
    journal
        .split(|b| *b == 0)
        .rfind(|r| r.first() == Some(&b'B'))
        .map(|r| String::from_utf8_lossy(&r[1..]).into_owned())
}

/// The names of the directories sinkrate makes for a run alone: a suite's work directory
/// and a replay's run directory. No other directory is ever removed by the sweep, whatever
/// a journal says.
fn is_work_dir(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".sinkrate-suite-") || n.starts_with("sinkrate-replay-"))
}

/// What the sweep does with one listed entry: removed, left alone, or kept with a reason
/// (`true` when a later run should try again).
enum Fate {
    Removed,
    Gone,
    Kept(String, bool),
}

fn sweep_one(l: &Listed) -> Fate {
    let Ok(meta) = std::fs::symlink_metadata(&l.path) else {
        return Fate::Gone;
    };
    if l.is_dir {
        // Only sinkrate's own work directories, whatever a journal says, and only while
        // still the directory the run made (where the journal holds its identity).
        if !(meta.is_dir() && is_work_dir(&l.path)) {
            return Fate::Gone;
        }
        if l.identity.is_some_and(|id| Identity::of(&meta) != id) {
            return Fate::Gone;
        }
        return match std::fs::remove_dir_all(&l.path) {
            Ok(()) => Fate::Removed,
            Err(e) => Fate::Kept(e.to_string(), true),
        };
    }
    match l.identity {
        Some(id) if meta.is_file() && Identity::of(&meta) == id => {
            match std::fs::remove_file(&l.path) {
                Ok(()) => Fate::Removed,
                Err(e) => Fate::Kept(e.to_string(), true),
            }
        }
        // Another file at the name now: not the run's, not touched.
        Some(_) => Fate::Gone,
        None => Fate::Kept(
            "the run was stopped before it could tell this file was its own, so it is not removed"
                .into(),
            false,
        ),
    }
}

/// A sweep that another thread waits for: the steps it has finished (a caller can tell a
/// slow sweep from one blocked on a filesystem that does not answer) and whether it is still
/// wanted.
#[derive(Debug)]
pub struct Sweeping {
    steps: std::sync::atomic::AtomicU64,
    abandoned: std::sync::atomic::AtomicBool,
    finished: std::sync::atomic::AtomicBool,
}

impl Default for Sweeping {
    fn default() -> Self {
        Self::new()
    }
}

impl Sweeping {
    pub const fn new() -> Sweeping {
        Sweeping {
            steps: std::sync::atomic::AtomicU64::new(0),
            abandoned: std::sync::atomic::AtomicBool::new(false),
            finished: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The sweep is over: its notes are ready.
    pub fn finish(&self) {
        self.finished
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub fn finished(&self) -> bool {
        self.finished.load(std::sync::atomic::Ordering::Acquire)
    }

    /// One more step done.
    pub fn step(&self) {
        self.steps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn steps(&self) -> u64 {
        self.steps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The caller stopped waiting: nothing more is to be removed without a word.
    pub fn abandon(&self) {
        self.abandoned
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn wanted(&self) -> bool {
        !self.abandoned.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Removes the files that runs killed before they could (their process gone) left listed,
/// each only while it is still the file that run made. A journal whose files cannot be
/// removed is kept with just those, so the next run tries again. Counts each file as a step
/// of `sweeping`, and stops, between one file and the next, once it is no longer wanted.
pub fn sweep_left_over(sweeping: &Sweeping) -> Vec<LeftOver> {
    let mut out = Vec::new();
    // This user's journal directories: where runs write now, and the one a run wrote in
    // when the other could not be (or, from an earlier version, /run).
    let dirs: Vec<PathBuf> = match crate::state_dir_override() {
        Some(_) => trusted_dir().into_iter().collect(),
        None => journal_dirs()
            .into_iter()
            .filter(|d| std::fs::symlink_metadata(d).is_ok() && private_dir(d))
            .collect(),
    };
    let this_boot = boot_id();
    for e in dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
    {
        if !sweeping.wanted() {
            break;
        }
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(bytes) = std::fs::read(e.path()) else {
            continue;
        };
        // Written in another boot: that run is over, whoever has its pid now.
        let earlier_boot = journal_boot(&bytes).is_some_and(|b| Some(b) != this_boot);
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = !earlier_boot
            && (pid == std::process::id()
                || unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
        if alive {
            continue;
        }
        let mut left = LeftOver {
            pid,
            ..LeftOver::default()
        };
        let mut still = Vec::new();
        for l in listed(&bytes) {
            sweeping.step();
            if !sweeping.wanted() {
                // Kept listed for the next run, as a file that could not be removed is.
                record(if l.is_dir { b'D' } else { b'+' }, &l.path, &mut still);
                if let Some(id) = l.identity {
                    record_identity(id, &l.path, &mut still);
                }
                continue;
            }
            match sweep_one(&l) {
                Fate::Removed => left.removed.push(l.path),
                Fate::Gone => {}
                Fate::Kept(why, again) => {
                    if again {
                        record(if l.is_dir { b'D' } else { b'+' }, &l.path, &mut still);
                        if let Some(id) = l.identity {
                            record_identity(id, &l.path, &mut still);
                        }
                    }
                    left.kept.push((l.path, why));
                }
            }
        }
        if still.is_empty() {
            let _ = std::fs::remove_file(e.path());
        } else {
            // Rewritten whole before the old one goes: a kill here leaves one of the two.
            let _ = sinkrate_platform::durable::replace(&e.path(), &still, 0o600);
        }
        if !left.removed.is_empty() || !left.kept.is_empty() {
            out.push(left);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_file(p: &Path) {
        create_new(p, std::fs::OpenOptions::new().write(true)).expect("create");
    }

    #[test]
    fn tracked_files_are_removed_and_forgotten_ones_are_left() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let mine = d.path().join("mine");
        let kept = d.path().join("kept");
        for p in [&mine, &kept] {
            new_file(p);
        }
        forget(&kept);
        assert_eq!(remove_all(), 1);
        assert!(!mine.exists());
        assert!(kept.exists());
        assert_eq!(remove_all(), 0);
    }

    #[test]
    fn a_file_kept_on_purpose_is_still_this_runs_own_until_replaced() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let kept = d.path().join("j.0.0");
        drop(create_new(&kept, std::fs::OpenOptions::new().write(true)).expect("create"));
        assert!(made_by_this_run(&kept));
        // unlink=0: no longer the registry's to remove, still this run's own.
        forget(&kept);
        assert!(made_by_this_run(&kept));
        assert_eq!(remove_all(), 0, "kept, not removed");
        assert!(kept.exists());
        // Replaced by someone else's file (renamed over it, so another inode): not this run's.
        let other = d.path().join("other");
        std::fs::write(&other, b"user").expect("write");
        std::fs::rename(&other, &kept).expect("rename");
        assert!(!made_by_this_run(&kept));
        assert!(!made_by_this_run(&d.path().join("never-made")));
    }

    #[test]
    fn once_the_cleanup_has_run_no_file_is_made_or_left() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        assert_eq!(remove_all(), 0);
        // A worker still running after the second Ctrl-C's cleanup.
        let late = d.path().join("late");
        let e = create_new(&late, std::fs::OpenOptions::new().write(true)).expect_err("ended");
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted);
        assert!(!late.exists());
        // One that made its file its own way and then says so: removed at once.
        let own_way = d.path().join("own-way");
        track(&own_way);
        let f = std::fs::File::create(&own_way).expect("create");
        made(&own_way, &f.metadata().expect("meta"));
        assert!(!own_way.exists());
        assert!(!journal_path().exists(), "no journal reopened");
    }

    #[test]
    fn a_file_replaced_since_is_not_the_runs_to_remove() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("replaced");
        new_file(&p);
        // Renamed over while the run's file still exists, so the inode cannot be reused.
        let theirs = d.path().join("theirs");
        std::fs::write(&theirs, b"someone else's").expect("write");
        std::fs::rename(&theirs, &p).expect("rename");
        assert!(!remove(&p).expect("remove"));
        assert_eq!(std::fs::read(&p).expect("read"), b"someone else's");
    }

    #[test]
    fn an_existing_name_or_symlink_is_never_created_over() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let theirs = d.path().join("theirs");
        std::fs::write(&theirs, b"x").expect("write");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&theirs, &link).expect("symlink");
        for p in [&theirs, &link] {
            let e = create_new(p, std::fs::OpenOptions::new().write(true)).expect_err("exists");
            assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        }
        assert_eq!(remove_all(), 0);
        assert_eq!(std::fs::read(&theirs).expect("read"), b"x");
    }

    #[test]
    fn a_journal_lists_what_was_made_and_not_removed() {
        let _one = crate::registry_test();
        let mut j = Vec::new();
        let id = Identity { dev: 8, ino: 12 };
        record(b'+', Path::new("/a"), &mut j);
        record(b'+', Path::new("/b\nc"), &mut j);
        record_identity(id, Path::new("/b\nc"), &mut j);
        record(b'-', Path::new("/a"), &mut j);
        record(b'+', Path::new("/d"), &mut j);
        record(b'D', Path::new("/w"), &mut j);
        j.extend_from_slice(b"+/torn");
        let l = listed(&j);
        let got: Vec<(&Path, bool, Option<Identity>)> = l
            .iter()
            .map(|l| (l.path.as_path(), l.is_dir, l.identity))
            .collect();
        assert_eq!(
            got,
            vec![
                (Path::new("/b\nc"), false, Some(id)),
                (Path::new("/d"), false, None),
                (Path::new("/w"), true, None)
            ]
        );
        assert!(listed(b"").is_empty());
        // Listed again after its removal: at the place it was listed again.
        j.truncate(j.len() - b"+/torn".len());
        record(b'+', Path::new("/a"), &mut j);
        let again: Vec<PathBuf> = listed(&j).into_iter().map(|l| l.path).collect();
        assert_eq!(again, ["/b\nc", "/d", "/w", "/a"].map(PathBuf::from));
    }

    #[test]
    fn a_journal_of_half_a_million_files_is_read_in_one_pass() {
        // A killed filecreate job's journal: every later run reads it before its own work.
        let mut j = Vec::new();
        for i in 0..500_000u32 {
            record(b'+', Path::new(&format!("/w/t{}.0.{i}", i % 16)), &mut j);
        }
        for i in (0..500_000u32).step_by(2) {
            record(b'-', Path::new(&format!("/w/t{}.0.{i}", i % 16)), &mut j);
        }
        let l = listed(&j);
        assert_eq!(l.len(), 250_000);
        assert_eq!(l[0].path, Path::new("/w/t1.0.1"));
        assert_eq!(l[249_999].path, Path::new("/w/t15.0.499999"));
    }

    #[test]
    fn relative_paths_are_journaled_absolute() {
        let _one = crate::registry_test();
        let abs = absolute(Path::new("rec/x.bin"));
        assert!(abs.is_absolute());
        assert!(abs.ends_with("rec/x.bin"));
    }
}
