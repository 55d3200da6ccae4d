//! Human-readable figures in fio's style (used by the status line).

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
