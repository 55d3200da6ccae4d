pub mod bench;
pub mod docs;
