//! The byte layouts sinkrate reads from devices and files, parsed from bytes in memory: no
//! file is opened here. The crates that read a device or a file (sys, audit, verify) hand
//! the bytes in; the fuzz targets feed these parsers any bytes at all.

pub mod capacity_tag;
pub mod fio_verify_state;
pub mod signature;
pub mod superblock;
pub mod undo_journal;
pub mod verify_block;
