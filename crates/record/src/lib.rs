//! `sinkrate record`: does the storage keep up with these streams, frame by frame?

pub mod config;
pub mod find_max;
pub mod frame_header;
pub mod frames;
pub mod kernel;
pub mod power_cut;
pub mod replay;
pub mod report;
pub mod run;
pub mod segments;
pub mod session;
mod sink;
pub mod soak;
pub mod stream;
mod uring_sink;
pub mod verdict;
mod writer;
