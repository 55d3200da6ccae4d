//! `sinkrate audit`'s result: the facts read about a target directory and its storage, and
//! the findings judged from them (each with evidence, why, fix and trade-off).

use serde::{Deserialize, Serialize};

use crate::tunables::Assignment;

use crate::facts::{BlockDevice, FsSpace, Memory, SwapArea, Target, UsbPath};
use crate::health::CardHealth;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ext4Super {
    pub block_size: u64,
    pub blocks: u64,
    pub has_journal: bool,
    /// External journal device (journal_dev incompat feature on the journal itself).
    pub journal_bytes: Option<u64>,
    /// Feature names as `dumpe2fs` prints them, for the ones that matter here.
    pub features: Vec<String>,
    /// The data mode stored as a default mount option (tune2fs -o journal_data...).
    pub default_data_mode: Option<String>,
    /// Mount options stored in the superblock (tune2fs -E mount_opts=).
    pub stored_mount_options: Option<String>,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsFacts {
    /// From the device's superblock, read-only.
    pub ext4: Option<Ext4Super>,
    /// /proc/fs/ext4/DEV/options: the options in force, defaults included.
    pub ext4_options: Vec<String>,
    /// vfat/exfat cluster size.
    pub cluster_bytes: Option<u64>,
    /// Filesystems this kernel can mount (/proc/filesystems).
    pub kernel_filesystems: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    pub target: Target,
    pub filesystem: FsFacts,
    /// The mounted device first, then what it stands on (a loop's backing device, dm/md
    /// members).
    pub devices: Vec<BlockDevice>,
    pub usb: Option<UsbPath>,
    pub memory: Memory,
    pub space: Option<FsSpace>,
    pub swap: Vec<SwapArea>,
    /// The target's per-device writeback limits; None where it has no bdi (tmpfs) or the
    /// kernel shows none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdi: Option<crate::facts::BdiLimits>,
    /// What the card or drive says of itself: identity, claimed classes, wear.
    #[serde(default)]
    pub health: CardHealth,
    /// The sustained write rate measured on the target (check's), bytes per second: what
    /// the card's claimed class is held to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_write_bytes_per_s: Option<f64>,
    /// The stream rate the findings were judged against, bytes per second.
    #[serde(default)]
    pub stream_bytes_per_s: f64,
    pub findings: Vec<Finding>,
    /// What could not be read, and what still works without it.
    pub notes: Vec<String>,
}

/// The stream a result was judged against, in words and bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRate {
    pub label: String,
    pub bytes_per_s: f64,
}

/// `sinkrate audit`'s result (`kind: audit` in the run envelope), and the `audit` object
/// inside a check's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    #[serde(flatten)]
    pub audit: Audit,
    pub stream: StreamRate,
    /// The fixture tree read instead of the live system, if any.
    pub sysroot: Option<String>,
}

// Read by splitting its own keys from the audit's rather than through `#[serde(flatten)]`,
// whose buffering deserializer for a struct this size cost the board binaries tens of KB.
impl<'de> Deserialize<'de> for AuditReport {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Own {
            stream: StreamRate,
            #[serde(default)]
            sysroot: Option<String>,
        }
        let serde_json::Value::Object(mut rest) = serde_json::Value::deserialize(deserializer)?
        else {
            return Err(D::Error::custom("an audit report is a JSON object"));
        };
        let mut own = serde_json::Map::new();
        for key in ["stream", "sysroot"] {
            if let Some(v) = rest.remove(key) {
                own.insert(key.to_string(), v);
            }
        }
        let own: Own =
            serde_json::from_value(serde_json::Value::Object(own)).map_err(D::Error::custom)?;
        let audit: Audit =
            serde_json::from_value(serde_json::Value::Object(rest)).map_err(D::Error::custom)?;
        Ok(AuditReport {
            audit,
            stream: own.stream,
            sysroot: own.sysroot,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    Warn,
    Info,
    Ok,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warn => "warn",
            Severity::Info => "info",
            Severity::Ok => "ok",
        }
    }
}

/// A finding's fix: the settings that make it (typed, as `tune apply` takes them), the
/// commands to run now (those settings' own commands, then any that are not settings: move
/// a cable, trim once), and what makes it stay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// Commands that apply the fix now (until reboot or remount).
    pub now: Vec<String>,
    /// What makes it stay: an fstab line, a sysctl.d file, a udev rule.
    pub persistent: Vec<String>,
    /// The settings among `now`, typed: what `tune apply --from` changes.
    #[serde(default)]
    pub settings: Vec<Assignment>,
}

/// One step of a fix to make now: a setting, or a command that is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Set(Assignment),
    /// A setting, with a remark after its command (`(or higher, e.g. 30)`).
    SetNoted(Assignment, String),
    Run(String),
}

impl Fix {
    /// The fix made of `steps` (settings' commands in their order, consecutive sysctls as
    /// one `sysctl -w`) and `persistent`.
    pub fn of(steps: &[Step], persistent: &[String]) -> Fix {
        let mut now = Vec::new();
        let mut settings = Vec::new();
        let mut pending: Vec<Assignment> = Vec::new();
        let flush = |pending: &mut Vec<Assignment>, now: &mut Vec<String>| {
            now.extend(crate::tunables::commands(pending));
            pending.clear();
        };
        for step in steps {
            match step {
                Step::Set(a) => {
                    pending.push(a.clone());
                    settings.push(a.clone());
                }
                Step::SetNoted(a, remark) => {
                    flush(&mut pending, &mut now);
                    now.push(format!("{}   {remark}", a.command()));
                    settings.push(a.clone());
                }
                Step::Run(command) => {
                    flush(&mut pending, &mut now);
                    now.push(command.clone());
                }
            }
        }
        flush(&mut pending, &mut now);
        Fix {
            now,
            persistent: persistent.to_vec(),
            settings,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub id: std::borrow::Cow<'static, str>,
    pub severity: Severity,
    /// One line: what is the case.
    pub title: String,
    pub evidence: String,
    pub why: String,
    pub fix: Fix,
    pub tradeoff: Option<String>,
}

impl Finding {
    /// The settings `sinkrate tune apply` makes for this fix; a fix that is not a setting
    /// (move a cable, repartition) has none.
    pub fn settings(&self) -> &[Assignment] {
        &self.fix.settings
    }
}
