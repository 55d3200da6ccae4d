//! Filesystem facts read from the device itself, read-only: the bytes are read here and
//! parsed by `sinkrate_formats::superblock`.

use sinkrate_formats::superblock::{parse_cluster_bytes, parse_ext4};

use sinkrate_model::audit::Ext4Super;

fn read_at(path: &std::path::Path, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, offset)?;
    buf.truncate(n);
    Ok(buf)
}

/// Reads the ext4 superblock of a device node (or an image file) read-only.
pub fn read_ext4(device: &std::path::Path) -> std::io::Result<Option<Ext4Super>> {
    Ok(parse_ext4(&read_at(device, 1024, 1024)?))
}

pub fn read_cluster_bytes(device: &std::path::Path) -> std::io::Result<Option<u64>> {
    Ok(parse_cluster_bytes(&read_at(device, 0, 512)?))
}
