//! On-disk signatures: do these bytes of a file or device hold a filesystem, a partition
//! table, a volume? Asked before anything writes over it (bench's device writes, emulate's
//! backing files); `sinkrate_sys::signature::of_file` reads the bytes. Written by hand:
//! libblkid's bindings need the C library and headers (the board binaries are static), and
//! these magics, each from its format's documented layout, are all a refusal needs.

/// How much of the start is read: enough for the uberblocks of ZFS's first label, which end at
/// 256 KiB (btrfs's superblock is at 64 KiB, ISO 9660's descriptors at 32 KiB).
pub const HEAD_BYTES: usize = 256 * 1024;
/// How much of the end is read: md's 0.90 superblock sits in the last 64 to 128 KiB.
pub const TAIL_BYTES: u64 = 128 * 1024;

/// The md RAID superblock magic, little-endian on disk (0.90 is host-endian: little on every
/// board this runs on).
const MD_MAGIC: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];
/// bcache's superblock magic (`bcache.h`), 24 bytes into the superblock at 4 KiB.
const BCACHE_MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];
/// ZFS's uberblock magic, 0x00bab10c as a little-endian u64.
const ZFS_UBERBLOCK: [u8; 8] = [0x0c, 0xb1, 0xba, 0x00, 0, 0, 0, 0];

/// Signatures kept at the end of a device: md RAID 0.90 (the last 64 KiB-aligned 64 KiB) and
/// 1.0 (8 KiB from the end, 4 KiB-aligned). `tail` holds the last bytes of a `size`-byte device.
pub fn detect_tail(tail: &[u8], size: u64) -> Option<&'static str> {
    // A tail longer than the device is no tail of it.
    let start = size.checked_sub(tail.len() as u64)?;
    let at = |abs: u64, magic: &[u8]| {
        abs >= start
            && (abs - start) as usize + magic.len() <= tail.len()
            && &tail[(abs - start) as usize..(abs - start) as usize + magic.len()] == magic
    };
    let md090 = (size & !(64 * 1024 - 1)).checked_sub(64 * 1024);
    let md10 = size.checked_sub(8 * 1024).map(|o| o & !(4 * 1024 - 1));
    if md090.is_some_and(|o| at(o, &MD_MAGIC)) {
        return Some("an md RAID member (superblock 0.90)");
    }
    if md10.is_some_and(|o| at(o, &MD_MAGIC)) {
        return Some("an md RAID member (superblock 1.0)");
    }
    None
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
    if at(0, b"LUKS\xba\xbe") || at(16384, b"SKUL\xba\xbe") {
        return Some("a LUKS encrypted volume");
    }
    if at(1024, &[0x10, 0x20, 0xF5, 0xF2]) {
        return Some("an F2FS filesystem");
    }
    if at(3, b"NTFS    ") {
        return Some("an NTFS filesystem");
    }
    if (0..4).any(|s| at(s * 512, b"LABELONE") && at(s * 512 + 24, b"LVM2 001")) {
        return Some("an LVM2 physical volume");
    }
    if at(0, &MD_MAGIC) {
        return Some("an md RAID member (superblock 1.1)");
    }
    if at(4096, &MD_MAGIC) {
        return Some("an md RAID member (superblock 1.2)");
    }
    if at(4096 + 24, &BCACHE_MAGIC) {
        return Some("a bcache device");
    }
    if at(0, b"hsqs") {
        return Some("a squashfs image");
    }
    if [32769, 34817, 36865].iter().any(|&o| at(o, b"CD001")) {
        return Some("an ISO 9660 filesystem");
    }
    // The first label's uberblock array: 128 slots of 1 KiB from 128 KiB.
    if (0..128).any(|k| at(128 * 1024 + k * 1024, &ZFS_UBERBLOCK)) {
        return Some("a ZFS pool member");
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

    /// One image per signature, each laid out as its format documents it (kernel
    /// `f2fs_fs.h`, NTFS boot sector, LVM2's label in sector 1, md's `md_p.h` for 1.x,
    /// `bcache.h`, squashfs, ECMA-119, the ZFS on-disk specification's label, LUKS2's
    /// secondary header); what is not the signature is noise, so that no other check fires.
    #[test]
    fn every_volume_signature_stops_a_write() {
        let noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 | 1)
                .collect()
        };
        let cases: [(usize, &[u8], &str); 12] = [
            (1024, &[0x10, 0x20, 0xF5, 0xF2], "an F2FS filesystem"),
            (3, b"NTFS    ", "an NTFS filesystem"),
            (0, &MD_MAGIC, "an md RAID member (superblock 1.1)"),
            (4096, &MD_MAGIC, "an md RAID member (superblock 1.2)"),
            (4096 + 24, &BCACHE_MAGIC, "a bcache device"),
            (0, b"hsqs", "a squashfs image"),
            (32769, b"CD001", "an ISO 9660 filesystem"),
            (36865, b"CD001", "an ISO 9660 filesystem"),
            (128 * 1024 + 37 * 1024, &ZFS_UBERBLOCK, "a ZFS pool member"),
            (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
            (16384, b"SKUL\xba\xbe", "a LUKS encrypted volume"),
            (1080, &[0x53, 0xEF], "an ext2/3/4 filesystem"),
        ];
        assert_eq!(detect(&noise(HEAD_BYTES)), None, "noise alone");
        for (at, magic, name) in cases {
            let mut img = noise(HEAD_BYTES);
            img[at..at + magic.len()].copy_from_slice(magic);
            assert_eq!(detect(&img), Some(name), "{name} at {at}");
        }
        // LVM2: the label in any of the first four sectors, with its type.
        for sector in 0..4 {
            let mut img = noise(HEAD_BYTES);
            img[sector * 512..sector * 512 + 8].copy_from_slice(b"LABELONE");
            img[sector * 512 + 24..sector * 512 + 32].copy_from_slice(b"LVM2 001");
            assert_eq!(detect(&img), Some("an LVM2 physical volume"));
        }
        let mut img = noise(HEAD_BYTES);
        img[512..520].copy_from_slice(b"LABELONE");
        assert_eq!(detect(&img), None, "a label without LVM2's type");
    }

    #[test]
    fn md_superblocks_at_the_end_of_the_device() {
        // A device of 100 MiB + 12 KiB: 0.90 sits 64 KiB below the last 64 KiB boundary, 1.0 at
        // 8 KiB from the end rounded down to 4 KiB.
        let size: u64 = 100 * 1024 * 1024 + 12 * 1024;
        let tail_len = TAIL_BYTES as usize;
        let start = size - TAIL_BYTES;
        for (abs, name) in [
            (
                (size & !0xFFFF) - 0x10000,
                "an md RAID member (superblock 0.90)",
            ),
            ((size - 8192) & !4095, "an md RAID member (superblock 1.0)"),
        ] {
            let mut tail = vec![0u8; tail_len];
            let at = (abs - start) as usize;
            tail[at..at + 4].copy_from_slice(&MD_MAGIC);
            assert_eq!(detect_tail(&tail, size), Some(name));
        }
        assert_eq!(detect_tail(&vec![0u8; tail_len], size), None);
    }
}
