//! The platform layer: what sinkrate's sessions need from the operating system that has
//! nothing to do with storage questions. Aligned buffers, the seeded generator, a thread's
//! CPU time, whether io_uring can run here.
//! The system facts (mounts, devices, counters) are `sinkrate-sys`'s.

pub mod buf;
pub mod cpu;
pub mod power;
pub mod rng;
pub mod uring;
