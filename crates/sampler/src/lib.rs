//! The sampler shared by `watch`, `bench`, `record` and `check`: one thread reads /proc every
//! interval (pre-opened files, `pread` at offset 0, no fork, no allocation per sample once
//! running) and keeps a timeline; [`analysis`] turns a timeline into the summary: least
//! memory available, peak dirty + writeback, throttled time, and the settings that avoid it.

pub mod analysis;
#[cfg(target_os = "linux")]
pub mod causes;
pub mod fleet;
pub mod hogs;
pub mod live;
pub mod sample;
#[cfg(target_os = "linux")]
pub mod target;
pub mod timeline;
pub mod watch;

pub use analysis::analyse;

pub use live::{Sampler, SamplerConfig, SamplerOutput};
