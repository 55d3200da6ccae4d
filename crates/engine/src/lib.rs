//! The benchmark engine: backends, workers and the runner. This crate holds sinkrate's
//! Linux-specific unsafe code (syscalls, aligned buffers, mmap, io_uring).

pub mod agg_log;
pub mod backend;
pub mod buffers;
pub mod clock;
pub mod debug_trace;
pub mod disk_util;
pub mod distribution;
pub mod error;
pub mod files;
pub mod flow;
pub mod hist_log;
pub(crate) use sinkrate_sys::host;
pub mod iolog;
pub mod logs;
pub mod nbd_client;
pub mod probe;
pub mod progress;
pub mod replay;
pub mod resources;
pub(crate) use sinkrate_platform::rng;
pub mod fio_rand;
pub mod fio_verify;
pub mod runner;
mod schedule;
pub mod shared_files;
pub mod start_gate;
pub mod status;
pub mod status_reports;
pub mod verify_state;
pub mod worker;

pub use error::EngineError;
pub use runner::{execute, prepare, PreparedRun, RunOptions};
pub use status_reports::StatusReports;
