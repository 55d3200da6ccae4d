//! fio's I/O engines as one table: each engine's name and what it is, as fio keeps them in
//! each engine's flags word (`FIO_SYNCIO`, `FIO_DISKLESSIO`, `FIO_NOIO`, ...), and the names
//! of fio's engines that run on another of sinkrate's backends. Parsing `ioengine=`, the
//! predicates of [`Engine`] and the list in a refusal all read it: adding an engine is one
//! row here and its backend.

use crate::options::Engine;

/// What an engine is; each predicate of [`Engine`] reads one of these.
pub mod flag {
    /// Keeps more than one I/O in flight (fio's engines without `FIO_SYNCIO`).
    pub const QUEUED: u16 = 1 << 0;
    /// Each I/O is one create, stat or delete of a file or directory.
    pub const METADATA: u16 = 1 << 1;
    /// Works on whole files rather than blocks: the metadata engines, ftruncate, falloc.
    pub const WHOLE_FILE: u16 = 1 << 2;
    /// Changes the file system whatever the job's `rw=` says.
    pub const CHANGES_FILES: u16 = 1 << 3;
    /// Does no I/O: a CPU load or a program run beside the I/O jobs (fio's `FIO_NOIO`).
    pub const NO_IO: u16 = 1 << 4;
    /// Its targets are directories.
    pub const DIRECTORIES: u16 = 1 << 5;
    /// Block I/O without a file: to nowhere, or to memory the job maps (`FIO_DISKLESSIO`).
    pub const DISKLESS: u16 = 1 << 6;
    /// The backend holds the target (memory, a connection), not a descriptor the job opens.
    pub const NO_FILE: u16 = 1 << 7;
}

/// One engine: its name in job files and what it is.
pub struct EngineFacts {
    pub engine: Engine,
    pub name: &'static str,
    pub flags: u16,
}

use flag::*;

const META: u16 = METADATA | WHOLE_FILE;

/// In the order [`Engine`] declares its variants: an engine's row is `ENGINES[engine as usize]`.
#[rustfmt::skip]
pub const ENGINES: &[EngineFacts] = &[
    EngineFacts { engine: Engine::Sync, name: "sync", flags: 0 },
    EngineFacts { engine: Engine::Psync, name: "psync", flags: 0 },
    EngineFacts { engine: Engine::Vsync, name: "vsync", flags: 0 },
    EngineFacts { engine: Engine::Pvsync, name: "pvsync", flags: 0 },
    EngineFacts { engine: Engine::IoUring, name: "io_uring", flags: QUEUED },
    EngineFacts { engine: Engine::Mmap, name: "mmap", flags: 0 },
    EngineFacts { engine: Engine::Null, name: "null", flags: DISKLESS | NO_FILE },
    EngineFacts { engine: Engine::Ftruncate, name: "ftruncate", flags: WHOLE_FILE | CHANGES_FILES },
    EngineFacts { engine: Engine::Filecreate, name: "filecreate", flags: META | CHANGES_FILES },
    EngineFacts { engine: Engine::Filestat, name: "filestat", flags: META },
    EngineFacts { engine: Engine::Filedelete, name: "filedelete", flags: META | CHANGES_FILES },
    EngineFacts { engine: Engine::Falloc, name: "falloc", flags: WHOLE_FILE | CHANGES_FILES },
    EngineFacts { engine: Engine::Dircreate, name: "dircreate", flags: META | CHANGES_FILES | DIRECTORIES },
    EngineFacts { engine: Engine::Dirstat, name: "dirstat", flags: META | DIRECTORIES },
    EngineFacts { engine: Engine::Dirdelete, name: "dirdelete", flags: META | CHANGES_FILES | DIRECTORIES },
    EngineFacts { engine: Engine::Cpuio, name: "cpuio", flags: NO_IO },
    EngineFacts { engine: Engine::Exec, name: "exec", flags: NO_IO },
    EngineFacts { engine: Engine::Nbd, name: "nbd", flags: QUEUED | NO_FILE },
    EngineFacts { engine: Engine::PageFault, name: "page_fault", flags: DISKLESS | NO_FILE },
];

/// fio's engines that run on another of sinkrate's backends, and what a job is told.
#[rustfmt::skip]
pub const RUN_ON: &[(&str, Engine, &str)] = &[
    ("pvsync2", Engine::Pvsync, "runs on sinkrate's pvsync backend (no RWF_* flags)"),
    ("libaio", Engine::IoUring, "runs on sinkrate's io_uring backend (same queue depth, same semantics)"),
    ("posixaio", Engine::IoUring, "runs on sinkrate's io_uring backend (same queue depth, same semantics)"),
];

/// The row of `engine`.
pub fn facts(engine: Engine) -> &'static EngineFacts {
    &ENGINES[engine as usize]
}

/// The engine named `name` in a job file, and the notice when it runs on another backend.
pub fn by_name(name: &str) -> Option<(Engine, Option<String>)> {
    if let Some(f) = ENGINES.iter().find(|f| f.name == name) {
        return Some((f.engine, None));
    }
    RUN_ON
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(n, engine, why)| (*engine, Some(format!("ioengine={n} {why}"))))
}

/// Every name `ioengine=` takes, for a refusal.
pub fn supported() -> String {
    let names: Vec<&str> = ENGINES.iter().map(|f| f.name).collect();
    let run_on: Vec<String> = RUN_ON
        .iter()
        .map(|(n, engine, _)| format!("{n} on {}", facts(*engine).name))
        .collect();
    format!("{}; and {}", names.join(", "), run_on.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_has_one_row_and_its_name_reads_back() {
        for (i, f) in ENGINES.iter().enumerate() {
            assert_eq!(
                f.engine as usize, i,
                "{}: in the order of Engine's variants",
                f.name
            );
            assert_eq!(by_name(f.name).map(|(e, _)| e), Some(f.engine));
            assert_eq!(facts(f.engine).name, f.name);
        }
        // PageFault is Engine's last variant.
        assert_eq!(
            ENGINES.len(),
            Engine::PageFault as usize + 1,
            "a row per variant"
        );
        assert!(by_name("libaio").is_some_and(|(e, n)| e == Engine::IoUring && n.is_some()));
        assert_eq!(by_name("rbd"), None);
    }
}
