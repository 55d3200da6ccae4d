//! Sizes, rates and latencies in dd's convention, as sinkrate uses them outside fio job
//! options: `20M` is 20 MiB (1024-based), `20MB` is 20 MB (1000-based), `20MiB` is 20 MiB.

use std::time::Duration;

use crate::fio::split_number;

/// Parses `512`, `64K`, `4G`, `20MB`, `1.5GiB` into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (value, suffix) = split_number(text).ok_or_else(|| format!("'{text}' is not a size (expected a number with K, M, G, T (1024-based) or KB, MB, GB, TB (1000-based), e.g. 4G)"))?;
    let multiplier: f64 = match suffix.trim() {
        "" | "B" | "c" => 1.0,
        "K" | "k" | "KiB" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024.0f64.powi(4),
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}' (accepted: K, M, G, T = 1024-based; KB, MB, GB, TB = 1000-based)"
            ))
        }
    };
    let bytes = value * multiplier;
    if bytes < 1.0 {
        return Err(format!(
            "'{text}' is out of range (expected at least 1 byte)"
        ));
    }
    // u64::MAX as f64 rounds up to 2^64, which does not fit.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!(
            "'{text}' is too large (a size is less than 16 EiB)"
        ));
    }
    Ok(bytes.round() as u64)
}

/// Parses a rate in bytes per second: `20M`, `20MB`, `20MB/s`, `380MiB/s`.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let body = t.strip_suffix("/s").unwrap_or(t);
    parse_size(body).map_err(|e| {
        e.replace("is not a size", "is not a rate")
            .replace("e.g. 4G", "e.g. 20M or 20MB/s")
    })
}

/// Parses a latency: `2ms`, `500us`, `0.01s`, `0`.
pub fn parse_latency(text: &str) -> Result<Duration, String> {
    let (value, suffix) = split_number(text)
        .ok_or_else(|| format!("'{text}' is not a latency (expected e.g. 2ms, 500us, 0.01s)"))?;
    let seconds = match suffix.trim() {
        "" if value == 0.0 => 0.0,
        "s" => value,
        "ms" => value / 1e3,
        "us" => value / 1e6,
        "" => return Err(format!("'{text}' needs a unit (ms, us or s), e.g. 2ms")),
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}' (accepted: s, ms, us)"
            ))
        }
    };
    if !(0.0..=60.0).contains(&seconds) {
        return Err(format!("'{text}' is out of range (0 to 60 s)"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_convention() {
        assert_eq!(parse_size("20M"), Ok(20 << 20));
        assert_eq!(parse_size("20MB"), Ok(20_000_000));
        assert_eq!(parse_size("20MiB"), Ok(20 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_rate("380MB/s"), Ok(380_000_000));
        assert_eq!(parse_rate("10M"), Ok(10 << 20));
        for bad in ["", "M", "-1G", "0", "4X", "4 parsecs"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_rate("fast").unwrap_err().contains("is not a rate"));
    }

    #[test]
    fn latencies() {
        assert_eq!(parse_latency("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_latency("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_latency("0"), Ok(Duration::ZERO));
        assert!(parse_latency("2").is_err());
        assert!(parse_latency("2h").is_err());
        assert!(parse_latency("100s").is_err());
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

/// Milliseconds from nanoseconds, unrounded, for a figure kept or drawn in ms.
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// A time as the product prints it in a table: milliseconds, one decimal (`12.3 ms`), or
/// `-` for none.
pub fn ms_text(ns: Option<u64>) -> String {
    ns.map(|v| format!("{:.1} ms", ns_to_ms(v)))
        .unwrap_or_else(|| "-".into())
}

/// A figure already in milliseconds as a table's column under an "ms" heading: one
/// decimal, or `-` for none.
pub fn ms_column(ms: Option<f64>) -> String {
    ms.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

/// A rate as the product prints it for a person: megabytes (1000-based) a second, one
/// decimal (`20.0 MB/s`).
pub fn mb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1} MB/s", bytes_per_s / 1e6)
}

/// A size as the product prints a device's: gibibytes, two decimals (`1.00 GiB`).
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// An amount written as the product prints it for a person: kilobytes below a megabyte, then
/// megabytes, gigabytes or terabytes (1000-based) as they grow (`33 kB`, `64 MB`, `3.1 GB`,
/// `40.0 TB`).
pub fn bytes_si(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes > 0 && b < 1e6 {
        format!("{:.0} kB", b / 1e3)
    } else if b >= 1e12 {
        format!("{:.1} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else {
        format!("{:.0} MB", b / 1e6)
    }
}

/// A size as verify prints blocks and offsets (powers of two): gibibytes with two decimals,
/// mebibytes with one, else kibibytes (`1.00 GiB`, `4.0 MiB`, `64 KiB`).
pub fn bytes_binary(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match n {
        n if n >= GIB => format!("{:.2} GiB", n as f64 / GIB as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n => format!("{:.0} KiB", n as f64 / KIB as f64),
    }
}

/// A moment in a recording as the product prints it: HH:MM:SS, whole seconds (a negative
/// time as zero; the hours grow past two digits for runs of days).
pub fn hh_mm_ss(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// As [`hh_mm_ss`] with the hours unpadded (H:MM:SS), for a table's columns of windows.
pub fn h_mm_ss(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod format_tests {
    #[test]
    fn moments_print_as_clock_times() {
        use super::{h_mm_ss, hh_mm_ss};
        assert_eq!(hh_mm_ss(873.9), "00:14:33");
        assert_eq!(hh_mm_ss(-1.0), "00:00:00");
        assert_eq!(hh_mm_ss(100.0 * 3600.0 + 61.0), "100:01:01");
        assert_eq!(h_mm_ss(7200.0), "2:00:00");
        assert_eq!(h_mm_ss(59.99), "0:00:59");
    }

    #[test]
    fn rates_and_sizes_print_as_the_product_prints_them() {
        assert_eq!(super::mb_per_s(20e6), "20.0 MB/s");
        assert_eq!(super::mb_per_s(3_416_000.0), "3.4 MB/s");
        assert_eq!(super::gib(1 << 30), "1.00 GiB");
        assert_eq!(super::bytes_si(64_000_000), "64 MB");
        assert_eq!(super::bytes_si(3_100_000_000), "3.1 GB");
        assert_eq!(super::bytes_si(40_000_000_000_000), "40.0 TB");
        assert_eq!(super::bytes_si(33_333), "33 kB");
        assert_eq!(super::bytes_si(0), "0 MB");
    }

    #[test]
    fn times_print_in_milliseconds_with_a_dash_for_none() {
        assert_eq!(super::ns_to_ms(1_250_000), 1.25);
        assert_eq!(super::ms_text(Some(12_345_678)), "12.3 ms");
        assert_eq!(super::ms_text(None), "-");
        assert_eq!(super::ms_column(Some(0.96)), "1.0");
        assert_eq!(super::ms_column(None), "-");
    }
}
