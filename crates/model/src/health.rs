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
    /// An emulated card (`sinkrate emulate up --wear-out`): its own account of its wear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<EmulatedWear>,
}

impl CardHealth {
    pub fn is_empty(&self) -> bool {
        self.mmc.is_none() && self.smart.is_none() && self.emulated.is_none()
    }

    /// What the device has left to write, from its own account: an emulated card's
    /// endurance less what it wrote, or SMART's bytes written extrapolated to 100% of the
    /// rated endurance. None when it does not say (an eMMC's estimate is in 10% steps of an
    /// endurance it does not state in bytes).
    pub fn remaining_endurance(&self) -> Option<Endurance> {
        if let Some(e) = &self.emulated {
            return Some(Endurance {
                remaining_bytes: e.endurance_bytes.saturating_sub(e.written_bytes),
                source: format!(
                    "the emulated card ({} before it wears out, {} written)",
                    sinkrate_units::product::bytes_si(e.endurance_bytes),
                    sinkrate_units::product::bytes_si(e.written_bytes)
                ),
            });
        }
        let s = self.smart.as_ref()?;
        let (used, written) = (s.percentage_used?, s.written_bytes?);
        if used == 0 || written == 0 {
            return None;
        }
        let rated = written as f64 * 100.0 / f64::from(used);
        Some(Endurance {
            remaining_bytes: (rated - written as f64).max(0.0) as u64,
            source: format!(
                "SMART: {} written at {used}% of the rated endurance, so about {} rated in all",
                sinkrate_units::product::bytes_si(written),
                sinkrate_units::product::bytes_si(rated as u64)
            ),
        })
    }
}

/// An emulated card's wear, as its device model counts it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmulatedWear {
    /// The bytes it takes before it wears out (`--wear-out BYTES`).
    pub endurance_bytes: u64,
    /// `read-only`, `errors` or `stale`.
    pub mode: String,
    /// Written since it was made ready.
    pub written_bytes: u64,
    pub worn_out: bool,
    /// When it wore out: milliseconds after it was made ready, and what it had written.
    pub worn_out_at_ms: Option<u64>,
    pub worn_out_after_bytes: Option<u64>,
}

/// Bytes a device can still take before its rated end, and where the figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endurance {
    pub remaining_bytes: u64,
    pub source: String,
}

/// How long the device lasts at a recording's measured device write rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lifetime {
    /// Bytes the device wrote per hour of recording (its own count, so the filesystem's
    /// journal and metadata are in it).
    pub device_bytes_per_hour: f64,
    /// The duty cycle assumed.
    pub hours_per_day: f64,
    pub device_bytes_per_day: f64,
    /// The device's bytes over the recorder's: what the filesystem and the device add.
    pub write_amplification: Option<f64>,
    pub endurance: Option<Endurance>,
    /// Days until the endurance is used up at this rate; None without an endurance.
    pub days: Option<f64>,
}

impl Lifetime {
    /// The estimate from a recording's figures.
    pub fn estimate(
        device_bytes: u64,
        app_bytes: u64,
        recording_s: f64,
        hours_per_day: f64,
        endurance: Option<Endurance>,
    ) -> Option<Lifetime> {
        if recording_s <= 0.0 || device_bytes == 0 {
            return None;
        }
        let per_hour = device_bytes as f64 / recording_s * 3600.0;
        let per_day = per_hour * hours_per_day;
        let days = endurance
            .as_ref()
            .map(|e| e.remaining_bytes as f64 / per_day.max(1.0));
        Some(Lifetime {
            device_bytes_per_hour: per_hour,
            hours_per_day,
            device_bytes_per_day: per_day,
            write_amplification: (app_bytes > 0).then(|| device_bytes as f64 / app_bytes as f64),
            endurance,
            days,
        })
    }

    /// One line for a person: the time, or what is missing for it.
    pub fn line(&self) -> String {
        let per_day = format!(
            "{} a day written to the device at {} h of recording a day",
            sinkrate_units::product::bytes_si(self.device_bytes_per_day as u64),
            trim_float(self.hours_per_day)
        );
        match (&self.endurance, self.days) {
            (Some(e), _) if e.remaining_bytes == 0 => format!(
                "none left: the endurance is used up ({per_day}; endurance from {})",
                e.source
            ),
            (Some(e), Some(days)) => format!(
                "{} at this recording ({per_day}; endurance from {})",
                duration_words(days),
                e.source
            ),
            _ => format!(
                "unknown: {per_day}; give --endurance (the card's rated bytes written, e.g. 40TB, or hours of video at a bitrate as cards are rated, e.g. 20000h@26M) to turn it into time"
            ),
        }
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// "2.3 years", "5 months", "12 days", "3.5 hours".
pub fn duration_words(days: f64) -> String {
    if days >= 365.0 {
        format!("{:.1} years", days / 365.25)
    } else if days >= 60.0 {
        format!("{:.0} months", days / 30.44)
    } else if days >= 2.0 {
        format!("{days:.0} days")
    } else if days * 24.0 >= 1.0 {
        format!("{:.1} hours", days * 24.0)
    } else if days * 24.0 * 60.0 >= 1.0 {
        format!("{:.0} minutes", days * 24.0 * 60.0)
    } else {
        format!("{:.0} seconds", days * 86400.0)
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

    /// The classes claimed, as the SD class table names them: `C10`, `U3`, `V30`, `A1`.
    pub fn class_names(&self) -> Vec<String> {
        [
            ("C", self.speed_class),
            ("U", self.uhs_grade),
            ("V", self.video_class),
            ("A", self.app_class),
        ]
        .into_iter()
        .filter_map(|(family, n)| n.filter(|n| *n > 0).map(|n| format!("{family}{n}")))
        .collect()
    }

    /// The classes in the form printed on the card: `Class 10, U3, V30, A1`.
    pub fn label(&self) -> String {
        let parts: Vec<String> = self
            .class_names()
            .into_iter()
            .map(|n| match n.strip_prefix('C') {
                Some(speed) => format!("Class {speed}"),
                None => n,
            })
            .collect();
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
    /// The state in words, as the register's documentation names it.
    pub fn name(self) -> &'static str {
        match self {
            PreEol::NotDefined => "not defined",
            PreEol::Normal => "normal",
            PreEol::Warning => "warning",
            PreEol::Urgent => "urgent",
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_is_the_endurance_over_the_bytes_a_day() {
        // 1 MB/s for an hour of recording, 12 hours a day, 43.2 GB of endurance left.
        let e = Endurance {
            remaining_bytes: 43_200_000_000,
            source: "given".into(),
        };
        let l = Lifetime::estimate(3_600_000_000, 3_000_000_000, 3600.0, 12.0, Some(e)).unwrap();
        assert_eq!(l.device_bytes_per_day, 43_200_000_000.0);
        assert_eq!(l.days, Some(1.0));
        assert_eq!(l.write_amplification, Some(1.2));
        assert!(
            l.line().starts_with("24.0 hours at this recording"),
            "{}",
            l.line()
        );
        let l = Lifetime::estimate(3_600_000_000, 0, 3600.0, 24.0, None).unwrap();
        assert!(l.line().contains("86.4 GB a day") && l.line().contains("give --endurance"));
        assert_eq!(duration_words(900.0), "2.5 years");
    }

    #[test]
    fn smart_and_emulated_cards_say_what_they_have_left() {
        let smart = CardHealth {
            smart: Some(SmartHealth {
                percentage_used: Some(25),
                written_bytes: Some(10_000_000_000_000),
                ..SmartHealth::default()
            }),
            ..CardHealth::default()
        };
        let e = smart.remaining_endurance().unwrap();
        assert_eq!(e.remaining_bytes, 30_000_000_000_000);
        assert!(e.source.contains("about 40.0 TB rated"), "{}", e.source);
        let emulated = CardHealth {
            emulated: Some(EmulatedWear {
                endurance_bytes: 3_000_000_000,
                written_bytes: 1_000_000_000,
                ..EmulatedWear::default()
            }),
            ..CardHealth::default()
        };
        assert_eq!(
            emulated.remaining_endurance().unwrap().remaining_bytes,
            2_000_000_000
        );
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
