//! /proc/pressure/{io,memory,cpu} (PSI, Linux 4.20+): share of time tasks stalled.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub some_avg10: f64,
    /// Microseconds, since boot.
    pub some_total_us: u64,
    pub full_avg10: Option<f64>,
    pub full_total_us: Option<u64>,
}

pub fn parse(text: &str) -> Option<Pressure> {
    let mut p = Pressure::default();
    let mut seen_some = false;
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let kind = f.next()?;
        let (mut avg10, mut total) = (None, None);
        for kv in f {
            match kv.split_once('=') {
                Some(("avg10", v)) => avg10 = v.parse::<f64>().ok(),
                Some(("total", v)) => total = v.parse::<u64>().ok(),
                _ => {}
            }
        }
        match kind {
            "some" => {
                p.some_avg10 = avg10?;
                p.some_total_us = total?;
                seen_some = true;
            }
            "full" => {
                p.full_avg10 = avg10;
                p.full_total_us = total;
            }
            _ => {}
        }
    }
    seen_some.then_some(p)
}

#[cfg(test)]
mod tests {
    #[test]
    fn io_and_memory() {
        let io = super::parse(include_str!("../fixtures/x86-vm-6.18/pressure-io")).expect("io");
        assert!(io.full_total_us.is_some());
        let mem =
            super::parse(include_str!("../fixtures/x86-vm-6.18/pressure-memory")).expect("mem");
        assert!(mem.some_avg10 >= 0.0);
        let cpu_old =
            super::parse("some avg10=1.50 avg60=0.20 avg300=0.05 total=12345\n").expect("cpu");
        assert_eq!(
            (cpu_old.some_total_us, cpu_old.full_total_us),
            (12345, None)
        );
        assert!(super::parse("").is_none());
        assert!(super::parse("some avg10=x total=1\n").is_none());
    }
}
