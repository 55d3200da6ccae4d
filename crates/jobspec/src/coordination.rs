//! Options that tie jobs to each other, as fio's: `wait_for`, `flow`/`flow_id`/`flow_sleep`,
//! `exitall`/`exit_what`/`exitall_on_error`, and `io_submit_mode`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::options::{bad, flag, need, one_of, ApplyError};
use sinkrate_units::fio::{parse_int, parse_time, TimeUnit};

/// fio's FLOW_MAX_WEIGHT.
pub const FLOW_MAX_WEIGHT: u64 = 1000;

/// Which jobs a finishing job with `exitall` ends (fio's exit_what).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitWhat {
    /// The jobs of its reporting group.
    #[default]
    Group,
    /// Every job running now; the next stonewall segment still starts.
    Stonewall,
    /// Everything, including jobs not started yet.
    All,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coordination {
    /// Start only once every job of this name (defined before this one) is done.
    pub wait_for: Option<String>,
    /// Weight in the token-based flow control (0: not part of any flow).
    pub flow: u64,
    pub flow_id: u64,
    /// Pause after being held back by the flow control (0: retry at once).
    #[serde(with = "sinkrate_units::serde_seconds::seconds")]
    pub flow_sleep: Duration,
    /// When this job ends, end the others that `exit_what` names.
    pub exitall: bool,
    pub exit_what: ExitWhat,
    /// When this job ends in error, end every other job.
    pub exitall_on_error: bool,
    /// fio's io_submit_mode=offload: I/Os are issued on their schedule by a pool of
    /// submitters, whatever the device's completions, and latency counts from the schedule.
    pub offload: bool,
}

impl Coordination {
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<(), ApplyError> {
        match key {
            "wait_for" => {
                let v = need(key, value)?.trim();
                if v.is_empty() {
                    return Err(bad(key, "empty (expected the name of an earlier job)"));
                }
                self.wait_for = Some(v.to_string());
            }
            "flow" => {
                // The option table's range: 0 to 1000, fio's.
                self.flow = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
            }
            "flow_id" => self.flow_id = parse_int(need(key, value)?).map_err(|e| bad(key, e))?,
            "flow_sleep" => {
                self.flow_sleep = parse_time(need(key, value)?, TimeUnit::Microseconds)
                    .map_err(|e| bad(key, e))?
            }
            "exitall" => self.exitall = flag(key, value)?,
            "exitall_on_error" => self.exitall_on_error = flag(key, value)?,
            "exit_what" => {
                self.exit_what = one_of(
                    key,
                    value,
                    &[
                        ("group", ExitWhat::Group),
                        ("stonewall", ExitWhat::Stonewall),
                        ("all", ExitWhat::All),
                    ],
                )?
            }
            "io_submit_mode" => {
                self.offload = one_of(key, value, &[("inline", false), ("offload", true)])?
            }
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_ranges_as_fio() {
        let mut c = Coordination::default();
        c.apply("flow", Some("8")).expect("flow");
        c.apply("flow_sleep", Some("1000")).expect("flow_sleep");
        c.apply("exit_what", Some("stonewall")).expect("exit_what");
        c.apply("io_submit_mode", Some("offload")).expect("mode");
        c.apply("exitall", None).expect("exitall");
        assert_eq!(c.flow, 8);
        assert_eq!(c.flow_sleep, Duration::from_millis(1));
        assert_eq!(c.exit_what, ExitWhat::Stonewall);
        assert!(c.offload && c.exitall);
        // The option table's range, checked as the job takes the option.
        assert!(crate::JobOptions::default()
            .apply("flow", Some("2000"))
            .is_err());
        assert!(c.apply("exit_what", Some("some")).is_err());
        assert!(c.apply("io_submit_mode", Some("later")).is_err());
        assert!(c.apply("wait_for", Some(" ")).is_err());
    }
}
