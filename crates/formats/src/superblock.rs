//! Filesystem facts read from the device itself, read-only, without tune2fs or dumpe2fs:
//! the ext2/3/4 superblock (features, default data mode, journal size) and the FAT/exFAT
//! boot sector (cluster size). Parsing takes bytes; `sinkrate_audit::superblock` reads them.

use sinkrate_model::audit::Ext4Super;

const EXT4_MAGIC: u16 = 0xEF53;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn c_string(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    let s = String::from_utf8_lossy(&b[..end]).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Parses the 1024-byte superblock (the bytes at offset 1024 of the device).
pub fn parse_ext4(sb: &[u8]) -> Option<Ext4Super> {
    if sb.len() < 1024 || le16(sb, 0x38) != EXT4_MAGIC {
        return None;
    }
    let compat = le32(sb, 0x5C);
    let incompat = le32(sb, 0x60);
    let ro_compat = le32(sb, 0x64);
    let log_block = le32(sb, 0x18);
    if log_block > 6 {
        return None;
    }
    let block_size = 1024u64 << log_block;
    let mut blocks = le32(sb, 0x04) as u64;
    if incompat & 0x80 != 0 {
        blocks |= (le32(sb, 0x150) as u64) << 32;
    }
    let names: &[(u32, u32, &str)] = &[
        (0, 0x4, "has_journal"),
        (0, 0x400, "fast_commit"),
        (1, 0x40, "extents"),
        (1, 0x80, "64bit"),
        (1, 0x200, "flex_bg"),
        (1, 0x4, "journal_dev"),
        (1, 0x8000, "inline_data"),
        (2, 0x400, "metadata_csum"),
        (2, 0x8, "huge_file"),
    ];
    let features = names
        .iter()
        .filter(|(set, bit, _)| [compat, incompat, ro_compat][*set as usize] & bit != 0)
        .map(|(_, _, n)| n.to_string())
        .collect();
    let has_journal = compat & 0x4 != 0;
    // s_jnl_blocks keeps a copy of the journal inode's size in its last two words.
    let journal_bytes = if has_journal && le32(sb, 0xE0) != 0 {
        let hi = le32(sb, 0x10C + 15 * 4) as u64;
        let lo = le32(sb, 0x10C + 16 * 4) as u64;
        Some((hi << 32) | lo).filter(|b| *b > 0)
    } else {
        None
    };
    let default_data_mode = match le32(sb, 0x100) & 0x60 {
        0x20 => Some("journal".to_string()),
        0x40 => Some("ordered".to_string()),
        0x60 => Some("writeback".to_string()),
        _ => None,
    };
    Some(Ext4Super {
        block_size,
        blocks,
        has_journal,
        journal_bytes,
        features,
        default_data_mode,
        stored_mount_options: c_string(&sb[0x200..0x240]),
        label: c_string(&sb[0x78..0x88]),
    })
}

/// Cluster size of a FAT12/16/32 or exFAT volume from its boot sector.
pub fn parse_cluster_bytes(boot: &[u8]) -> Option<u64> {
    if boot.len() < 512 || boot[510] != 0x55 || boot[511] != 0xAA {
        return None;
    }
    if &boot[3..11] == b"EXFAT   " {
        let sector_shift = boot[108] as u32;
        let cluster_shift = boot[109] as u32;
        return (sector_shift + cluster_shift < 40).then(|| 1u64 << (sector_shift + cluster_shift));
    }
    let bytes_per_sector = le16(boot, 11) as u64;
    let sectors_per_cluster = boot[13] as u64;
    (bytes_per_sector.is_power_of_two() && sectors_per_cluster.is_power_of_two())
        .then_some(bytes_per_sector * sectors_per_cluster)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext4_bytes(compat: u32, incompat: u32, defm: u32) -> Vec<u8> {
        let mut b = vec![0u8; 1024];
        b[0x38..0x3A].copy_from_slice(&EXT4_MAGIC.to_le_bytes());
        b[0x18..0x1C].copy_from_slice(&2u32.to_le_bytes());
        b[0x04..0x08].copy_from_slice(&1000u32.to_le_bytes());
        b[0x5C..0x60].copy_from_slice(&compat.to_le_bytes());
        b[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
        b[0x100..0x104].copy_from_slice(&defm.to_le_bytes());
        b[0xE0..0xE4].copy_from_slice(&8u32.to_le_bytes());
        b[0x10C + 64..0x10C + 68].copy_from_slice(&(16u32 << 20).to_le_bytes());
        b[0x78..0x7D].copy_from_slice(b"card0");
        b
    }

    #[test]
    fn ext4_features_journal_and_data_mode() {
        let sb = parse_ext4(&ext4_bytes(0x4, 0x40 | 0x200, 0x60)).expect("ext4");
        assert_eq!(sb.block_size, 4096);
        assert_eq!(sb.blocks, 1000);
        assert!(sb.has_journal);
        assert_eq!(sb.journal_bytes, Some(16 << 20));
        assert_eq!(sb.features, ["has_journal", "extents", "flex_bg"]);
        assert_eq!(sb.default_data_mode.as_deref(), Some("writeback"));
        assert_eq!(sb.label.as_deref(), Some("card0"));
        let no_journal = parse_ext4(&ext4_bytes(0, 0x40, 0)).expect("ext4");
        assert!(!no_journal.has_journal);
        assert_eq!(no_journal.journal_bytes, None);
        assert_eq!(no_journal.default_data_mode, None);
        assert_eq!(parse_ext4(&[0u8; 1024]), None, "no magic");
        assert_eq!(parse_ext4(&[0u8; 10]), None, "short");
    }

    #[test]
    fn fat_and_exfat_clusters() {
        let mut fat = vec![0u8; 512];
        fat[510] = 0x55;
        fat[511] = 0xAA;
        fat[11..13].copy_from_slice(&512u16.to_le_bytes());
        fat[13] = 64;
        assert_eq!(parse_cluster_bytes(&fat), Some(32768));
        let mut exfat = fat.clone();
        exfat[3..11].copy_from_slice(b"EXFAT   ");
        exfat[108] = 9;
        exfat[109] = 8;
        assert_eq!(parse_cluster_bytes(&exfat), Some(131072));
        fat[511] = 0;
        assert_eq!(parse_cluster_bytes(&fat), None);
    }
}
