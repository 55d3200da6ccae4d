//! What to record: streams, capture pools, write strategy; and the built-in profiles.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkrate_jobspec::units::split_number;

use crate::frames::FrameSizes;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    pub fps: f64,
    pub sizes: FrameSizes,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// write(2) into the page cache.
    Buffered,
    /// O_DIRECT from aligned buffers; the sub-block tail of each frame is carried into the
    /// next write, and the last one is written through the page cache at close.
    Direct,
    /// O_DSYNC: each write returns once on the device.
    Dsync,
    /// O_DIRECT writes queued on io_uring: each frame is copied into one of `queue_depth`
    /// aligned staging buffers and its capture buffer goes back to the pool at once, so up to
    /// `queue_depth` frames are in flight while the writer takes the next.
    Uring,
    /// No I/O at all: measures the emulator itself (schedule, pools, hand-over).
    Null,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PreallocMode {
    /// fallocate(FALLOC_FL_KEEP_SIZE): blocks reserved, size unchanged.
    Fallocate,
    /// ftruncate to the size: a sparse file of that length, nothing allocated.
    Ftruncate,
    /// Write zeros up to the size first (seed 002's pregrowing), then overwrite in place.
    Pregrow,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordConfig {
    #[serde(serialize_with = "sinkrate_model::paths::lossy")]
    pub dir: PathBuf,
    pub streams: Vec<StreamSpec>,
    /// Capture buffers per stream (a V4L2 queue holds 4).
    pub buffers: usize,
    pub write_mode: WriteMode,
    /// Frames in flight at once in io_uring mode.
    pub queue_depth: usize,
    /// One writer thread for every stream (as a recorder with one storage thread has),
    /// instead of one per stream.
    pub shared_writer: bool,
    /// Bytes per write call (None: the whole frame in one call).
    pub write_size: Option<u64>,
    pub fdatasync_every_frames: Option<u64>,
    #[serde(
        rename = "fdatasync_every_s",
        alias = "fdatasync_every",
        with = "sinkrate_model::units::opt_seconds",
        default
    )]
    pub fdatasync_every: Option<Duration>,
    /// Preallocate each file (each segment) to this many bytes, the way `prealloc_mode` says.
    pub preallocate: Option<u64>,
    pub prealloc_mode: PreallocMode,
    #[serde(
        rename = "duration_s",
        alias = "duration",
        with = "sinkrate_model::units::seconds"
    )]
    pub duration: Duration,
    /// Write calls slower than this are listed as stalls.
    #[serde(
        rename = "stall_threshold_s",
        alias = "stall_threshold",
        with = "sinkrate_model::units::seconds"
    )]
    pub stall_threshold: Duration,
    pub seed: u64,
    /// Keep the recorded files.
    pub keep: bool,
    /// Keep one record per frame (for --frames-log).
    pub frame_records: bool,
    pub segments: crate::segments::SegmentPolicy,
    /// Cut an emulated card's power this far into the run (frames then carry headers).
    #[serde(
        rename = "power_cut_at_s",
        with = "sinkrate_model::units::opt_seconds",
        default
    )]
    pub power_cut_at: Option<Duration>,
    /// Tells this run's frame headers from any other's (set by the session).
    #[serde(skip)]
    pub run_tag: u64,
}

/// Custom streams in words: "2 stream(s) x 30 fps".
pub fn streams_label(streams: &[StreamSpec]) -> String {
    format!(
        "{} stream(s) x {} fps",
        streams.len(),
        streams.first().map_or(0.0, |s| s.fps)
    )
}

impl RecordConfig {
    /// Bytes per second the streams produce.
    pub fn requested_bytes_per_s(&self) -> f64 {
        self.streams
            .iter()
            .map(|s| s.sizes.mean_bytes() * s.fps)
            .sum()
    }
}

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
            fps,
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
                    fps: 30.0,
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
        let rate: f64 = streams.iter().map(|s| s.sizes.mean_bytes() * s.fps).sum();
        assert!((rate - 3_000_000.0).abs() < 1.0, "{rate}");
        let raw = (super::profile("raw12-1920x1208-30").expect("raw").streams)();
        assert_eq!(raw[0].sizes.mean_bytes(), 3_479_040.0);
        assert!(super::profile("8k")
            .err()
            .is_some_and(|e| e.contains("dual-1080p30")));
    }
}

/// Parses a bitrate in bits per second with SI prefixes: `12M`, `12Mbit`, `12 Mbit/s`,
/// `800k`, `50000000`.
pub fn parse_bitrate(text: &str) -> Result<u64, String> {
    let (value, suffix) = split_number(text)
        .ok_or_else(|| format!("'{text}' is not a bitrate (expected e.g. 12M for 12 Mbit/s)"))?;
    let unit = suffix
        .trim()
        .trim_end_matches("/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit");
    let multiplier = match unit.trim() {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        other => {
            return Err(format!(
                "'{text}': unknown prefix '{other}' (accepted: k, M, G; bits, SI)"
            ))
        }
    };
    let bits = value * multiplier;
    if !(1.0..1e12).contains(&bits) {
        return Err(format!("'{text}' is out of range (1 bit/s to 1 Tbit/s)"));
    }
    Ok(bits.round() as u64)
}

#[cfg(test)]
mod bitrate_tests {
    #[test]
    fn bitrates() {
        assert_eq!(super::parse_bitrate("12M"), Ok(12_000_000));
        assert_eq!(super::parse_bitrate("12Mbit/s"), Ok(12_000_000));
        assert_eq!(super::parse_bitrate("800k"), Ok(800_000));
        assert_eq!(super::parse_bitrate("1.5Gbps"), Ok(1_500_000_000));
        for bad in ["", "fast", "0", "-3M", "12X"] {
            assert!(super::parse_bitrate(bad).is_err(), "{bad}");
        }
    }
}
