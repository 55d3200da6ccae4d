//! Presets for common storage, each with where its figures come from. Rates are sustained
//! sequential write rates in bytes per second (1000-based, as cards are labelled).

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub name: &'static str,
    pub write_bytes_per_s: u64,
    pub write_latency: Duration,
    pub source: &'static str,
}

pub const MODELS: &[Model] = &[
    Model {
        name: "sd-class10",
        write_bytes_per_s: 10_000_000,
        write_latency: Duration::from_millis(2),
        source: "SD Association speed class 10 (C10): a minimum sustained sequential write of 10 MB/s",
    },
    Model {
        name: "sd-uhs1-u3",
        write_bytes_per_s: 30_000_000,
        write_latency: Duration::from_millis(1),
        source: "SD Association UHS speed class 3 (U3): a minimum sustained sequential write of 30 MB/s",
    },
    Model {
        name: "usb2-stick",
        write_bytes_per_s: 30_000_000,
        write_latency: Duration::from_millis(5),
        source: "USB 2.0 high speed signals 480 Mbit/s; bulk transfers reach about 30-35 MB/s in practice, and cheap sticks add milliseconds per write",
    },
    Model {
        name: "usb3-ssd",
        write_bytes_per_s: 380_000_000,
        write_latency: Duration::ZERO,
        source: "seed 000 (NVIDIA DRIVE guide): a USB 3 SSD measured 382-396 MB/s with direct 9 MB writes",
    },
    Model {
        name: "emmc",
        write_bytes_per_s: 100_000_000,
        write_latency: Duration::from_micros(500),
        source: "typical eMMC 5.1 parts on embedded boards: about 100 MB/s sequential write",
    },
];

pub fn find(name: &str) -> Result<&'static Model, String> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        format!(
            "--model: '{name}' is not a model (accepted: {})",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn presets_are_found_and_unknown_ones_listed() {
        assert_eq!(
            super::find("sd-class10").map(|m| m.write_bytes_per_s),
            Ok(10_000_000)
        );
        assert!(super::find("floppy").unwrap_err().contains("usb3-ssd"));
    }
}
