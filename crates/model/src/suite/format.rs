//! A figure of a suite's table in words, the same in the terminal, Markdown and the HTML
//! report: units always, the median first, the spread after it.

use super::table::{Cell, Unit};

/// How a figure of this size is written: (multiplier, decimals, unit after the number).
fn scale(unit: Unit, v: f64) -> (f64, usize, &'static str) {
    const MIB: f64 = (1u64 << 20) as f64;
    const GIB: f64 = (1u64 << 30) as f64;
    match unit {
        Unit::BytesPerS if v >= 1e9 => (1e-9, 2, " GB/s"),
        Unit::BytesPerS => (1e-6, 1, " MB/s"),
        Unit::Seconds if v == 0.0 => (1.0, 0, ""),
        Unit::Seconds if v < 1e-3 => (1e6, 0, " µs"),
        Unit::Seconds if v < 1.0 => (1e3, 1, " ms"),
        Unit::Seconds => (1.0, 2, " s"),
        Unit::Bytes if v >= GIB => (1.0 / GIB, 1, " GiB"),
        Unit::Bytes if v >= MIB => (1.0 / MIB, 1, " MiB"),
        Unit::Bytes if v >= 1024.0 => (1.0 / 1024.0, 0, " KiB"),
        Unit::Bytes => (1.0, 0, " B"),
        Unit::Count if v.fract() == 0.0 => (1.0, 0, ""),
        Unit::Count => (1.0, 1, ""),
        Unit::PerS => (1.0, 0, "/s"),
        Unit::Ratio => (1.0, 2, ""),
        Unit::Percent => (1.0, 1, "%"),
    }
}

pub fn value(unit: Unit, v: f64) -> String {
    let (m, d, suffix) = scale(unit, v);
    format!("{:.d$}{suffix}", v * m)
}

/// The median, and with more than one run, "±" half the spread as a share of the median.
pub fn cell_short(unit: Unit, c: &Cell) -> String {
    let Some(m) = c.median else {
        return "-".into();
    };
    let text = value(unit, m);
    match (c.values.len(), c.min, c.max) {
        (2.., Some(lo), Some(hi)) if m.abs() > f64::EPSILON => {
            let spread = (hi - lo) / 2.0 / m.abs();
            // Beyond ±100% a share says little: the runs' range does.
            if spread > 1.0 {
                format!("{text} ({} to {})", value(unit, lo), value(unit, hi))
            } else {
                format!("{text} ±{:.0}%", spread * 100.0)
            }
        }
        _ => text,
    }
}

/// The median, and with more than one run, the range of the runs in the median's unit:
/// `12.3 MB/s (11.9-12.8)`.
pub fn cell_range(unit: Unit, c: &Cell) -> String {
    let Some(m) = c.median else {
        return "-".into();
    };
    let text = value(unit, m);
    match (c.values.len(), c.min, c.max) {
        (2.., Some(lo), Some(hi)) if lo != hi => {
            let (k, d, _) = scale(unit, m);
            let d = if unit == Unit::Count {
                d.max(usize::from(lo.fract() != 0.0 || hi.fract() != 0.0))
            } else {
                d
            };
            format!("{text} ({:.d$}-{:.d$})", lo * k, hi * k)
        }
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
        assert_eq!(cell_range(Unit::Count, &c), "11 (10-12)");
        let mut r = Cell::default();
        for v in [11.9e6, 12.3e6, 12.8e6] {
            r.push(v);
        }
        assert_eq!(cell_range(Unit::BytesPerS, &r), "12.3 MB/s (11.9-12.8)");
    }
}
