//! `sinkrate record`: does the storage keep up with these streams, frame by frame?

pub mod config;
pub mod frames;
pub mod run;
pub mod segments;
mod sink;
mod uring_sink;
pub mod verdict;
mod writer;
