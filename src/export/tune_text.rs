//! `sinkrate tune`'s text: what a killed run left and was put back, what changed (or would),
//! what was restored or left alone, and what sinkrate still holds changed.

use anyhow::Result;
use sinkrate_model::Envelope;
use sinkrate_settings::tune::TuneReport;
use sinkrate_settings::{Mode, Outcome};

use super::Exporter;

pub struct TuneText;

fn outcome(s: &mut String, heading: &str, o: &Outcome, dry_run: bool) {
    for (setting, value) in &o.restored {
        let verb = if dry_run {
            "would put back"
        } else {
            "put back"
        };
        s.push_str(&format!("{heading}{verb} {setting} = {value}\n"));
    }
    for (setting, now, wrote) in &o.left_alone {
        s.push_str(&format!(
            "{heading}left {setting} at {now}: changed by someone else after sinkrate wrote {wrote}\n"
        ));
    }
}

impl Exporter<Envelope<TuneReport>> for TuneText {
    fn export(&self, run: &Envelope<TuneReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let mut s = String::new();
        outcome(
            &mut s,
            "a killed run's temporary change: ",
            &r.recovered,
            false,
        );
        if !r.from_findings.is_empty() {
            s.push_str(&format!("the fixes of {}\n", r.from_findings.join(", ")));
        }
        for c in &r.changes {
            let verb = if r.dry_run { "would set" } else { "set" };
            s.push_str(&format!(
                "{verb} {} = {} (was {})\n",
                c.setting, c.to, c.from
            ));
        }
        outcome(&mut s, "", &r.restored, r.dry_run);
        if r.held.is_empty() {
            s.push_str("sinkrate holds no setting changed\n");
        } else {
            s.push_str("sinkrate holds changed:\n");
            for h in &r.held {
                let how = match (h.entry.mode, h.running) {
                    (Mode::Applied, _) => "applied, until sinkrate tune restore".to_string(),
                    (Mode::Temporary, true) => {
                        format!("temporary, for the run with pid {}", h.entry.pid)
                    }
                    (Mode::Temporary, false) => "temporary, left by a killed run".to_string(),
                };
                let now = h.now.as_deref().unwrap_or("?");
                let note = if h.in_force || h.entry.written.is_none() {
                    String::new()
                } else {
                    format!(
                        "; changed since by someone else (sinkrate wrote {})",
                        h.entry.written.as_deref().unwrap_or("?")
                    )
                };
                s.push_str(&format!(
                    "  {} = {now} (was {}; {how}{note})\n",
                    h.entry.setting, h.entry.original
                ));
            }
        }
        Ok(s.into_bytes())
    }
}
