//! On-disk signatures of a file or device: its first and last bytes, read here and matched
//! by `sinkrate_formats::signature`.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use sinkrate_formats::signature::{detect, detect_tail, HEAD_BYTES, TAIL_BYTES};

fn read_full(f: &mut std::fs::File, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(())
}

/// Known on-disk signatures at the start (256 KiB) and the end (128 KiB) of a file or device.
pub fn of_file(path: &Path) -> std::io::Result<Option<&'static str>> {
    let mut f = std::fs::File::open(path)?;
    let mut head = vec![0u8; HEAD_BYTES];
    read_full(&mut f, &mut head)?;
    if let Some(found) = detect(&head) {
        return Ok(Some(found));
    }
    let size = f.seek(SeekFrom::End(0))?;
    let start = size.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut tail = vec![0u8; (size - start) as usize];
    read_full(&mut f, &mut tail)?;
    Ok(detect_tail(&tail, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_at_the_end_of_a_file_is_found() {
        // md 0.90's magic, in the last 64 KiB-aligned 64 KiB, read through a file as bench
        // and verify read a device.
        const MD_MAGIC: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];
        let size: u64 = (1 << 20) + 12_345;
        let dir = std::env::temp_dir().join(format!("sig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("md090.img");
        let mut img = vec![0u8; size as usize];
        let o = ((size & !0xFFFF) - 0x10000) as usize;
        img[o..o + 4].copy_from_slice(&MD_MAGIC);
        std::fs::write(&file, &img).expect("write");
        let found = of_file(&file).expect("read");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found, Some("an md RAID member (superblock 0.90)"));
    }
}
