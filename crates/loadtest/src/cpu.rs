//! Who used the machine's processors during a measurement: this process (with the children
//! it waited for, such as wrk), or other processes.
//!
//! Load figures from a shared machine mean little without this: another build on the same
//! two cores halves a throughput figure and multiplies a tail latency. Read from Linux's
//! `/proc/stat` and `/proc/self/stat`; elsewhere [`CpuSample::now`] is `None` and the
//! report goes without.

use std::fmt;

/// Processor time counters at one instant, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    /// Every processor's time, busy or idle.
    total: u64,
    /// Every processor's idle time (including waiting for I/O).
    idle: u64,
    /// This process's user and system time, plus that of the children it waited for.
    own: u64,
}

/// How busy the machine was between two samples, as fractions of all its processors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuShare {
    /// Busy, by anyone.
    pub busy: f64,
    /// Busy with this process or its waited-for children.
    pub own: f64,
    /// Busy with anything else.
    pub others: f64,
}

impl CpuSample {
    /// The counters now, or `None` where `/proc` does not have them.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        Self::parse(&stat, &own)
    }

    /// From the texts of `/proc/stat` and `/proc/<pid>/stat`.
    fn parse(stat: &str, own: &str) -> Option<Self> {
        // `cpu  user nice system idle iowait irq softirq steal guest guest_nice`; guest time
        // is already counted in user time.
        let ticks: Vec<u64> = stat
            .lines()
            .find_map(|line| line.strip_prefix("cpu "))?
            .split_whitespace()
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        let total = ticks.iter().take(8).sum();
        let idle = ticks.get(3)? + ticks.get(4)?;
        // After `pid (comm)`, fields 14 to 17 are utime, stime, cutime, cstime; the command
        // may contain spaces and parentheses, so count from the last `)`.
        let fields: Vec<&str> = own.get(own.rfind(')')? + 1..)?.split_whitespace().collect();
        let own = fields
            .get(11..15)?
            .iter()
            .map(|field| field.parse::<u64>().ok())
            .sum::<Option<u64>>()?;
        Some(Self { total, idle, own })
    }

    /// What happened between this sample and `later`; `None` if no time passed.
    pub fn until(self, later: Self) -> Option<CpuShare> {
        let total = later
            .total
            .checked_sub(self.total)
            .filter(|&total| total > 0)? as f64;
        let busy = later.total.saturating_sub(later.idle) as f64
            - self.total.saturating_sub(self.idle) as f64;
        let own = later.own.saturating_sub(self.own) as f64;
        Some(CpuShare {
            busy: (busy / total).clamp(0.0, 1.0),
            own: (own / total).clamp(0.0, 1.0),
            others: ((busy - own) / total).clamp(0.0, 1.0),
        })
    }
}

impl fmt::Display for CpuShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "processors {:.0}% busy: this bench {:.0}%, other processes {:.0}%",
            self.busy * 100.0,
            self.own * 100.0,
            self.others * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu: &str, own: &str) -> CpuSample {
        let stat = format!("{cpu}\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n");
        CpuSample::parse(&stat, own).expect("parsable")
    }

    #[test]
    fn splits_busy_time_between_this_process_and_others() {
        let own = |ticks: u64| {
            format!("4242 (http load (x)) S 1 2 3 4 5 6 7 8 9 10 {ticks} 0 0 0 20 0 8 0")
        };
        // 200 ticks pass on the machine: 150 busy, of which 100 are this process's.
        let before = sample("cpu  100 0 100 700 100 0 0 0 0 0", &own(10));
        let after = sample("cpu  200 0 150 750 100 0 0 0 0 0", &own(110));
        let share = before.until(after).expect("time passed");
        assert!((share.busy - 0.75).abs() < 1e-9, "{share:?}");
        assert!((share.own - 0.5).abs() < 1e-9, "{share:?}");
        assert!((share.others - 0.25).abs() < 1e-9, "{share:?}");
        assert_eq!(before.until(before), None);
    }

    #[test]
    fn reads_this_machine() {
        if std::path::Path::new("/proc/stat").exists() {
            assert!(CpuSample::now().is_some());
        }
    }
}
