//! On-disk signatures: does this file or device hold a filesystem, a partition table, a
//! volume? Asked before anything writes over it (bench's device writes, emulate's backing
//! files).

use std::io::Read;
use std::path::Path;

/// How much of the start is read: enough for btrfs's superblock at 64 KiB.
const HEAD_BYTES: usize = 68 * 1024;

/// Known on-disk signatures in the first 68 KiB. Written by hand because libblkid's bindings
/// need the C library and headers, and these few magics are all a refusal needs.
pub fn of_file(path: &Path) -> std::io::Result<Option<&'static str>> {
    let mut head = vec![0u8; HEAD_BYTES];
    let mut f = std::fs::File::open(path)?;
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    Ok(detect(&head))
}

pub fn detect(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| {
        head.len() >= off + magic.len() && &head[off..off + magic.len()] == magic
    };
    if at(1080, &[0x53, 0xEF]) {
        return Some("an ext2/3/4 filesystem");
    }
    if at(0, b"XFSB") {
        return Some("an XFS filesystem");
    }
    if at(65600, b"_BHRfS_M") {
        return Some("a btrfs filesystem");
    }
    if at(3, b"EXFAT   ") {
        return Some("an exFAT filesystem");
    }
    if at(0, b"LUKS\xba\xbe") {
        return Some("a LUKS encrypted volume");
    }
    if at(4086, b"SWAPSPACE2") || at(4086, b"SWAP-SPACE") {
        return Some("a swap area");
    }
    if at(512, b"EFI PART") {
        return Some("a GPT partition table");
    }
    if at(54, b"FAT") || at(82, b"FAT32") {
        return Some("a FAT filesystem");
    }
    if at(510, &[0x55, 0xAA]) && head.len() >= 512 && head[446..510].chunks(16).any(|p| p[4] != 0) {
        return Some("an MBR partition table");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        let mut img = vec![0u8; 70 * 1024];
        assert_eq!(detect(&img), None);
        img[1080] = 0x53;
        img[1081] = 0xEF;
        assert_eq!(detect(&img), Some("an ext2/3/4 filesystem"));
        let mut img = vec![0u8; 70 * 1024];
        img[65600..65608].copy_from_slice(b"_BHRfS_M");
        assert_eq!(detect(&img), Some("a btrfs filesystem"));
        let mut mbr = vec![0u8; 512];
        mbr[510] = 0x55;
        mbr[511] = 0xAA;
        assert_eq!(detect(&mbr), None, "boot signature without partitions");
        mbr[446 + 4] = 0x83;
        assert_eq!(detect(&mbr), Some("an MBR partition table"));
    }
}
