//! The aggregate `cpu` line of /proc/stat, in clock ticks (USER_HZ).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

pub fn parse(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let mut f = line
        .split_ascii_whitespace()
        .skip(1)
        .map(|v| v.parse::<u64>().ok());
    let mut next = || f.next().flatten();
    Some(CpuTimes {
        user: next()?,
        nice: next()?,
        system: next()?,
        idle: next()?,
        iowait: next().unwrap_or(0),
        irq: next().unwrap_or(0),
        softirq: next().unwrap_or(0),
        steal: next().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_machines() {
        let x = super::parse(include_str!("../fixtures/x86-vm-6.18/stat")).expect("x86");
        assert!(x.total() > 0);
        let a = super::parse(include_str!("../fixtures/arm-board-3.10/stat")).expect("arm");
        assert_eq!(
            (a.user, a.system, a.idle, a.iowait),
            (41_230, 30_110, 901_220, 12_040)
        );
        assert!(super::parse("cpu0 1 2 3 4\n").is_none());
    }
}
