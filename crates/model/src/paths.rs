//! Paths in results: a path need not be UTF-8 on Linux, but JSON is text, and serde refuses
//! such a path ("path contains invalid UTF-8 characters") after the whole run. A result
//! names it as `Path::display` does (invalid bytes as U+FFFD), so the run's figures are
//! never lost to a file name.

use std::path::Path;

use serde::Serializer;

/// `#[serde(serialize_with = "sinkrate_model::paths::lossy")]` on a path field.
pub fn lossy<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_that_is_not_utf8_is_named_not_refused() {
        use std::os::unix::ffi::OsStrExt;
        #[derive(serde::Serialize)]
        struct R {
            #[serde(serialize_with = "super::lossy")]
            dir: std::path::PathBuf,
        }
        let dir = std::ffi::OsStr::from_bytes(b"bad\xffname").into();
        let json = serde_json::to_string(&R { dir }).expect("serialises");
        assert_eq!(json, "{\"dir\":\"bad\u{fffd}name\"}");
    }
}
