//! Number formatting in fio's style.

/// fio's num2str: at most four significant digits before the unit (8192k, 31.5k, 512).
pub fn count(v: f64) -> String {
    let units = ["", "k", "M", "G", "T"];
    let mut x = v;
    let mut i = 0;
    while x >= 10_000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    if i == 0 {
        return format!("{}", x.round() as u64);
    }
    trimmed(x, units[i])
}

fn trimmed(x: f64, unit: &str) -> String {
    let digits = if x >= 1000.0 {
        0
    } else if x >= 100.0 {
        1
    } else if x >= 10.0 {
        2
    } else {
        3
    };
    let digits = digits.min(2);
    let s = format!("{x:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{unit}")
}

/// Bytes with IEC units and three significant digits: 64.0MiB, 31.2GiB, 512B.
pub fn iec(v: f64) -> String {
    scaled(v, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
}

/// Bytes with SI units: 67.1MB.
pub fn si(v: f64) -> String {
    scaled(v, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
}

fn scaled(v: f64, base: f64, units: &[&str]) -> String {
    let mut x = v;
    let mut i = 0;
    while x >= base && i < units.len() - 1 {
        x /= base;
        i += 1;
    }
    if i == 0 {
        format!("{}{}", x.round() as u64, units[0])
    } else if x >= 100.0 {
        format!("{x:.0}{}", units[i])
    } else if x >= 10.0 {
        format!("{x:.1}{}", units[i])
    } else {
        format!("{x:.2}{}", units[i])
    }
}

/// Milliseconds from nanoseconds, rounded as fio rounds runtimes.
pub fn ms(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_fio() {
        assert_eq!(count(8_192_000.0), "8192k");
        assert_eq!(count(31_500.0), "31.5k");
        assert_eq!(count(512.0), "512");
        assert_eq!(iec(67_108_864.0), "64.0MiB");
        assert_eq!(si(67_108_864.0), "67.1MB");
        assert_eq!(iec(33_554_432_000.0), "31.2GiB");
        assert_eq!(ms(2_400_000), 2);
    }
}
