//! fio's latency bins (`FIO_IO_U_PLAT_*`): 64 bins per power of two above 64 ns, 29 groups,
//! 1856 in all; exact up to 127 ns. The histogram logs (`write_hist_log`) and json+'s
//! `bins` are written in them, so that fio's own readers and a merge with fio's histograms
//! line up bin for bin.
//!
//! Written out here because it is fio's own layout, which no crate provides. The HDR
//! histogram behind every figure nests in it: with 3 significant digits an HDR bucket in
//! [2^k, 2^(k+1)) is 2^(k-10) wide and aligned, fio's bin there 2^(k-6), so each HDR bucket
//! lies inside one fio bin and the HDR counts give fio's bins exactly.

/// Bits of a latency kept exact within a power of two: 64 bins per group.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's FIO_IO_U_PLAT_NR: 29 groups of 64 bins.
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// The bin of a latency in ns (fio's `plat_val_to_idx`): values up to 127 are their own
/// bin; above, the six bits after the highest set bit choose one of the 64 bins of that
/// power of two.
pub fn plat_index(ns: u64) -> usize {
    if ns == 0 {
        return 0;
    }
    let msb = 63 - ns.leading_zeros();
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let dropped = msb - PLAT_BITS;
    let base = ((dropped + 1) as usize) << PLAT_BITS;
    let within = ((ns >> dropped) & (PLAT_VAL - 1)) as usize;
    (base + within).min(PLAT_NR - 1)
}

/// The value fio names a bin by (`plat_idx_to_val`): the middle of its range, rounded
/// down; a bin below 128 is its own value.
pub fn plat_value(index: usize) -> u64 {
    let index = index.min(PLAT_NR - 1) as u64;
    if index < PLAT_VAL << 1 {
        return index;
    }
    let error_bits = (index >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = index % PLAT_VAL;
    // fio: base + ((k + 0.5) * (1 << error_bits)), truncated to an integer.
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_fios() {
        // fio's layout: exact up to 127, then 64 bins per power of two.
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        assert_eq!(plat_index(128), 128);
        assert_eq!(plat_index(129), 128);
        assert_eq!(plat_index(130), 129);
        assert_eq!(plat_index(256), 192);
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
        // Every bin below the top is reached, in order.
        let mut last = 0;
        for ns in (0..1u64 << 20).step_by(7) {
            let i = plat_index(ns);
            assert!(i >= last && i < PLAT_NR);
            last = i;
        }
    }

    #[test]
    fn a_bins_value_is_fios_midpoint_and_lies_in_the_bin() {
        // Between 64 and 128 µs fio's bins are 1024 ns wide: 100 µs is in the one from
        // 99,328 ns, named by its middle.
        let i = plat_index(100_000);
        assert_eq!(plat_value(i), 99_328 + 512);
        assert_eq!(plat_index(99_328), i);
        assert_eq!(plat_index(99_328 + 1023), i);
        assert_eq!(plat_index(99_328 + 1024), i + 1);
        assert_eq!(plat_value(127), 127);
        // Above 127 a bin is two or more values wide: 128..=129 is named 129, as fio's.
        assert_eq!(plat_value(128), 129);
        assert_eq!(plat_value(129), 131);
        for i in 0..PLAT_NR {
            assert_eq!(plat_index(plat_value(i)), i, "bin {i}");
        }
    }
}
