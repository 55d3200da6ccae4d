//! A capture's calls summed up per file as they come: what `sinkrate capture` prints, and
//! what a replay is checked against. A file keeps its figures across renames (a segment
//! written as `.tmp` and renamed at its end is one file).

use sinkrate_model::capture::CapturedFile;

use crate::trace::{Call, Op};

#[derive(Default)]
struct FileFigures {
    file: CapturedFile,
    /// Opened for writing in the capture (a file made and left empty is one of its files).
    opened: bool,
    write_us: Vec<u32>,
    sync_max_ns: u64,
}

#[derive(Default)]
pub struct Summary {
    files: Vec<FileFigures>,
    pub renames: u64,
    pub unlinks: u64,
}

fn percentile(sorted: &[u32], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0)
}

impl Summary {
    fn entry(&mut self, name: &str) -> &mut FileFigures {
        // The newest file by that name (a name used again after a rename is a new file).
        match self
            .files
            .iter()
            .rposition(|f| f.file.file == name && !f.file.unlinked)
        {
            Some(i) => &mut self.files[i],
            None => {
                self.files.push(FileFigures {
                    file: CapturedFile {
                        file: name.to_string(),
                        ..CapturedFile::default()
                    },
                    ..FileFigures::default()
                });
                let last = self.files.len() - 1;
                &mut self.files[last]
            }
        }
    }

    /// The file the recorder wrote the most bytes to: where its target is.
    pub fn busiest_file(&self) -> Option<&str> {
        self.files
            .iter()
            .filter(|f| f.file.bytes > 0)
            .max_by_key(|f| f.file.bytes)
            .map(|f| f.file.file.as_str())
    }

    pub fn add(&mut self, c: &Call) {
        if c.errno.is_some() {
            return;
        }
        match &c.op {
            Op::Open { file, flags, .. } => {
                let e = self.entry(file);
                e.opened = true;
                let f = &mut e.file;
                for w in flags.split('|').filter(|w| {
                    !matches!(
                        *w,
                        "O_RDONLY" | "O_WRONLY" | "O_RDWR" | "O_CREAT" | "O_EXCL"
                    )
                }) {
                    if !f.open_flags.iter().any(|x| x == w) {
                        f.open_flags.push(w.to_string());
                    }
                }
                if flags.split('|').any(|w| w == "O_TRUNC") {
                    f.size = 0;
                }
            }
            Op::Write {
                file, offset, len, ..
            } => {
                let e = self.entry(file);
                e.file.writes += 1;
                e.file.bytes += len;
                e.file.size = e.file.size.max(offset + len);
                e.write_us
                    .push((c.dur_ns / 1000).min(u32::MAX as u64) as u32);
            }
            Op::Fsync { file, .. } => {
                let e = self.entry(file);
                e.file.fsyncs += 1;
                e.sync_max_ns = e.sync_max_ns.max(c.dur_ns);
            }
            Op::Fdatasync { file, .. } => {
                let e = self.entry(file);
                e.file.fdatasyncs += 1;
                e.sync_max_ns = e.sync_max_ns.max(c.dur_ns);
            }
            Op::SyncFileRange { file, .. } => {
                let e = self.entry(file);
                e.file.sync_file_ranges += 1;
                e.sync_max_ns = e.sync_max_ns.max(c.dur_ns);
            }
            Op::Ftruncate { file, len, .. } => self.entry(file).file.size = *len,
            Op::Rename { from, to, flags } if flags & crate::trace::RENAME_EXCHANGE != 0 => {
                self.renames += 1;
                // The two names swap their files.
                let (mut at_from, mut at_to) = (None, None);
                for (i, f) in self
                    .files
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| !f.file.unlinked)
                {
                    if f.file.file == *from {
                        at_from = Some(i);
                    } else if f.file.file == *to {
                        at_to = Some(i);
                    }
                }
                if let Some(i) = at_from {
                    let old = std::mem::replace(&mut self.files[i].file.file, to.clone());
                    self.files[i].file.earlier_names.push(old);
                }
                if let Some(i) = at_to {
                    let old = std::mem::replace(&mut self.files[i].file.file, from.clone());
                    self.files[i].file.earlier_names.push(old);
                }
            }
            Op::Rename { from, to, .. } => {
                self.renames += 1;
                // A file renamed over another replaces it.
                for f in self.files.iter_mut().filter(|f| f.file.file == *to) {
                    f.file.unlinked = true;
                }
                if let Some(f) = self
                    .files
                    .iter_mut()
                    .rev()
                    .find(|f| f.file.file == *from && !f.file.unlinked)
                {
                    f.file.earlier_names.push(std::mem::take(&mut f.file.file));
                    f.file.file = to.clone();
                }
            }
            Op::Unlink { file } => {
                self.unlinks += 1;
                if let Some(f) = self
                    .files
                    .iter_mut()
                    .rev()
                    .find(|f| f.file.file == *file && !f.file.unlinked)
                {
                    f.file.unlinked = true;
                }
            }
            _ => {}
        }
    }

    /// The files opened for writing or written, with their write times' percentiles.
    pub fn files(self) -> Vec<CapturedFile> {
        self.files
            .into_iter()
            .filter(|f| f.opened || f.file.writes > 0 || f.file.fsyncs + f.file.fdatasyncs > 0)
            .map(|mut f| {
                f.write_us.sort_unstable();
                f.file.write_p50_ms = percentile(&f.write_us, 0.5);
                f.file.write_p99_ms = percentile(&f.write_us, 0.99);
                f.file.write_max_ms = f.write_us.last().map(|v| *v as f64 / 1000.0);
                f.file.sync_max_ms = (f.sync_max_ns > 0).then(|| f.sync_max_ns as f64 / 1e6);
                f.file
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Op) -> Call {
        Call {
            t_ns: 0,
            dur_ns: 2_000_000,
            tid: 1,
            op,
            errno: None,
        }
    }

    fn write(file: &str, offset: u64, len: u64) -> Call {
        call(Op::Write {
            file: file.into(),
            fd: 3,
            offset,
            len,
            call: "write".into(),
            flags: 0,
        })
    }

    #[test]
    fn a_segment_renamed_at_its_end_is_one_file_and_a_name_used_again_a_new_one() {
        let mut s = Summary::default();
        s.add(&write("/r/seg.tmp", 0, 100));
        s.add(&write("/r/seg.tmp", 100, 50));
        s.add(&call(Op::Fsync {
            file: "/r/seg.tmp".into(),
            fd: 3,
        }));
        s.add(&call(Op::Rename {
            from: "/r/seg.tmp".into(),
            to: "/r/seg1.mp4".into(),
            flags: 0,
        }));
        s.add(&write("/r/seg.tmp", 0, 70));
        let files = s.files();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].file, "/r/seg1.mp4");
        assert_eq!(files[0].earlier_names, ["/r/seg.tmp"]);
        assert_eq!(
            (files[0].bytes, files[0].size, files[0].fsyncs),
            (150, 150, 1)
        );
        assert_eq!(files[0].write_max_ms, Some(2.0));
        assert_eq!((files[1].file.as_str(), files[1].size), ("/r/seg.tmp", 70));
    }
}
