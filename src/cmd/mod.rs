pub mod bench;
pub mod docs;
pub mod emulate;
