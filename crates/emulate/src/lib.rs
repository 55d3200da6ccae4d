//! `sinkrate emulate`: slow storage on demand. A slow SD card or USB drive is emulated as
//! nbdkit (memory or a sparse file, behind its rate, delay and error filters), exported as a
//! file through nbdfuse, attached to a loop device with direct I/O, formatted with a real
//! filesystem and mounted. Because the device itself is slow, the kernel's background
//! writeback is slowed too, not only direct I/O (cgroup-v1 blkio throttling cannot do that).
//!
//! Every step is journaled in a state directory before it is taken, so `down` can remove
//! every piece in the right order, also after a crash or `kill -9` of any process.

pub mod models;
pub mod power;
pub mod profile;
pub mod stack;
pub mod tools;

pub use stack::{down, list, sweep_orphans, up, EmulateError, Orphan, Spec, State};
