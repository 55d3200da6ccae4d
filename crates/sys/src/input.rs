//! Reading what a user names as input (job files, result files, standard input) with a
//! bound: `/dev/zero`, `/dev/urandom` or a pipe that never ends would otherwise grow the
//! process until the host runs out of memory. A regular file's size is checked before a
//! byte is read; anything else is read up to the bound and refused past it.

use std::io::{self, Read};
use std::path::Path;

/// The largest job file (fio's own are a few KiB; an include tree of them stays far below).
pub const JOB_FILE_BYTES: u64 = 16 << 20;
/// The largest result file: a day's recording with every frame logged stays below it.
pub const RESULT_BYTES: u64 = 512 << 20;

/// The error does not name the input: callers do, as they do for every other error.
fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "larger than {} MiB, more than any such file holds; not read (is it a device or an endless stream?)",
            limit >> 20
        ),
    )
}

/// Reads `path` whole if it holds at most `limit` bytes.
pub fn read_capped(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(limit));
    }
    read_from(file, limit)
}

/// Reads `reader` to its end if it gives at most `limit` bytes.
pub fn read_from(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// Text of a job file: UTF-8, or an error naming the first line that is not.
pub fn text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let line = 1 + bytes[..valid].iter().filter(|b| **b == b'\n').count();
        format!("line {line}: not valid UTF-8 text (a job file is text)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_stream_is_refused_at_the_bound() {
        let e = read_capped(Path::new("/dev/zero"), 1 << 20).expect_err("endless");
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        assert_eq!(read_from(&b"abc"[..], 3).expect("fits"), b"abc");
        assert!(read_from(&b"abcd"[..], 3).is_err());
    }

    #[test]
    fn text_that_is_not_utf8_names_its_line() {
        assert_eq!(
            text(b"[a]\nrw=read\nname=\xff\n".to_vec()).expect_err("bad"),
            "line 3: not valid UTF-8 text (a job file is text)"
        );
    }
}
