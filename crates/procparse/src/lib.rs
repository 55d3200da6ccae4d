//! Pure parsers for the /proc files sinkrate reads. Each takes the file's text and returns a
//! typed struct; fields a kernel does not provide are `None`, never a guess. The `procfs`
//! crate covers many of these, but reads the live system itself; parsers that take text are
//! what lets sinkrate test every kernel's format from fixtures.

pub mod cpustat;
pub mod diskstats;
pub mod meminfo;
pub mod mountinfo;
pub mod pid;
pub mod pressure;
#[cfg(target_os = "linux")]
pub mod trace;
pub mod vmsettings;
pub mod vmstat;
