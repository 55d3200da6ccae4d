//! Settings sinkrate changes (sysctls, block queues, mount options, files it writes with
//! `--persist`), the journal entries that remember their originals, and `tune`'s report.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One setting, named so it can be read, written and restored.
///
/// Read through [`SettingFields`]: serde's internally tagged enums buffer each value into a
/// generic tree and replay it per variant, and that reader was 25 KB of the board builds'
/// 5 MB budget for five variants of a few strings (every journal entry, fix and search
/// candidate holds one). The JSON is the same either way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "SettingFields")]
pub enum Setting {
    /// `vm/dirty_bytes` under /proc/sys.
    Sysctl { name: String },
    /// `/sys/block/DEVICE/queue/ATTR`.
    Queue { device: String, attr: String },
    /// `/sys/class/bdi/BDI/ATTR`: a device's own writeback limit (`strict_limit`,
    /// `max_bytes`, `max_ratio`, `max_ratio_fine`).
    Bdi { bdi: String, attr: String },
    /// One family of a mount's options (`atime`, `sync`, `commit`, ...) at a mount point.
    Mount { mount_point: String, family: String },
    /// A configuration file `--persist` writes (sysctl.d, udev rules): its whole content,
    /// [`ABSENT`] when it does not exist.
    File { path: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum SettingKind {
    Sysctl,
    Queue,
    Bdi,
    Mount,
    File,
}

/// A [`Setting`] as its JSON holds it: the kind and every field any kind has.
#[derive(Deserialize)]
struct SettingFields {
    kind: SettingKind,
    name: Option<String>,
    device: Option<String>,
    attr: Option<String>,
    bdi: Option<String>,
    mount_point: Option<String>,
    family: Option<String>,
    path: Option<String>,
}

impl TryFrom<SettingFields> for Setting {
    type Error = String;

    fn try_from(f: SettingFields) -> Result<Self, String> {
        let need =
            |v: Option<String>, field: &str| v.ok_or_else(|| format!("missing field `{field}`"));
        Ok(match f.kind {
            SettingKind::Sysctl => Setting::Sysctl {
                name: need(f.name, "name")?,
            },
            SettingKind::Queue => Setting::Queue {
                device: need(f.device, "device")?,
                attr: need(f.attr, "attr")?,
            },
            SettingKind::Bdi => Setting::Bdi {
                bdi: need(f.bdi, "bdi")?,
                attr: need(f.attr, "attr")?,
            },
            SettingKind::Mount => Setting::Mount {
                mount_point: need(f.mount_point, "mount_point")?,
                family: need(f.family, "family")?,
            },
            SettingKind::File => Setting::File {
                path: need(f.path, "path")?,
            },
        })
    }
}

/// The settings journal of the live system. Under /var/lib so that settings `--persist`
/// wrote to files can be found again after a reboot; runtime values carry their boot.
pub const DEFAULT_JOURNAL: &str = "/var/lib/sinkrate/settings-journal.json";

/// The journal's file: every setting sinkrate holds changed, with its original.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalFile {
    pub version: u32,
    pub entries: Vec<Entry>,
}

/// The value of a file that does not exist: writing it back removes the file.
pub const ABSENT: &str = "\u{0}absent";

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setting::Sysctl { name } => write!(f, "{}", name.replace('/', ".")),
            Setting::Queue { device, attr } => write!(f, "/sys/block/{device}/queue/{attr}"),
            Setting::Bdi { bdi, attr } => write!(f, "/sys/class/bdi/{bdi}/{attr}"),
            Setting::Mount {
                mount_point,
                family,
            } => write!(f, "{mount_point} mount option {family}"),
            Setting::File { path } => write!(f, "{path}"),
        }
    }
}

impl Setting {
    /// A block queue's scheduler, whose change resets the queue's other settings.
    pub fn is_scheduler(&self) -> bool {
        matches!(self, Setting::Queue { attr, .. } if attr == "scheduler")
    }

    /// A device's dirty-memory share in one of its forms (`max_bytes`, `max_ratio`,
    /// `max_ratio_fine`): the kernel keeps one ratio behind all three.
    pub fn is_bdi_share(&self) -> bool {
        matches!(self, Setting::Bdi { attr, .. } if attr.starts_with("max_"))
    }

    /// The setting with `value` as `sinkrate tune apply` takes it: `vm.NAME=VALUE`,
    /// `queue:ATTR=VALUE`, `bdi:ATTR=VALUE`, `mount:OPTION` (a mount value is the option
    /// itself).
    pub fn argument(&self, value: &str) -> String {
        match self {
            Setting::Sysctl { name } => format!("{}={value}", name.replace('/', ".")),
            Setting::Queue { attr, .. } => format!("queue:{attr}={value}"),
            Setting::Bdi { attr, .. } => format!("bdi:{attr}={value}"),
            Setting::Mount { .. } => format!("mount:{value}"),
            Setting::File { path } => format!("{path} (a file)"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A test's change (a search trial, `record --ram-limit`): undone when its process ends.
    Temporary,
    /// `tune apply`: kept until `tune restore`.
    Applied,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub setting: Setting,
    /// The value in force before sinkrate changed it.
    pub original: String,
    /// What sinkrate wrote, as the kernel reads it back; None between journaling and writing,
    /// and for a sysctl's companion form, which sinkrate did not set itself.
    pub written: Option<String>,
    pub mode: Mode,
    pub pid: u32,
    pub boot_id: String,
}

/// What a restore did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Settings written back to their original values.
    pub restored: Vec<(Setting, String)>,
    /// Settings someone else changed after sinkrate wrote them: (setting, value now, what
    /// sinkrate wrote). Left as they are.
    pub left_alone: Vec<(Setting, String, String)>,
    /// Entries of an earlier boot, whose runtime values the reboot already undid.
    pub dropped: Vec<Setting>,
}

impl Outcome {
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.left_alone.is_empty() && self.dropped.is_empty()
    }

    /// `name=value` of every setting put back, comma-separated.
    pub fn restored_text(&self) -> String {
        self.restored
            .iter()
            .map(|(s, v)| format!("{s}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line for each setting left alone, and why.
    pub fn left_alone_text(&self) -> Vec<String> {
        self.left_alone
            .iter()
            .map(|(s, now, wrote)| {
                format!("left {s} at {now}: changed by someone else after sinkrate wrote {wrote}")
            })
            .collect()
    }

    /// One line for a person: what was put back, and what was left alone and why.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.restored.is_empty() {
            parts.push(format!("restored {}", self.restored_text()));
        }
        parts.extend(self.left_alone_text());
        parts.join("; ")
    }
}

/// One setting's change: in force before, and asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub setting: Setting,
    pub from: String,
    pub to: String,
}

/// A journaled setting and its value now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    #[serde(flatten)]
    pub entry: Entry,
    pub now: Option<String>,
    /// The value now is the one sinkrate wrote.
    pub in_force: bool,
    /// For a temporary change: its run is still going.
    pub running: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TuneReport {
    pub dry_run: bool,
    /// apply: the findings whose fixes these are (`--from`, or a fresh audit).
    #[serde(default)]
    pub from_findings: Vec<String>,
    /// What a killed run had left changed and was put back first.
    pub recovered: Outcome,
    /// apply: what was (or, with --dry-run, would be) changed.
    pub changes: Vec<Change>,
    /// restore: what was (or would be) put back.
    pub restored: Outcome,
    /// What sinkrate holds changed after this command.
    pub held: Vec<Held>,
    /// `--persist`: what the user must do by hand to keep the rest (the /etc/fstab line for
    /// mount options, which sinkrate does not edit), or why a form could not be written.
    #[serde(default)]
    pub to_keep: Vec<String>,
    /// apply: settings the kernel took otherwise than asked (a scheduler it does not have,
    /// a value it clamps); `changes` holds what the kernel holds.
    #[serde(default)]
    pub not_as_asked: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_setting_reads_back_as_it_was_written() {
        let all = [
            Setting::Sysctl {
                name: "vm/dirty_bytes".into(),
            },
            Setting::Queue {
                device: "sda".into(),
                attr: "scheduler".into(),
            },
            Setting::Bdi {
                bdi: "8:0".into(),
                attr: "max_bytes".into(),
            },
            Setting::Mount {
                mount_point: "/media/rec".into(),
                family: "commit".into(),
            },
            Setting::File {
                path: "/etc/sysctl.d/60-sinkrate.conf".into(),
            },
        ];
        for setting in all {
            let text = serde_json::to_string(&setting).unwrap();
            let back: Setting = serde_json::from_str(&text).unwrap();
            assert_eq!(back, setting, "{text}");
            let value: Setting =
                serde_json::from_value(serde_json::to_value(&setting).unwrap()).unwrap();
            assert_eq!(value, setting, "{text}");
        }
        assert_eq!(
            serde_json::to_string(&Setting::Bdi {
                bdi: "8:0".into(),
                attr: "strict_limit".into()
            })
            .unwrap(),
            r#"{"kind":"bdi","bdi":"8:0","attr":"strict_limit"}"#
        );
        let err = serde_json::from_str::<Setting>(r#"{"kind":"queue","device":"sda"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `attr`"), "{err}");
        assert!(serde_json::from_str::<Setting>(r#"{"kind":"disk","name":"x"}"#).is_err());
    }
}
