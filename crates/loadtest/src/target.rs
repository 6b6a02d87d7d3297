//! The verdict lines the load benches end with, one per target of the issue, which
//! `cargo xtask bench` gathers into one table after every bench ran.
//!
//! Each compares askbus with its baseline measured in the same run, as a ratio (same-run
//! ratios hold on a machine whose speed drifts; absolute figures do not), and names the
//! target and whether it was met. A missed target is reported, never fatal.

use std::fmt;

/// What starts every verdict line; `xtask` looks for it (it has no dependencies, so it
/// spells the prefix itself: keep them equal).
pub const PREFIX: &str = "TARGET | ";

/// One target's verdict.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is measured.
    pub name: String,
    /// The baseline's figure.
    pub baseline: String,
    /// askbus's figure.
    pub askbus: String,
    /// askbus against the baseline (the direction the target says).
    pub ratio: f64,
    /// The target, e.g. `>= 0.8x`.
    pub target: String,
    /// Whether it was met.
    pub met: bool,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{} | baseline {} | askbus {} | ratio {:.2}x | target {} | {}",
            self.name,
            self.baseline,
            self.askbus,
            self.ratio,
            self.target,
            verdict(self.met)
        )
    }
}

/// `met` or `MISSED`.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}
