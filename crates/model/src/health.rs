//! What a card or drive says about itself: its identity, the classes it claims, and how worn
//! it reports to be. Read by audit (`sinkrate_sys::health`) from sysfs for SD and eMMC, and
//! from smartmontools' `smartctl --json` for SATA, NVMe and USB bridges that pass SMART on.

use serde::{Deserialize, Serialize};

/// The health facts of the device under a target; empty when it says nothing of itself
/// (a loop file, a virtual disk, a card reader that hides the card).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CardHealth {
    /// An SD card or eMMC on an MMC host (`/sys/bus/mmc/devices/*/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmc: Option<MmcCard>,
    /// What smartctl read from a SATA, NVMe or USB device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smart: Option<SmartHealth>,
}

impl CardHealth {
    pub fn is_empty(&self) -> bool {
        self.mmc.is_none() && self.smart.is_none()
    }
}

/// An MMC-bus card's identity registers as the kernel shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MmcCard {
    /// `SD`, `MMC` (eMMC), `SDIO` or `SDcombo`, as the kernel's `type` says.
    pub kind: Option<String>,
    /// The product name from the CID (`SC64G`).
    pub name: Option<String>,
    /// The manufacturer id from the CID (`manfid`).
    pub manfid: Option<u32>,
    /// The manufacturer, when the id is one of the well-known ones.
    pub manufacturer: Option<String>,
    pub oemid: Option<String>,
    /// Month of manufacture, `YYYY-MM`.
    pub date: Option<String>,
    pub fwrev: Option<String>,
    pub hwrev: Option<String>,
    pub serial: Option<String>,
    /// The erase unit the kernel prefers (on SD cards the allocation unit), bytes.
    pub preferred_erase_bytes: Option<u64>,
    /// The SD Status register (ACMD13) decoded; SD cards only.
    pub sd_status: Option<SdStatus>,
    /// The SD Status register as the kernel printed it, kept for a reader's own decoding.
    pub ssr_hex: Option<String>,
    /// eMMC 5.0+: the device's life-time estimates (EXT_CSD DEVICE_LIFE_TIME_EST_TYP_A/B).
    pub life_time: Option<LifeTime>,
    /// eMMC 5.0+: EXT_CSD PRE_EOL_INFO.
    pub pre_eol: Option<PreEol>,
}

/// The classes an SD card claims in its SD Status register.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SdStatus {
    /// Speed class: 0, 2, 4, 6 or 10 (MB/s written sequentially).
    pub speed_class: Option<u8>,
    /// UHS speed grade: 1 (U1, 10 MB/s) or 3 (U3, 30 MB/s).
    pub uhs_grade: Option<u8>,
    /// Video speed class: 6, 10, 30, 60 or 90 (V6 to V90, MB/s).
    pub video_class: Option<u8>,
    /// Application performance class: 1 (A1) or 2 (A2).
    pub app_class: Option<u8>,
    /// The allocation unit, bytes.
    pub au_bytes: Option<u64>,
}

impl SdStatus {
    /// The highest sustained write rate the card's classes promise, in bytes per second
    /// (the SD Association's MB/s are 10^6 bytes), and the class that promises it (`V30`).
    pub fn claimed_write(&self) -> Option<(String, f64)> {
        let mut claims: Vec<(String, u32)> = Vec::new();
        if let Some(c) = self.speed_class.filter(|c| *c > 0) {
            claims.push((format!("Class {c}"), c.into()));
        }
        if let Some(u) = self.uhs_grade.filter(|u| *u > 0) {
            claims.push((format!("U{u}"), u32::from(u) * 10));
        }
        if let Some(v) = self.video_class.filter(|v| *v > 0) {
            claims.push((format!("V{v}"), v.into()));
        }
        claims
            .into_iter()
            .max_by_key(|(_, mb)| *mb)
            .map(|(label, mb)| (label, f64::from(mb) * 1e6))
    }

    /// The classes in the form printed on the card: `Class 10, U3, V30, A1`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.speed_class.filter(|c| *c > 0) {
            parts.push(format!("Class {c}"));
        }
        if let Some(u) = self.uhs_grade.filter(|u| *u > 0) {
            parts.push(format!("U{u}"));
        }
        if let Some(v) = self.video_class.filter(|v| *v > 0) {
            parts.push(format!("V{v}"));
        }
        if let Some(a) = self.app_class.filter(|a| *a > 0) {
            parts.push(format!("A{a}"));
        }
        if parts.is_empty() {
            "no class claimed".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// JEDEC's life-time estimate of an eMMC: each type of memory (A: SLC areas, B: MLC/TLC)
/// in steps of 10% of its rated life used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifeTime {
    /// The raw register values: 0x00 not defined, 0x01 0-10% used ... 0x0A 90-100%, 0x0B
    /// past the rated life.
    pub typ_a: u8,
    pub typ_b: u8,
}

impl LifeTime {
    /// The larger estimate's bounds of life used, in percent: (lower, upper); None when
    /// neither type defines one.
    pub fn used_percent(&self) -> Option<(u32, u32)> {
        let worst = self.typ_a.max(self.typ_b);
        match worst {
            0 => None,
            1..=10 => Some((u32::from(worst - 1) * 10, u32::from(worst) * 10)),
            _ => Some((100, 100)),
        }
    }
}

/// eMMC PRE_EOL_INFO: how much of the spare blocks the device has used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreEol {
    /// 0x00: the device does not say.
    NotDefined,
    /// 0x01.
    Normal,
    /// 0x02: 80% of the reserved blocks consumed.
    Warning,
    /// 0x03: 90% of the reserved blocks consumed.
    Urgent,
}

impl PreEol {
    pub fn from_register(v: u8) -> Option<PreEol> {
        match v {
            0 => Some(PreEol::NotDefined),
            1 => Some(PreEol::Normal),
            2 => Some(PreEol::Warning),
            3 => Some(PreEol::Urgent),
            _ => None,
        }
    }
}

/// What smartctl reported about wear and writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SmartHealth {
    /// The device node smartctl read (`/dev/sda`) and the protocol it spoke (`ATA`, `NVMe`).
    pub device: String,
    pub protocol: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub firmware: Option<String>,
    /// SMART's overall assessment.
    pub passed: Option<bool>,
    /// Percent of the rated endurance used (NVMe's percentage_used, ATA's device
    /// statistic, or 100 minus a vendor's life-left attribute); may pass 100.
    pub percentage_used: Option<u32>,
    /// Where the percentage came from.
    pub percentage_used_source: Option<String>,
    /// Bytes the host has written to the device over its life.
    pub written_bytes: Option<u64>,
    pub written_bytes_source: Option<String>,
    pub power_on_hours: Option<u64>,
}
