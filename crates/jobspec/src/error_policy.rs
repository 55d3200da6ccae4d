//! fio's `continue_on_error` and `ignore_error`: which failed I/Os a job counts and goes on
//! past instead of stopping. As fio's `td_non_fatal_error`: an error is non-fatal when its
//! type (read, write, verify) is one `continue_on_error` names and its errno is on that
//! type's `ignore_error` list, which is EIO and EILSEQ unless the job gives its own.

use serde::{Deserialize, Serialize};

use crate::options::{bad, need, ApplyError};

/// The kind of a failed I/O, in fio's order (its `ignore_error` lists and error bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Read = 0,
    Write = 1,
    Verify = 2,
}

impl ErrorKind {
    /// As fio's `td_error_type`: EILSEQ is a verify error, any other a read's or else a
    /// write's (trims count as writes).
    pub fn of(is_read: bool, errno: i32) -> ErrorKind {
        if errno == libc::EILSEQ {
            ErrorKind::Verify
        } else if is_read {
            ErrorKind::Read
        } else {
            ErrorKind::Write
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPolicy {
    /// Bits of `ErrorKind` whose errors the job goes on past.
    pub continue_on: u8,
    /// Per kind, the errnos that are non-fatal; empty: fio's default, EIO and EILSEQ.
    pub ignore: [Vec<i32>; 3],
}

/// fio's `continue_on_error` values.
const CONTINUE_ON: &[(&str, u8)] = &[
    ("none", 0),
    ("0", 0),
    ("read", 1),
    ("write", 2),
    ("io", 3),
    ("verify", 4),
    ("all", 7),
    ("1", 7),
];

/// Error names `ignore_error` takes, beside numbers (those a storage job meets).
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", libc::EPERM),
    ("ENOENT", libc::ENOENT),
    ("EINTR", libc::EINTR),
    ("EIO", libc::EIO),
    ("ENXIO", libc::ENXIO),
    ("EBADF", libc::EBADF),
    ("EAGAIN", libc::EAGAIN),
    ("ENOMEM", libc::ENOMEM),
    ("EACCES", libc::EACCES),
    ("EFAULT", libc::EFAULT),
    ("EBUSY", libc::EBUSY),
    ("EEXIST", libc::EEXIST),
    ("EXDEV", libc::EXDEV),
    ("ENODEV", libc::ENODEV),
    ("ENOTDIR", libc::ENOTDIR),
    ("EISDIR", libc::EISDIR),
    ("EINVAL", libc::EINVAL),
    ("ENFILE", libc::ENFILE),
    ("EMFILE", libc::EMFILE),
    ("ENOTTY", libc::ENOTTY),
    ("EFBIG", libc::EFBIG),
    ("ENOSPC", libc::ENOSPC),
    ("ESPIPE", libc::ESPIPE),
    ("EROFS", libc::EROFS),
    ("EPIPE", libc::EPIPE),
    ("ERANGE", libc::ERANGE),
    ("EDQUOT", libc::EDQUOT),
    ("EILSEQ", libc::EILSEQ),
    ("ETIMEDOUT", libc::ETIMEDOUT),
    ("EOPNOTSUPP", libc::EOPNOTSUPP),
    ("ENOTSUP", libc::ENOTSUP),
    ("ECANCELED", libc::ECANCELED),
    ("EBADMSG", libc::EBADMSG),
    #[cfg(target_os = "linux")]
    ("ENODATA", libc::ENODATA),
    ("ENOLINK", libc::ENOLINK),
];

/// fio's default list of errors `continue_on_error` goes on past.
const DEFAULT_NON_FATAL: [i32; 2] = [libc::EIO, libc::EILSEQ];

/// An errno's name (`ENOSPC`), when it is one `ignore_error` knows.
pub fn errno_name(errno: i32) -> Option<&'static str> {
    ERRNO_NAMES
        .iter()
        .find(|(_, n)| *n == errno)
        .map(|(name, _)| *name)
}

/// An errno in words, as strerror(3) says it (`No space left on device`).
pub fn errno_text(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.split_once(" (os error") {
        Some((words, _)) => words.to_string(),
        None => text,
    }
}

impl ErrorPolicy {
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<(), ApplyError> {
        let v = need(key, value)?.trim();
        match key {
            "continue_on_error" => {
                let names = v.split(',').map(str::trim).filter(|s| !s.is_empty());
                let mut bits = 0;
                for name in names {
                    let Some((_, b)) = CONTINUE_ON.iter().find(|(n, _)| *n == name) else {
                        return Err(bad(key, format!("'{name}' is not accepted (expected none, read, write, io, verify, all, 0 or 1)")));
                    };
                    bits |= b;
                }
                self.continue_on = bits;
            }
            "ignore_error" => {
                let parts: Vec<&str> = v.split(',').collect();
                if parts.len() > 3 {
                    return Err(bad(
                        key,
                        format!(
                            "'{v}' has more than three comma-separated lists (read,write,verify)"
                        ),
                    ));
                }
                for (kind, part) in parts.iter().enumerate() {
                    let mut list = Vec::new();
                    for item in part.split(':').map(str::trim).filter(|s| !s.is_empty()) {
                        list.push(parse_errno(item).map_err(|e| bad(key, e))?);
                    }
                    self.ignore[kind] = list;
                }
            }
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }

    /// Whether a failed I/O of this kind and errno is counted and gone on past.
    pub fn non_fatal(&self, kind: ErrorKind, errno: i32) -> bool {
        if self.continue_on & (1 << kind as u8) == 0 {
            return false;
        }
        let list = &self.ignore[kind as usize];
        if list.is_empty() {
            DEFAULT_NON_FATAL.contains(&errno)
        } else {
            list.contains(&errno)
        }
    }

    pub fn continues(&self) -> bool {
        self.continue_on != 0
    }
}

fn parse_errno(text: &str) -> Result<i32, String> {
    if let Ok(n) = text.parse::<i32>() {
        if n > 0 {
            return Ok(n);
        }
    }
    let upper = text.to_ascii_uppercase();
    ERRNO_NAMES
        .iter()
        .find(|(name, _)| *name == upper)
        .map(|(_, n)| *n)
        .ok_or_else(|| {
            format!(
                "'{text}' is not an error number or a name sinkrate knows (e.g. EIO, ENOSPC, 28)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_rules_for_non_fatal_errors() {
        let mut p = ErrorPolicy::default();
        assert!(!p.non_fatal(ErrorKind::Write, libc::EIO));
        p.apply("continue_on_error", Some("write")).expect("coe");
        assert!(p.non_fatal(ErrorKind::Write, libc::EIO));
        assert!(!p.non_fatal(ErrorKind::Read, libc::EIO));
        assert!(!p.non_fatal(ErrorKind::Write, libc::ENOSPC));
        p.apply("ignore_error", Some(",ENOSPC:5")).expect("ignore");
        assert!(p.non_fatal(ErrorKind::Write, libc::ENOSPC));
        assert!(p.non_fatal(ErrorKind::Write, libc::EIO));
        assert!(!p.non_fatal(ErrorKind::Write, libc::EROFS));
        p.apply("continue_on_error", Some("1")).expect("coe");
        assert_eq!(p.continue_on, 7);
        assert!(p.non_fatal(ErrorKind::Verify, libc::EILSEQ));
        assert_eq!(ErrorKind::of(false, libc::EILSEQ), ErrorKind::Verify);
        assert_eq!(ErrorKind::of(true, libc::EIO), ErrorKind::Read);
        for (key, value) in [
            ("continue_on_error", "sometimes"),
            ("ignore_error", "EWHAT"),
            ("ignore_error", "EIO,EIO,EIO,EIO"),
            ("ignore_error", "-3"),
        ] {
            assert!(matches!(
                p.apply(key, Some(value)),
                Err(ApplyError::BadValue(_))
            ));
        }
    }
}
