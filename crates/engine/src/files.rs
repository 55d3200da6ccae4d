//! Which files a job touches, how large, and whether there is room: all decided before any
//! I/O, so a bad target stops the run with nothing written.

use sinkrate_sys::files::existing_parent;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use sinkrate_jobspec::options::{Engine, SizeSpec};
use sinkrate_jobspec::Job;

use crate::error::EngineError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlannedFile {
    pub path: PathBuf,
    /// First byte the job touches.
    pub region_start: u64,
    /// Bytes from `region_start` the job touches.
    pub region_len: u64,
    pub is_block_device: bool,
    /// A character device or FIFO (/dev/zero, /dev/null), the null engine's nothing or an
    /// NBD export: no layout, no page cache, no unlink.
    pub special: bool,
    /// fsync=, fdatasync= and end_fsync reach it: a file, a block device, an NBD export (its
    /// flushes); not a character device, a FIFO or the null engine's nothing.
    pub takes_syncs: bool,
    /// Size the file had before the run (None: it did not exist).
    pub existing_size: Option<u64>,
    /// It existed because an earlier run made it and kept it, and is still that file: the
    /// job may write into it and, with `unlink=1`, remove it (any other existing file it
    /// writes into must be named by the job or allowed by --force, and is never removed).
    pub kept_from_earlier: bool,
    /// Planned on a stand-in size: an earlier phase of the run makes the file, and the job
    /// is sized from it as it starts (fio's surface-scan verifies what its fill wrote).
    pub sized_at_start: bool,
}

impl PlannedFile {
    pub fn needed_size(&self) -> u64 {
        self.region_start + self.region_len
    }
}

/// Splits fio's `filename=a:b` list; `\:` keeps a colon in a name.
pub fn split_filenames(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// For the directory engines: `Some` when `path` is a directory, `None` when nothing is there.
fn existing_directory(path: &Path) -> Result<Option<(u64, bool)>, EngineError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(Some((0, false))),
        Ok(_) => Err(EngineError::path(
            path,
            "is not a directory (dircreate, dirstat and dirdelete work on directories; use another directory= or filename_format=)",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io(path, e)),
    }
}

/// Size of a file or block device at `path`, if it exists.
pub fn existing_size(path: &Path) -> Result<Option<(u64, bool)>, EngineError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_block_device() => Ok(Some((
            sinkrate_sys::files::block_device_size(path).map_err(|e| EngineError::io(path, e))?,
            true,
        ))),
        Ok(meta) if meta.is_dir() => Err(EngineError::path(
            path,
            "is a directory (use directory= for where files go, filename= for the file)",
        )),
        Ok(meta) => Ok(Some((meta.len(), false))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io(path, e)),
    }
}

/// Where a file name goes. fio prefixes every name with `directory=`, an absolute one too
/// (`directory=/x` with `filename=/dev/sda` is the regular file `/x/dev/sda`); without it,
/// relative names go in `dir` (the current directory).
fn in_directory(has_directory: bool, dir: &Path, name: &str) -> PathBuf {
    if has_directory {
        dir.join(name.trim_start_matches('/'))
    } else if Path::new(name).is_absolute() {
        PathBuf::from(name)
    } else {
        dir.join(name)
    }
}

/// The files of one job, sized. `base_dir` is where relative names go when the job has no
/// `directory=`.
pub fn plan_files(job: &Job, base_dir: &Path) -> Result<Vec<PlannedFile>, EngineError> {
    let o = &job.options;
    if o.ioengine.is_diskless() {
        return Ok(vec![diskless_file(o)?]);
    }
    let export = match (o.ioengine, &o.uri) {
        (Engine::Nbd, Some(uri)) => Some(nbd_export(o, uri)?),
        _ => None,
    };
    let names = file_names(job, base_dir, export.is_some());
    let nfiles = names.len().max(1) as u64;
    let mut planned = Vec::with_capacity(names.len());
    // Judged once per directory: nrfiles= can name many thousands of files in one.
    let mut device_dirs: std::collections::HashMap<PathBuf, bool> = Default::default();
    for path in names {
        // An export is sized and bounded as a block device is.
        let existing = if let Some(size) = export {
            Some((size, true))
        } else if o.ioengine.on_directories() {
            existing_directory(&path)?
        } else {
            existing_size(&path)?
        };
        if existing.is_none()
            && *device_dirs
                .entry(existing_parent(&path))
                .or_insert_with_key(|dir| {
                    sinkrate_sys::mounts::holds_device_nodes(
                        &sinkrate_sys::root::SysRoot::live(),
                        dir,
                    )
                })
        {
            return Err(EngineError::path(
                &path,
                "does not exist; a device path is never created as a file (check filename=)",
            ));
        }
        let (existing_size, is_block_device) = match existing {
            Some((s, b)) => (Some(s), b),
            None => (None, false),
        };
        let per_file = file_size(o, &path, existing_size, nfiles)?;
        let (offset, region_len) = file_region(
            job,
            &path,
            existing_size,
            per_file,
            is_block_device,
            export.is_some(),
        )?;
        let char_or_fifo = std::fs::metadata(&path)
            .map(|m| m.file_type().is_char_device() || m.file_type().is_fifo())
            .unwrap_or(false);
        planned.push(PlannedFile {
            path,
            region_start: offset,
            region_len,
            is_block_device: is_block_device && export.is_none(),
            special: char_or_fifo || export.is_some(),
            takes_syncs: !char_or_fifo,
            existing_size,
            kept_from_earlier: false,
            sized_at_start: false,
        });
    }
    Ok(planned)
}

/// A diskless engine's one pseudo-file: the job's size and no path on any disk.
fn diskless_file(o: &sinkrate_jobspec::JobOptions) -> Result<PlannedFile, EngineError> {
    let size = match o.size {
        Some(SizeSpec::Bytes(s)) => s,
        _ => o.filesize.map(|f| f.1).unwrap_or(0),
    };
    if size == 0 {
        return Err(EngineError::job(
            &o.name,
            format!(
                "ioengine={} needs size= (e.g. size=1g)",
                o.ioengine.fio_name()
            ),
        ));
    }
    // The null engine's I/O goes nowhere, but its offsets are fio's: the region starts at
    // offset= and holds size= bytes, within filesize= when that is given (the file's end).
    // (page_fault maps the region itself, from its start.)
    let file_end = o.filesize.map(|f| f.1);
    let offset = match (o.ioengine, o.offset) {
        (Engine::Null, SizeSpec::Bytes(b)) => b,
        (Engine::Null, SizeSpec::Percent(p)) => {
            (file_end.unwrap_or(size) as f64 * p / 100.0) as u64
        }
        _ => 0,
    };
    let region_len = match file_end {
        Some(end) if o.ioengine == Engine::Null => size.min(end.saturating_sub(offset)),
        _ => size,
    };
    if region_len == 0 {
        return Err(EngineError::job(
            &o.name,
            format!("offset {offset} is beyond the job's filesize"),
        ));
    }
    Ok(PlannedFile {
        path: PathBuf::from(format!("({})", o.ioengine.fio_name())),
        region_start: offset,
        region_len,
        is_block_device: false,
        special: true,
        // fio's null engine takes fsync= and end_fsync (it completes them at once, and
        // they count); the diskless backends answer a sync that way.
        takes_syncs: true,
        existing_size: Some(size),
        kept_from_earlier: false,
        sized_at_start: false,
    })
}

/// The paths of a job's files: `filename=`'s list, or fio's generated names
/// (`filename_format`), or an NBD export's URI.
fn file_names(job: &Job, base_dir: &Path, nbd_export: bool) -> Vec<PathBuf> {
    let o = &job.options;
    // directory=a:b: as fio, named files (filename=) go in the first; generated names go
    // in one directory per clone of the job, round robin (clone 0 in a, 1 in b, 2 in a).
    let dirs: Vec<PathBuf> = match &o.directory {
        Some(d) => {
            let list: Vec<PathBuf> = split_filenames(d).into_iter().map(PathBuf::from).collect();
            if list.is_empty() {
                vec![PathBuf::from(d)]
            } else {
                list
            }
        }
        None => vec![base_dir.to_path_buf()],
    };
    let dir = &dirs[0];
    let clone_dir = &dirs[job.clone_index as usize % dirs.len()];
    match (nbd_export, &o.filename) {
        // As fio's engine: the export is the job's one file, named by its URI.
        (true, _) => vec![PathBuf::from(o.uri.as_deref().unwrap_or("nbd"))],
        (false, Some(list)) => split_filenames(list)
            .into_iter()
            .map(|n| in_directory(o.directory.is_some(), dir, &n))
            .collect(),
        (false, None) => (0..o.nrfiles)
            .map(|i| {
                let name = match &o.filename_format {
                    Some(f) => f
                        .replace("$jobname", &o.name)
                        .replace("$jobnum", &job.clone_index.to_string())
                        .replace("$filenum", &i.to_string())
                        .replace("$clientuid", "0"),
                    None => format!("{}.{}.{}", o.name, job.clone_index, i),
                };
                in_directory(o.directory.is_some(), clone_dir, &name)
            })
            .collect(),
    }
}

/// [`plan_files`] for a job without `size=` whose files do not exist yet: where `made_earlier`
/// says an earlier phase of the run makes every missing one, they are planned on a stand-in
/// size of one block and marked to be sized again as the job starts (as fio sizes a job's
/// files when it starts); otherwise planning's own refusal.
pub fn plan_files_or_later(
    job: &Job,
    base_dir: &Path,
    made_earlier: impl Fn(&Path) -> bool,
) -> Result<Vec<PlannedFile>, EngineError> {
    let refused = match plan_files(job, base_dir) {
        Ok(planned) => return Ok(planned),
        Err(e) => e,
    };
    let o = &job.options;
    if o.size.is_some() || o.filesize.is_some() || o.ioengine.is_diskless() {
        return Err(refused);
    }
    let mut stand_in = job.clone();
    let block = o.bs.iter().copied().max().unwrap_or(4096).max(1);
    stand_in.options.size = Some(SizeSpec::Bytes(block));
    let Ok(mut planned) = plan_files(&stand_in, base_dir) else {
        return Err(refused);
    };
    if planned
        .iter()
        .any(|f| f.existing_size.is_some() || !made_earlier(&f.path))
    {
        return Err(refused);
    }
    for f in &mut planned {
        f.sized_at_start = true;
    }
    Ok(planned)
}

/// One file's size: `filesize=` (a range picks one per name), `size=` shared among the
/// job's files or a percentage of what exists, else the existing file's or device's size.
fn file_size(
    o: &sinkrate_jobspec::JobOptions,
    path: &Path,
    existing_size: Option<u64>,
    nfiles: u64,
) -> Result<u64, EngineError> {
    Ok(match (o.filesize, o.size) {
        (Some((lo, hi)), _) => {
            if lo == hi {
                lo
            } else {
                // A range: a size in the range, fixed per file name so re-runs agree.
                let h = path
                    .as_os_str()
                    .as_bytes()
                    .iter()
                    .fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(*b as u64));
                lo + h % (hi - lo + 1)
            }
        }
        (None, Some(SizeSpec::Bytes(s))) => s / nfiles,
        (None, Some(SizeSpec::Percent(p))) => match existing_size {
            Some(s) => (s as f64 * p / 100.0) as u64,
            None => {
                return Err(EngineError::path(
                    path,
                    format!("size={p}% needs an existing file or device to take a percentage of"),
                ))
            }
        },
        (None, None) => match existing_size {
            Some(s) if s > 0 => s,
            _ => {
                return Err(EngineError::job(
                    &o.name,
                    format!(
                        "size= is not set and {} {} (give size=, e.g. --size=1g)",
                        path.display(),
                        if existing_size.is_some() {
                            "is empty, so it gives no size"
                        } else {
                            "does not exist"
                        }
                    ),
                ))
            }
        },
    })
}

/// Where in the file the job's I/O goes (offset, length): `offset=` and the clone's
/// `offset_increment` stripe, bounded by a device's (or export's) end and at least a block.
fn file_region(
    job: &Job,
    path: &Path,
    existing_size: Option<u64>,
    per_file: u64,
    is_block_device: bool,
    nbd_export: bool,
) -> Result<(u64, u64), EngineError> {
    let o = &job.options;
    let at = |spec: SizeSpec| match spec {
        SizeSpec::Bytes(b) => b,
        SizeSpec::Percent(p) => (existing_size.unwrap_or(per_file) as f64 * p / 100.0) as u64,
    };
    // As fio: offset + offset_increment * the clone's subjob number. fio numbers the
    // clones after the first from the last down (its second job is subjob numjobs-1),
    // so the same job number writes the same stripe in both tools.
    let subjob = match job.clone_index {
        0 => 0,
        k => o.numjobs.saturating_sub(k),
    };
    let offset =
        at(o.offset).saturating_add(at(o.offset_increment).saturating_mul(u64::from(subjob)));
    let mut region_len = per_file;
    if is_block_device {
        let dev = existing_size.unwrap_or(0);
        if offset >= dev {
            return Err(EngineError::path(
                path,
                format!(
                    "offset {offset} is beyond the {}'s {dev} bytes",
                    if nbd_export { "export" } else { "device" }
                ),
            ));
        }
        region_len = region_len.min(dev - offset);
    }
    let min_bs = o.bs[0].min(o.bs[1]);
    if region_len == 0 || (!o.ioengine.is_file_operation() && region_len < min_bs) {
        return Err(EngineError::job(
            &o.name,
            format!(
                "{} gets {region_len} bytes, less than one block of {min_bs} (raise size= or lower nrfiles=)",
                path.display()
            ),
        ));
    }
    Ok((offset, region_len))
}

/// The size of an NBD export, asked of its server when the job is planned (as fio's engine
/// does in its setup), and what the job would do that the export does not take.
fn nbd_export(o: &sinkrate_jobspec::JobOptions, uri: &str) -> Result<u64, EngineError> {
    let at = |what: String| EngineError::job(&o.name, format!("uri={uri}: {what}"));
    let parsed = crate::nbd_client::Uri::parse(uri)
        .map_err(|e| EngineError::job(&o.name, format!("uri={e}")))?;
    let (mut stream, export) = crate::nbd_client::connect(&parsed)
        .map_err(|e| at(format!("cannot connect to the NBD server: {e}")))?;
    stream.disconnect();
    if o.rw.modifies() && export.read_only() {
        return Err(at(
            "the export is read-only and the job writes (use rw=read or rw=randread)".into(),
        ));
    }
    if o.rw.trims() && !export.can_trim() {
        return Err(at("the export does not take trims (NBD_CMD_TRIM)".into()));
    }
    let syncs = o.fsync > 0 || o.fdatasync > 0 || o.end_fsync || o.fsync_on_close;
    if syncs && o.rw.writes() && !export.can_flush() {
        return Err(at(
            "the export does not take flushes (NBD_CMD_FLUSH), which fsync= and end_fsync send (leave them out)"
                .into(),
        ));
    }
    Ok(export.size)
}

/// Bytes the file system must still provide for these files to reach their sizes.
pub fn bytes_to_allocate(files: &[PlannedFile]) -> u64 {
    files
        .iter()
        .filter(|f| !f.is_block_device && !f.special)
        .map(|f| f.needed_size().saturating_sub(f.existing_size.unwrap_or(0)))
        .sum()
}

use sinkrate_model::facts::FsSpace;

/// statvfs of the filesystem holding `dir`.
pub fn space(dir: &Path) -> Result<FsSpace, EngineError> {
    sinkrate_sys::space(dir).map_err(|e| EngineError::io(dir, e))
}

/// Free bytes for unprivileged writers on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Result<u64, EngineError> {
    space(dir).map(|s| s.available_bytes)
}

/// Why `dir` cannot be used as a directory: it is a file, a part of its path is one, or it
/// does not exist.
pub fn not_a_directory(dir: &Path) -> String {
    if dir.exists() {
        return "is not a directory (directory= names the directory the job's files go in)".into();
    }
    let mut p = dir.parent();
    while let Some(part) = p {
        if part.exists() && !part.is_dir() {
            return format!(
                "does not exist: {} is a file, not a directory",
                part.display()
            );
        }
        p = part.parent();
    }
    "does not exist (create it, or point directory= elsewhere)".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filename_lists() {
        assert_eq!(split_filenames("a:b"), ["a", "b"]);
        assert_eq!(split_filenames(r"c\:d:e"), ["c:d", "e"]);
        assert_eq!(split_filenames("/dev/sda"), ["/dev/sda"]);
    }
}
