//! What to record: streams, capture pools, write strategy; and the built-in profiles.

use std::time::Duration;

use sinkrate_model::record::FrameSizes;
use sinkrate_model::record::StreamSpec;

pub struct Profile {
    pub name: &'static str,
    pub about: &'static str,
    pub streams: fn() -> Vec<StreamSpec>,
    pub fdatasync_every: Option<Duration>,
}

fn h264(name: &str, bits: u64, fps: f64) -> StreamSpec {
    StreamSpec {
        name: name.into(),
        fps,
        sizes: FrameSizes::Bitrate {
            bits_per_s: bits,
            gop: fps.round() as u32,
            i_to_p: 8.0,
            jitter: 0.2,
        },
    }
}

pub const PROFILES: &[Profile] = &[
    Profile {
        name: "1080p30-h264",
        about: "one 1080p30 H.264 stream, ~12 Mbit/s, an I-frame a second",
        streams: || vec![h264("cam0", 12_000_000, 30.0)],
        fdatasync_every: None,
    },
    Profile {
        name: "4k30-h265",
        about: "one 4K30 H.265 stream, ~50 Mbit/s",
        streams: || vec![h264("cam0", 50_000_000, 30.0)],
        fdatasync_every: None,
    },
    Profile {
        name: "dual-1080p30",
        about: "two 1080p30 H.264 streams (seed 001: a dual-camera recorder on an SD card)",
        streams: || {
            vec![
                h264("cam0", 12_000_000, 30.0),
                h264("cam1", 12_000_000, 30.0),
            ]
        },
        fdatasync_every: None,
    },
    Profile {
        name: "raw12-1920x1208-30",
        about: "seed 000's camera: raw 12-bit 1920x1208 at 30 fps, 3.48 MB a frame",
        streams: || {
            vec![StreamSpec {
                name: "cam0".into(),
                fps: 30.0,
                sizes: FrameSizes::Fixed {
                    bytes: 1920 * 1208 * 12 / 8,
                },
            }]
        },
        fdatasync_every: None,
    },
    Profile {
        name: "mjpeg-1080p30",
        about: "seed 004's MJPEG capture: ~38 Mbit/s, every frame intra",
        streams: || {
            vec![StreamSpec {
                name: "cam0".into(),
                fps: 30.0,
                sizes: FrameSizes::Bitrate {
                    bits_per_s: 38_000_000,
                    gop: 1,
                    i_to_p: 1.0,
                    jitter: 0.1,
                },
            }]
        },
        fdatasync_every: None,
    },
    Profile {
        name: "imu-1khz",
        about: "an IMU logger: 64-byte records at 1 kHz, fdatasync every second",
        streams: || {
            vec![StreamSpec {
                name: "imu".into(),
                fps: 1000.0,
                sizes: FrameSizes::Fixed { bytes: 64 },
            }]
        },
        fdatasync_every: Some(Duration::from_secs(1)),
    },
];

pub fn profile(name: &str) -> Result<&'static Profile, String> {
    PROFILES.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        format!(
            "--profile: '{name}' is not a profile (accepted: {})",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn profiles_have_the_documented_rates() {
        let dual = super::profile("dual-1080p30").expect("dual");
        let streams = (dual.streams)();
        let rate: f64 = streams.iter().map(super::StreamSpec::bytes_per_s).sum();
        assert!((rate - 3_000_000.0).abs() < 1.0, "{rate}");
        let raw = (super::profile("raw12-1920x1208-30").expect("raw").streams)();
        assert_eq!(raw[0].mean_frame_bytes(), 3_479_040.0);
        assert!(super::profile("8k")
            .err()
            .is_some_and(|e| e.contains("dual-1080p30")));
    }
}

#[cfg(test)]
mod bitrate_tests {
    #[test]
    fn bitrates() {
        assert_eq!(
            sinkrate_units::product::parse_bitrate("12M"),
            Ok(12_000_000)
        );
        assert_eq!(
            sinkrate_units::product::parse_bitrate("12Mbit/s"),
            Ok(12_000_000)
        );
        assert_eq!(sinkrate_units::product::parse_bitrate("800k"), Ok(800_000));
        assert_eq!(
            sinkrate_units::product::parse_bitrate("1.5Gbps"),
            Ok(1_500_000_000)
        );
        for bad in ["", "fast", "0", "-3M", "12X"] {
            assert!(
                sinkrate_units::product::parse_bitrate(bad).is_err(),
                "{bad}"
            );
        }
    }
}
