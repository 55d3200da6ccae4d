//! A figure of a suite's table in words, the same in the terminal, Markdown and the HTML
//! report: units always, the median first, the spread after it.

use crate::table::{Cell, Unit};

pub fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::BytesPerS if v >= 1e9 => format!("{:.2} GB/s", v / 1e9),
        Unit::BytesPerS => format!("{:.1} MB/s", v / 1e6),
        Unit::Seconds if v == 0.0 => "0".into(),
        Unit::Seconds if v < 1e-3 => format!("{:.0} µs", v * 1e6),
        Unit::Seconds if v < 1.0 => format!("{:.1} ms", v * 1e3),
        Unit::Seconds => format!("{v:.2} s"),
        Unit::Bytes if v >= (1u64 << 30) as f64 => format!("{:.1} GiB", v / (1u64 << 30) as f64),
        Unit::Bytes if v >= (1u64 << 20) as f64 => format!("{:.1} MiB", v / (1u64 << 20) as f64),
        Unit::Bytes if v >= 1024.0 => format!("{:.0} KiB", v / 1024.0),
        Unit::Bytes => format!("{v:.0} B"),
        Unit::Count if v.fract() == 0.0 => format!("{v:.0}"),
        Unit::Count => format!("{v:.1}"),
        Unit::PerS => format!("{v:.0}/s"),
        Unit::Ratio => format!("{v:.2}"),
        Unit::Percent => format!("{v:.1}%"),
    }
}

/// The median, and with more than one run, "±" half the spread as a share of the median.
pub fn cell_short(unit: Unit, c: &Cell) -> String {
    let Some(m) = c.median else {
        return "-".into();
    };
    let text = value(unit, m);
    match (c.values.len(), c.min, c.max) {
        (2.., Some(lo), Some(hi)) if m.abs() > f64::EPSILON => {
            format!("{text} ±{:.0}%", (hi - lo) / 2.0 / m.abs() * 100.0)
        }
        _ => text,
    }
}

/// The median, and with more than one run, the range of the runs: `12.3 MB/s (11.9-12.8)`.
pub fn cell_range(unit: Unit, c: &Cell) -> String {
    let Some(m) = c.median else {
        return "-".into();
    };
    let text = value(unit, m);
    match (c.values.len(), c.min, c.max) {
        (2.., Some(lo), Some(hi)) => format!("{text} ({} to {})", value(unit, lo), value(unit, hi)),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_always_written() {
        assert_eq!(value(Unit::BytesPerS, 12_345_678.0), "12.3 MB/s");
        assert_eq!(value(Unit::Seconds, 0.0123), "12.3 ms");
        assert_eq!(value(Unit::Seconds, 0.000_05), "50 µs");
        assert_eq!(value(Unit::Bytes, 16.0 * 1048576.0), "16.0 MiB");
        assert_eq!(value(Unit::PerS, 866.4), "866/s");
        let mut c = Cell::default();
        assert_eq!(cell_short(Unit::Count, &c), "-");
        c.push(10.0);
        assert_eq!(cell_short(Unit::Count, &c), "10");
        c.push(12.0);
        c.push(11.0);
        assert_eq!(cell_short(Unit::Count, &c), "11 ±9%");
        assert_eq!(cell_range(Unit::Count, &c), "11 (10 to 12)");
    }
}
