//! A block device and what it stands on, as sysfs describes it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bus {
    Usb,
    Mmc,
    Nvme,
    Sata,
    Scsi,
    Virtio,
    Loop,
    Dm,
    Md,
    Nbd,
    Other,
}

impl Bus {
    pub fn label(self) -> &'static str {
        match self {
            Bus::Usb => "USB",
            Bus::Mmc => "MMC/SD",
            Bus::Nvme => "NVMe",
            Bus::Sata => "SATA",
            Bus::Scsi => "SCSI",
            Bus::Virtio => "virtio",
            Bus::Loop => "loop",
            Bus::Dm => "device-mapper",
            Bus::Md => "md RAID",
            Bus::Nbd => "NBD",
            Bus::Other => "other",
        }
    }

    /// Flash media that erase in large blocks and suffer from small scattered writes.
    pub fn is_removable_flash(self) -> bool {
        matches!(self, Bus::Usb | Bus::Mmc)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub number: Option<u64>,
    pub start_bytes: u64,
    pub size_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    pub scheduler: Option<String>,
    pub schedulers: Vec<String>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    pub max_sectors_kb: Option<u64>,
    pub max_hw_sectors_kb: Option<u64>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub minimum_io_size: Option<u64>,
    pub optimal_io_size: Option<u64>,
    pub discard_granularity: Option<u64>,
    pub rotational: Option<bool>,
    /// "write back" (a volatile cache the kernel flushes) or "write through".
    pub write_cache: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// Kernel name of the mounted device (sda1, mmcblk0p1, loop3).
    pub name: String,
    /// Its whole disk (sda, mmcblk0).
    pub disk: String,
    pub sysfs_path: String,
    pub bus: Bus,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    /// MMC only: SD, MMC (eMMC) or SDIO.
    pub mmc_type: Option<String>,
    pub size_bytes: Option<u64>,
    pub removable: Option<bool>,
    pub partition: Option<Partition>,
    pub queue: Queue,
    pub loop_backing_file: Option<String>,
    /// dm/md members.
    pub members: Vec<String>,
    pub dm_name: Option<String>,
}

impl BlockDevice {
    pub fn describe(&self) -> String {
        let mut who: Vec<&str> = Vec::new();
        for s in [&self.vendor, &self.model].into_iter().flatten() {
            who.push(s);
        }
        let mut d = format!("/dev/{}", self.name);
        if let Some(dm) = &self.dm_name {
            who.push(dm);
        }
        if !who.is_empty() {
            d.push_str(&format!(" ({})", who.join(" ")));
        }
        match self.mmc_type.as_deref() {
            Some("SD") => d.push_str(", SD card"),
            Some("MMC") => d.push_str(", eMMC"),
            _ => d.push_str(&format!(", {}", self.bus.label())),
        }
        if let Some(b) = self.size_bytes {
            d.push_str(&format!(", {:.1} GiB", b as f64 / (1u64 << 30) as f64));
        }
        d
    }
}
