//! `sinkrate tune`'s text: what a killed run left and was put back, what changed (or would),
//! what was restored or left alone, and what sinkrate still holds changed.

use anyhow::Result;
use sinkrate_model::settings::{Mode, Outcome, Setting, TuneReport, ABSENT};
use sinkrate_model::Envelope;

use super::Exporter;

pub struct TuneText;

fn outcome(s: &mut String, heading: &str, o: &Outcome, dry_run: bool) {
    for (setting, value) in &o.restored {
        let line = match (setting, value.as_str(), dry_run) {
            (Setting::File { path }, ABSENT, false) => format!("removed {path}"),
            (Setting::File { path }, ABSENT, true) => format!("would remove {path}"),
            (Setting::File { path }, _, false) => format!("put back the old text of {path}"),
            (Setting::File { path }, _, true) => format!("would put back the old text of {path}"),
            (_, _, false) => format!("put back {setting} = {value}"),
            (_, _, true) => format!("would put back {setting} = {value}"),
        };
        s.push_str(&format!("{heading}{line}\n"));
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
            if let Setting::File { path } = &c.setting {
                // A file's lines that are new, not its whole text.
                let verb = if r.dry_run { "would write" } else { "wrote" };
                let added: Vec<&str> =
                    c.to.lines()
                        .filter(|l| !c.from.lines().any(|old| old == *l))
                        .collect();
                s.push_str(&format!("{verb} {path}: {}\n", added.join("; ")));
                continue;
            }
            let verb = if r.dry_run { "would set" } else { "set" };
            s.push_str(&format!(
                "{verb} {} = {} (was {})\n",
                c.setting, c.to, c.from
            ));
        }
        for line in &r.to_keep {
            s.push_str(&format!("to keep it: {line}\n"));
        }
        for line in &r.not_as_asked {
            s.push_str(&format!("not as asked: {line}\n"));
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
                if let Setting::File { path } = &h.entry.setting {
                    let how = if h.entry.original == ABSENT {
                        "written by tune apply --persist; restore removes it"
                    } else {
                        "merged by tune apply --persist; restore puts its old text back"
                    };
                    s.push_str(&format!("  {path} ({how})\n"));
                    continue;
                }
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
