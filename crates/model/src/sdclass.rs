//! The SD Association's performance classes, the one table of them (what each promises and
//! how the SD Physical Layer Simplified Specification 4.10, section 4.13, measures it), and
//! the result of `sinkrate verify --class`: a card's claim checked by that method.

use serde::{Deserialize, Serialize};

/// Which family a class belongs to: the number printed in a C, a U, a V or an A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassFamily {
    /// Speed Class 2, 4, 6, 10 (section 4.13.1).
    Speed,
    /// UHS Speed Grade U1, U3 (section 4.13.3).
    Uhs,
    /// Video Speed Class V6 to V90.
    Video,
    /// Application Performance Class A1, A2: random 4 KiB IOPS besides a sequential rate.
    App,
}

/// One class: its name as printed on a card, what it promises and how it is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SdClass {
    pub name: &'static str,
    pub family: ClassFamily,
    /// The minimum sequential write (Pw) the class promises, bytes/s (the SD Association's
    /// MB/s are 10^6 bytes).
    pub min_write_bytes_per_s: f64,
    /// The recording unit the class is measured in (Table 4-56; 512 KB for Class 10 and every
    /// UHS and video class; 32 KB for Class 2 and 4 on cards from 512 MB to 32 GB).
    pub ru_bytes: u64,
    /// A1/A2: random 4 KiB reads and writes per second, at least.
    pub random_iops: Option<(u32, u32)>,
}

const KIB: u64 = 1024;

/// Every class, lowest promise first within a family. A new class is one line here.
pub const CLASSES: &[SdClass] = &[
    SdClass {
        name: "C2",
        family: ClassFamily::Speed,
        min_write_bytes_per_s: 2e6,
        ru_bytes: 32 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "C4",
        family: ClassFamily::Speed,
        min_write_bytes_per_s: 4e6,
        ru_bytes: 32 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "C6",
        family: ClassFamily::Speed,
        min_write_bytes_per_s: 6e6,
        ru_bytes: 64 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "C10",
        family: ClassFamily::Speed,
        min_write_bytes_per_s: 10e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "U1",
        family: ClassFamily::Uhs,
        min_write_bytes_per_s: 10e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "U3",
        family: ClassFamily::Uhs,
        min_write_bytes_per_s: 30e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "V6",
        family: ClassFamily::Video,
        min_write_bytes_per_s: 6e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "V10",
        family: ClassFamily::Video,
        min_write_bytes_per_s: 10e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "V30",
        family: ClassFamily::Video,
        min_write_bytes_per_s: 30e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "V60",
        family: ClassFamily::Video,
        min_write_bytes_per_s: 60e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "V90",
        family: ClassFamily::Video,
        min_write_bytes_per_s: 90e6,
        ru_bytes: 512 * KIB,
        random_iops: None,
    },
    SdClass {
        name: "A1",
        family: ClassFamily::App,
        min_write_bytes_per_s: 10e6,
        ru_bytes: 512 * KIB,
        random_iops: Some((1500, 500)),
    },
    SdClass {
        name: "A2",
        family: ClassFamily::App,
        min_write_bytes_per_s: 10e6,
        ru_bytes: 512 * KIB,
        random_iops: Some((4000, 2000)),
    },
];

/// Each write's busy time at most (Table 4-60: "each write busy shall be less than or equal
/// to 250ms").
pub const MAX_WRITE_BUSY_NS: u64 = 250_000_000;
/// A FAT update cycle at most (TFW(max), equation 5).
pub const MAX_FAT_UPDATE_NS: u64 = 750_000_000;
/// The preparation a card may take at the start of a recording (section 4.13.3.4).
pub const MAX_PREPARATION_NS: u64 = 1_000_000_000;
/// Of this many consecutive FAT update cycles, one at most may take long (TFW(max) "should
/// not appear more than once" in 8 cycles).
pub const FAT_CYCLES_WINDOW: usize = 8;
/// Pw of a card whose AU is larger is measured in units of this size (Table 4-60).
pub const PW_UNIT_BYTES: u64 = 4 << 20;

impl SdClass {
    /// The class named `text`: `V30`, `v30`, `C10`, `Class 10`, `class10`, `U3`, `A1`.
    pub fn parse(text: &str) -> Result<&'static SdClass, String> {
        let squeezed: String = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_uppercase();
        let name = squeezed
            .strip_prefix("CLASS")
            .map(|n| format!("C{n}"))
            .unwrap_or(squeezed);
        CLASSES.iter().find(|c| c.name == name).ok_or_else(|| {
            format!(
                "{text}: not an SD class (accepted: {})",
                CLASSES
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The classes of one family, lowest first.
    pub fn of_family(family: ClassFamily) -> impl Iterator<Item = &'static SdClass> {
        CLASSES.iter().filter(move |c| c.family == family)
    }

    /// The lowest video speed class whose guaranteed rate carries `bytes_per_s` with a tenth
    /// to spare (a filesystem's own writes take some of a card's rate).
    pub fn video_class_for(bytes_per_s: f64) -> Option<&'static SdClass> {
        Self::of_family(ClassFamily::Video).find(|c| c.min_write_bytes_per_s >= bytes_per_s * 1.1)
    }
}

/// Where the class judged against came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimSource {
    /// The card's own SD Status register (the kernel's `ssr`).
    Card,
    /// Named on the command line.
    Given,
    /// Neither: Class 10, the class most cards claim, assumed and said.
    Assumed,
}

/// One pass of sequential RU writes through the AUs of the test area.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassPass {
    /// The recording unit written, bytes.
    pub ru_bytes: u64,
    /// RU writes made (the first, the preparation, included).
    pub writes: u64,
    /// The first write's time: the card's preparation for a recording, judged against 1 s.
    pub preparation_ns: u64,
    /// Pw: the lowest average write rate over one 4 MiB unit (its RU writes back to back), bytes/s.
    pub min_unit_bytes_per_s: f64,
    /// The average over the whole pass, bytes/s.
    pub mean_bytes_per_s: f64,
    /// The longest RU write after the first, ns.
    pub worst_write_ns: u64,
    /// RU writes after the first that took longer than 250 ms.
    pub writes_over_busy_limit: u64,
    /// FAT update cycles made (one after each AU: a 16 KiB FAT, a 4 KiB bitmap and a 4 KiB
    /// directory entry written to the card, then synced).
    pub fat_cycles: u64,
    /// The longest FAT update cycle, ns.
    pub worst_fat_ns: u64,
    /// The highest average over 8 consecutive cycles (TFW(ave)), ns.
    pub worst_fat_mean8_ns: u64,
    /// The most cycles over 250 ms found in any 8 consecutive ones.
    pub long_fat_cycles_in_8: u64,
}

/// Random 4 KiB I/O for the application classes, one at a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RandomIops {
    pub read_iops: f64,
    pub write_iops: f64,
    /// Seconds each of reading and writing lasted.
    pub seconds: f64,
}

/// One class judged: met, or not and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassVerdict {
    pub class: String,
    pub met: bool,
    /// Why it was not met, each with its figure ("41 of 512 RU writes took over 250 ms
    /// (worst 610 ms)"); empty when met.
    pub reasons: Vec<String>,
}

/// `sinkrate verify --class`: the card's claimed class checked by the specification's method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassReport {
    /// The directory the test files were written in.
    pub target: String,
    /// The class judged against, and where it came from.
    pub claim: Option<String>,
    pub claim_source: Option<ClaimSource>,
    /// Every class the card claims in its SD Status register, as printed on a card.
    pub card_classes: Option<String>,
    /// The allocation unit, bytes, and whether the card said it (else 4 MiB is assumed).
    pub au_bytes: u64,
    pub au_from_card: bool,
    /// O_DIRECT (each write's time is the card's busy), or buffered with fdatasync after
    /// each write where the filesystem refuses O_DIRECT.
    pub direct: bool,
    pub passes: Vec<ClassPass>,
    pub random: Option<RandomIops>,
    /// Every class of the families judged, lowest first.
    pub classes: Vec<ClassVerdict>,
    /// The highest class met of each family judged (`C10`, `U1`, `V10`).
    pub highest_met: Vec<String>,
    /// The stream the card must carry and the video class it needs.
    pub stream: Option<String>,
    pub stream_bytes_per_s: Option<f64>,
    pub stream_needs: Option<String>,
    /// Whether the claim was met, and whether the stream's class was.
    pub claim_met: Option<bool>,
    pub stream_met: Option<bool>,
    pub verdict_text: String,
    /// Bytes this run wrote, and what the card's device counted in the same time
    /// (diskstats; other writers to the device count too). None without a block device.
    pub written_bytes: u64,
    pub device_written_bytes: Option<u64>,
    pub seconds: f64,
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_named_as_cards_print_them() {
        assert_eq!(SdClass::parse("v30").map(|c| c.name), Ok("V30"));
        assert_eq!(SdClass::parse("Class 10").map(|c| c.name), Ok("C10"));
        assert_eq!(SdClass::parse("class4").map(|c| c.name), Ok("C4"));
        let err = SdClass::parse("V45").expect_err("no V45");
        assert!(err.contains("accepted: C2, C4"), "{err}");
    }

    #[test]
    fn a_stream_gets_the_lowest_video_class_with_a_tenth_to_spare() {
        assert_eq!(SdClass::video_class_for(3e6).map(|c| c.name), Some("V6"));
        assert_eq!(SdClass::video_class_for(9.5e6).map(|c| c.name), Some("V30"));
        assert_eq!(SdClass::video_class_for(100e6), None);
    }
}
