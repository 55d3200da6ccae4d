//! Value parsers with fio's conventions: sizes with `kb_base`, times with a default unit,
//! percentages, booleans.

use std::time::Duration;

/// How unit prefixes in sizes are read (fio's `kb_base`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KbBase {
    /// fio's default "compatibility mode": `k`/`kb` are 1024, `kib` is 1000.
    #[default]
    Compat1024,
    /// `kb_base=1000`: `k`/`kb` are 1000, `kib` is 1024 (SI/IEC).
    Si1000,
}

/// Splits `12.5Mbit` into its number (`12.5`) and what follows it (`Mbit`), for every parser
/// of a number with a unit. `None` when there is no number in front.
pub fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// Parses a size like `4k`, `1g`, `512`, `0x1000`, `1.5m` into bytes.
pub fn parse_size(text: &str, kb_base: KbBase) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty size (expected a number with an optional k/m/g/t/p suffix)".into());
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16)
            .map_err(|_| format!("'{t}' is not a hexadecimal size"));
    }
    let (value, suffix) = split_number(t).ok_or_else(|| {
        format!("'{t}' is not a size (expected a number with an optional k/m/g/t/p suffix, e.g. 4k, 1g)")
    })?;
    let multiplier = size_multiplier(suffix, kb_base).ok_or_else(|| {
        format!("'{t}': unknown size suffix '{suffix}' (accepted: k, m, g, t, p, with optional b or ib)")
    })?;
    let bytes = value * multiplier as f64;
    // u64::MAX as f64 rounds up to 2^64 (16E), which does not fit.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("'{t}' is too large (a size is less than 16 EiB)"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a size as fio's job files are read: like [`parse_size`], except that text after
/// the number that does not start with a letter or `%` is ignored, as fio's number parser
/// ignores it (`65536)` is 65536, `512/25` is 512). Returns the ignored text too, so that
/// the caller can say what was not read.
pub fn parse_size_as_fio(text: &str, kb_base: KbBase) -> Result<(u64, Option<String>), String> {
    let t = text.trim();
    if let Some((value, rest)) = split_number(t) {
        let ignored = rest
            .chars()
            .next()
            .is_some_and(|c| !c.is_ascii_alphabetic() && c != '%');
        let hex = t.starts_with("0x") || t.starts_with("0X");
        if ignored && !hex {
            if !value.is_finite() || value >= u64::MAX as f64 {
                return Err(format!("'{t}' is too large (a size is less than 16 EiB)"));
            }
            return Ok((value.round() as u64, Some(rest.to_string())));
        }
        // A unit ends at one of fio's separators (`1k:25` is 1k).
        if let Some(at) = rest.find([':', '-', ',', '/']).filter(|_| !hex) {
            let used = &t[..t.len() - rest.len() + at];
            return parse_size(used, kb_base).map(|bytes| (bytes, Some(rest[at..].to_string())));
        }
    }
    parse_size(t, kb_base).map(|bytes| (bytes, None))
}

fn size_multiplier(suffix: &str, kb_base: KbBase) -> Option<u64> {
    let s = suffix.trim().to_ascii_lowercase();
    if s.is_empty() || s == "b" {
        return Some(1);
    }
    let mut chars = s.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        'e' => 6,
        _ => return None,
    };
    let rest = chars.as_str();
    let iec = match rest {
        "" | "b" => false,
        "i" | "ib" => true,
        _ => return None,
    };
    // fio's compatibility mode reads the prefixes the other way round from the standards.
    let base: u64 = match (kb_base, iec) {
        (KbBase::Compat1024, false) | (KbBase::Si1000, true) => 1024,
        (KbBase::Compat1024, true) => 1000,
        (KbBase::Si1000, false) => 1000,
    };
    base.checked_pow(power)
}

/// The unit a bare number means for a time option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    Microseconds,
}

/// Parses a time like `10`, `10s`, `500ms`, `2m`, `1h`, `250us`.
pub fn parse_time(text: &str, default_unit: TimeUnit) -> Result<Duration, String> {
    let t = text.trim();
    let (value, suffix) = split_number(t).ok_or_else(|| {
        format!("'{t}' is not a time (expected a number with an optional suffix: ns, us, ms, s, m, h, d)")
    })?;
    let nanos_per_unit: f64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" => match default_unit {
            TimeUnit::Seconds => 1e9,
            TimeUnit::Milliseconds => 1e6,
            TimeUnit::Microseconds => 1e3,
        },
        "ns" | "nsec" => 1.0,
        "us" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        other => {
            return Err(format!(
                "'{t}': unknown time suffix '{other}' (accepted: ns, us, ms, s, m, h, d)"
            ))
        }
    };
    let nanos = value * nanos_per_unit;
    if !nanos.is_finite() || nanos > u64::MAX as f64 {
        return Err(format!("'{t}' is too long"));
    }
    Ok(Duration::from_nanos(nanos.round() as u64))
}

/// Parses a percentage `0..=100`, with or without a trailing `%`.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    let value: f64 = t
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage (expected 0 to 100)"))?;
    if !(0.0..=100.0).contains(&value) {
        return Err(format!("{value} is out of range (expected 0 to 100)"));
    }
    Ok(value)
}

/// Parses fio's booleans: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{text}' is not a boolean (expected 0 or 1)")),
    }
}

/// Parses a plain integer that fio allows size suffixes on (e.g. `iodepth=1k` is rare but legal).
pub fn parse_int(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    if t.starts_with('-') {
        return Err(format!("'{t}' is negative (expected a whole number >= 0)"));
    }
    parse_size(t, KbBase::Compat1024).map_err(|_| format!("'{t}' is not a whole number"))
}

/// Figures as fio prints them (the status line, bench's notes): 1024-based, with fio's
/// unit names and its precision.
/// Milliseconds from nanoseconds, rounded to the nearest as fio rounds a job's runtime.
pub fn ms_rounded(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

pub fn bytes_per_s_iec(v: f64) -> String {
    format!("{}/s", bytes_iec(v))
}

pub fn bytes_iec(v: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v;
    let mut i = 0;
    while x >= 1024.0 && i < UNITS.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{x:.0}{}", UNITS[i])
    } else if x < 10.0 {
        format!("{x:.2}{}", UNITS[i])
    } else if x < 100.0 {
        format!("{x:.1}{}", UNITS[i])
    } else {
        format!("{x:.0}{}", UNITS[i])
    }
}

pub fn count_si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_compat_mode() {
        let c = KbBase::Compat1024;
        assert_eq!(parse_size("4k", c), Ok(4096));
        assert_eq!(parse_size("4K", c), Ok(4096));
        assert_eq!(parse_size("4kb", c), Ok(4096));
        assert_eq!(parse_size("4KiB", c), Ok(4000));
        assert_eq!(parse_size("1m", c), Ok(1 << 20));
        assert_eq!(parse_size("1g", c), Ok(1 << 30));
        assert_eq!(parse_size("2t", c), Ok(2 << 40));
        assert_eq!(parse_size("512", c), Ok(512));
        assert_eq!(parse_size("0x1000", c), Ok(4096));
        assert_eq!(parse_size("1.5m", c), Ok(1_572_864));
        assert_eq!(parse_size("100b", c), Ok(100));
        // Found by fuzzing: a suffix starting with a multi-byte character.
        assert!(parse_size("4\u{29a}", c).is_err());
    }

    #[test]
    fn a_job_files_size_ignores_what_fio_ignores() {
        let c = KbBase::Compat1024;
        assert_eq!(
            parse_size_as_fio("65536)", c),
            Ok((65536, Some(")".to_string())))
        );
        assert_eq!(
            parse_size_as_fio("512/25", c),
            Ok((512, Some("/25".to_string())))
        );
        assert_eq!(parse_size_as_fio("4k", c), Ok((4096, None)));
        assert_eq!(
            parse_size_as_fio("1k:25:2k", c),
            Ok((1024, Some(":25:2k".to_string())))
        );
        assert_eq!(parse_size_as_fio("0x10", c), Ok((16, None)));
        // A letter fio does not know is still refused: a typo, not punctuation.
        assert!(parse_size_as_fio("4x", c).is_err());
        assert!(parse_size_as_fio(")", c).is_err());
    }

    #[test]
    fn sizes_follow_si_mode() {
        let s = KbBase::Si1000;
        assert_eq!(parse_size("4k", s), Ok(4000));
        assert_eq!(parse_size("4KiB", s), Ok(4096));
        assert_eq!(parse_size("1MB", s), Ok(1_000_000));
    }

    #[test]
    fn bad_sizes_say_what_is_accepted() {
        for bad in ["", "k", "4x", "4kx", "-1", "abc", "1..2k"] {
            let err = parse_size(bad, KbBase::Compat1024).expect_err(bad);
            assert!(!err.is_empty());
        }
        assert!(parse_size("4q", KbBase::Compat1024)
            .unwrap_err()
            .contains("accepted"));
        assert!(parse_size("99999999999p", KbBase::Compat1024).is_err());
    }

    #[test]
    fn times_use_the_default_unit_and_suffixes() {
        use TimeUnit::*;
        assert_eq!(parse_time("10", Seconds), Ok(Duration::from_secs(10)));
        assert_eq!(
            parse_time("10", Microseconds),
            Ok(Duration::from_micros(10))
        );
        assert_eq!(parse_time("500ms", Seconds), Ok(Duration::from_millis(500)));
        assert_eq!(parse_time("2m", Seconds), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h", Seconds), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("1d", Seconds), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_time("250us", Seconds), Ok(Duration::from_micros(250)));
        assert_eq!(parse_time("7ns", Seconds), Ok(Duration::from_nanos(7)));
        assert_eq!(parse_time("1.5s", Seconds), Ok(Duration::from_millis(1500)));
        assert!(parse_time("5y", Seconds).unwrap_err().contains("accepted"));
        assert!(parse_time("s", Seconds).is_err());
        assert!(parse_time("-3", Seconds).is_err());
    }

    #[test]
    fn percentages_and_booleans() {
        assert_eq!(parse_percent("70"), Ok(70.0));
        assert_eq!(parse_percent("70%"), Ok(70.0));
        assert!(parse_percent("150").is_err());
        assert!(parse_percent("-1").is_err());
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("off"), Ok(false));
        assert!(parse_bool("maybe").is_err());
        assert_eq!(parse_int("32"), Ok(32));
        assert_eq!(parse_int("1k"), Ok(1024));
        assert!(parse_int("-2").is_err());
    }
}
