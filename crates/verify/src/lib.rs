//! `sinkrate verify`: write blocks that each say what they are (run, generation, block,
//! offset, length, checksum, time), read them back once they have left the page cache, and
//! tell apart what comes back: the block as written, zeros, garbage, a stale block from an
//! earlier run or generation, a block from another offset (a wrap-around or misdirected
//! write), or a corrupted one.

pub mod block;
pub mod capacity;
pub mod class;
pub mod session;

pub use session::{run, Config, VerifyError};
