use std::path::PathBuf;

/// Errors that stop a run before or during I/O. Each names the file or job and the fix.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("job '{job}': {message}")]
    Job { job: String, message: String },
    #[error("{}: {message}", path.display())]
    Path { path: PathBuf, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Refused(String),
    /// An error in one job, with where the job was defined (file:line of its section).
    #[error("{origin}: {inner}")]
    InJob {
        origin: String,
        inner: Box<EngineError>,
    },
}

impl EngineError {
    /// The errno a result reports for this error (fio's `error`): the system's own for an
    /// I/O error (30 for a read-only filesystem, 28 for no space), EINVAL for a setup the
    /// job cannot run with.
    pub fn errno(&self) -> i32 {
        match self {
            EngineError::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            EngineError::InJob { inner, .. } => inner.errno(),
            EngineError::Job { .. } | EngineError::Path { .. } | EngineError::Refused(_) => {
                libc::EINVAL
            }
        }
    }

    pub fn job(job: &str, message: impl Into<String>) -> EngineError {
        EngineError::Job {
            job: job.to_string(),
            message: message.into(),
        }
    }
    pub fn path(path: impl Into<PathBuf>, message: impl Into<String>) -> EngineError {
        EngineError::Path {
            path: path.into(),
            message: message.into(),
        }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> EngineError {
        EngineError::Io {
            path: path.into(),
            source,
        }
    }
}
