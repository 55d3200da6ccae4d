//! The platform layer: what sinkrate's sessions need from the operating system that has
//! nothing to do with storage questions. Aligned buffers, the seeded generator, a thread's
//! CPU time, whether io_uring can run here, stopping a child with one escalation policy,
//! replacing a state file durably.
//! The system facts (mounts, devices, counters) are `sinkrate-sys`'s.

pub mod buf;
pub mod child;
pub mod cpu;
pub mod durable;
pub mod power;
pub mod rng;
pub mod uring;
