//! Number formatting in fio's style.

/// An I/O rate as fio's text prints it: its num2str at four characters (8192k, 31.5k,
/// 78.0k, 512), of the whole number fio computes.
pub fn count(v: f64) -> String {
    num2str(v.max(0.0) as u64, 4, false)
}

/// fio's num2str: `num` in at most `maxlen` characters (the decimal point included) before
/// a prefix, SI (k, M, G: steps of 1000) or IEC (Ki, Mi, Gi: steps of 1024); what is cut
/// off rounds the last digit kept, as fio's carry does. Written out because fio's rounding
/// (one decimal when two characters are left, none when fewer) is what its users read, and
/// no formatting crate has it.
pub fn num2str(num: u64, maxlen: usize, pow2: bool) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let (prefixes, thousand) = if pow2 { (IEC, 1024) } else { (SI, 1000) };
    let mut num = num;
    let mut prefix = 0;
    let mut cut: Option<u64> = None;
    while num.to_string().len() > maxlen && prefix < prefixes.len() - 1 {
        cut = Some(num % thousand);
        num /= thousand;
        prefix += 1;
    }
    let Some(modulo) = cut else {
        return format!("{num}{}", prefixes[prefix]);
    };
    let digits = num.to_string().len();
    if maxlen <= digits + 1 {
        if modulo >= thousand / 2 {
            num += 1;
        }
        return format!("{num}{}", prefixes[prefix]);
    }
    let fraction = format!(
        "{:.*}",
        maxlen - digits - 1,
        modulo as f64 / thousand as f64
    );
    if fraction.starts_with('1') {
        num += 1;
    }
    format!("{num}{}{}", &fraction[1..], prefixes[prefix])
}

/// Bytes as fio's text prints them, IEC: four characters before the unit (64.0MiB,
/// 1861MiB, 31.2GiB, 512B).
pub fn iec(v: f64) -> String {
    format!("{}B", num2str(v.max(0.0) as u64, 4, true))
}

/// Bytes with SI units, as fio's: 67.1MB, 1951MB.
pub fn si(v: f64) -> String {
    format!("{}B", num2str(v.max(0.0) as u64, 4, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_fio() {
        assert_eq!(count(8_192_000.0), "8192k");
        assert_eq!(count(31_500.0), "31.5k");
        assert_eq!(count(512.0), "512");
        // fio 3.33's "IOPS=78.0k" and "IOPS=77.6k" for 77,997 and 77,638 I/Os a second.
        assert_eq!(count(77_997.0), "78.0k");
        assert_eq!(count(77_638.0), "77.6k");
        assert_eq!(count(175_215.0), "175k");
        // Latency extremes at six characters: a 3,014,625 ns maximum is "3014.6k".
        assert_eq!(num2str(3_014_625, 6, false), "3014.6k");
        assert_eq!(num2str(173_348, 6, false), "173348");
        assert_eq!(num2str(99_999_999, 6, false), "100000k");
        assert_eq!(iec(67_108_864.0), "64.0MiB");
        assert_eq!(si(67_108_864.0), "67.1MB");
        assert_eq!(iec(33_554_432_000.0), "31.2GiB");
        // fio 3.33's "BW=1861MiB/s (1951MB/s)" for 1,951,000,000 bytes a second.
        assert_eq!(iec(1_951_000_000.0), "1861MiB");
        assert_eq!(si(1_951_000_000.0), "1951MB");
        assert_eq!(iec(512.0), "512B");
        assert_eq!(sinkrate_units::fio::ms_rounded(2_400_000), 2);
        assert_eq!(sinkrate_units::fio::ms_rounded(2_500_000), 3);
    }
}
