//! The one table of the settings sinkrate changes, how a user names them (`tune apply`'s
//! spelling), and a setting with its value as a fix, a trial and the journal carry it.
//!
//! Everything here is pure: the settings crate reads and writes them, audit names them in
//! its fixes, `--help` lists them; a new tunable is one new entry of [`TUNABLES`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::settings::Setting;

/// Where a tunable lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A sysctl under /proc/sys: the whole machine's.
    System,
    /// An attribute of the target's disk, /sys/block/DEV/queue/ATTR.
    Queue,
    /// A per-device writeback limit of the target's device, /sys/class/bdi/BDI/ATTR.
    Bdi,
    /// A family of mount options of the target's mount, changed by a remount.
    Mount,
}

impl Scope {
    /// The prefix a user writes before the name (`queue:`), none for a sysctl.
    pub fn prefix(self) -> &'static str {
        match self {
            Scope::System => "",
            Scope::Queue => "queue:",
            Scope::Bdi => "bdi:",
            Scope::Mount => "mount:",
        }
    }

    /// Whether it applies to the target directory's disk, device or mount (not the whole
    /// machine), so the target must be resolved first.
    pub fn needs_target(self) -> bool {
        self != Scope::System
    }
}

/// The values a tunable takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// A whole number.
    Count,
    /// A percentage, 0 to 100.
    Percent,
    /// A share of the dirty limit in percent, 1 to 100 (0 would stop every buffered write).
    Share,
    /// A whole number of bytes, at least two pages (the kernel's floor for dirty_bytes).
    Bytes,
    /// A size with a suffix (`50M`), written as bytes; never 0.
    Size,
    /// 0 or 1.
    Flag,
    /// A word the kernel judges (a scheduler's name, `write back`).
    Word,
    /// One of these mount options.
    OneOf(&'static [&'static str]),
    /// `commit=N`, seconds (0: the filesystem's default).
    CommitSeconds,
}

/// One setting sinkrate may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunable {
    pub scope: Scope,
    /// As a user names it after the prefix: `vm.dirty_bytes`, `scheduler`, `atime`.
    pub name: &'static str,
    pub values: Values,
}

const fn t(scope: Scope, name: &'static str, values: Values) -> Tunable {
    Tunable {
        scope,
        name,
        values,
    }
}

/// Every setting sinkrate changes: the page cache's writeback sysctls, the block queue's
/// attributes, the device's own writeback limits, the mount options a remount changes.
pub const TUNABLES: &[Tunable] = &[
    t(Scope::System, "vm.dirty_expire_centisecs", Values::Count),
    t(Scope::System, "vm.dirty_writeback_centisecs", Values::Count),
    t(Scope::System, "vm.dirty_bytes", Values::Bytes),
    t(Scope::System, "vm.dirty_background_bytes", Values::Bytes),
    t(Scope::System, "vm.dirty_ratio", Values::Percent),
    t(Scope::System, "vm.dirty_background_ratio", Values::Percent),
    t(Scope::Queue, "scheduler", Values::Word),
    t(Scope::Queue, "nr_requests", Values::Count),
    t(Scope::Queue, "read_ahead_kb", Values::Count),
    t(Scope::Queue, "max_sectors_kb", Values::Count),
    t(Scope::Queue, "write_cache", Values::Word),
    t(Scope::Bdi, "strict_limit", Values::Flag),
    t(Scope::Bdi, "max_bytes", Values::Size),
    t(Scope::Bdi, "max_ratio", Values::Share),
    t(
        Scope::Mount,
        "atime",
        Values::OneOf(&["noatime", "relatime", "strictatime"]),
    ),
    t(Scope::Mount, "sync", Values::OneOf(&["sync", "async"])),
    t(
        Scope::Mount,
        "discard",
        Values::OneOf(&["discard", "nodiscard"]),
    ),
    t(
        Scope::Mount,
        "barrier",
        Values::OneOf(&["barrier", "nobarrier"]),
    ),
    t(Scope::Mount, "commit", Values::CommitSeconds),
];

/// Options that a remount cannot change: the filesystem keeps the value it was mounted with.
pub const NOT_ON_REMOUNT: &[&str] = &[
    "data=",
    "journal_checksum",
    "journal_async_commit",
    // Not among the flags a remount changes (MS_RMT_MASK): the kernel keeps the one in force.
    "dirsync",
];

/// The tunables of one scope, in the table's order.
pub fn of_scope(scope: Scope) -> impl Iterator<Item = &'static Tunable> {
    TUNABLES.iter().filter(move |t| t.scope == scope)
}

/// The names of one scope's tunables, as `--help` and refusals list them.
pub fn names(scope: Scope) -> Vec<&'static str> {
    of_scope(scope).map(|t| t.name).collect()
}

/// The members of a mount option family (`atime`: noatime, relatime, strictatime); empty for
/// `commit` and for a name that is not a family.
pub fn mount_members(family: &str) -> &'static [&'static str] {
    of_scope(Scope::Mount)
        .find(|t| t.name == family)
        .and_then(|t| match t.values {
            Values::OneOf(members) => Some(members),
            _ => None,
        })
        .unwrap_or(&[])
}

/// The mount option families' members, as one list (`--help`, refusals).
pub fn mount_options() -> Vec<&'static str> {
    of_scope(Scope::Mount)
        .flat_map(|t| match t.values {
            Values::OneOf(members) => members,
            _ => &[],
        })
        .copied()
        .collect()
}

/// The list `tune apply --help` prints, from the table.
pub fn help_list() -> String {
    let prefixed = |scope: Scope| {
        names(scope)
            .iter()
            .map(|n| format!("{}{n}", scope.prefix()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{}; {}; {}; mount:{}|commit=N. data= cannot change on a remount: put it in /etc/fstab.",
        names(Scope::System).join(", "),
        prefixed(Scope::Queue),
        prefixed(Scope::Bdi),
        mount_options().join("|")
    )
}

/// A setting with the value to give it: what a finding's fix, a search trial, `tune apply`
/// and the journal carry. Written as `[setting, value]`, as the search's documents always
/// held it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(Setting, String)", into = "(Setting, String)")]
pub struct Assignment {
    pub setting: Setting,
    pub value: String,
}

impl From<(Setting, String)> for Assignment {
    fn from((setting, value): (Setting, String)) -> Assignment {
        Assignment { setting, value }
    }
}

impl From<Assignment> for (Setting, String) {
    fn from(a: Assignment) -> (Setting, String) {
        (a.setting, a.value)
    }
}

impl Assignment {
    pub fn new(setting: Setting, value: impl Into<String>) -> Assignment {
        Assignment {
            setting,
            value: value.into(),
        }
    }

    /// A sysctl (`vm.dirty_bytes`, as a user names it) with its value.
    pub fn sysctl(name: &str, value: impl fmt::Display) -> Assignment {
        Assignment::new(
            Setting::Sysctl {
                name: name.replace('.', "/"),
            },
            value.to_string(),
        )
    }

    /// A block queue attribute of `device` with its value.
    pub fn queue(device: &str, attr: &str, value: impl fmt::Display) -> Assignment {
        Assignment::new(
            Setting::Queue {
                device: device.into(),
                attr: attr.into(),
            },
            value.to_string(),
        )
    }

    /// A per-device writeback limit of `bdi` with its value.
    pub fn bdi(bdi: &str, attr: &str, value: impl fmt::Display) -> Assignment {
        Assignment::new(
            Setting::Bdi {
                bdi: bdi.into(),
                attr: attr.into(),
            },
            value.to_string(),
        )
    }

    /// A mount option at `mount_point` (`noatime`, `commit=5`): the member of its family.
    /// None for an option that is no tunable's (`rw`, `data=journal`).
    pub fn mount(mount_point: &str, option: &str) -> Option<Assignment> {
        let family = if option.starts_with("commit=") {
            "commit"
        } else {
            of_scope(Scope::Mount)
                .find(|t| matches!(t.values, Values::OneOf(m) if m.contains(&option)))?
                .name
        };
        Some(Assignment::new(
            Setting::Mount {
                mount_point: mount_point.into(),
                family: family.into(),
            },
            option,
        ))
    }

    /// As `sinkrate tune apply` takes it: `vm.NAME=VALUE`, `queue:ATTR=VALUE`, ...
    pub fn argument(&self) -> String {
        self.setting.argument(&self.value)
    }

    /// Where the setting applies: the target's disk, device or mount, or the machine.
    pub fn scope(&self) -> Option<Scope> {
        match self.setting {
            Setting::Sysctl { .. } => Some(Scope::System),
            Setting::Queue { .. } => Some(Scope::Queue),
            Setting::Bdi { .. } => Some(Scope::Bdi),
            Setting::Mount { .. } => Some(Scope::Mount),
            Setting::File { .. } => None,
        }
    }

    /// The shell command that makes the change now, as a fix prints it.
    pub fn command(&self) -> String {
        match &self.setting {
            Setting::Sysctl { name } => {
                format!("sysctl -w {}={}", name.replace('/', "."), self.value)
            }
            Setting::Mount { mount_point, .. } => {
                format!("mount -o remount,{} {mount_point}", self.value)
            }
            Setting::File { path } => format!("write {path}"),
            other => format!("echo {} > {other}", self.value),
        }
    }
}

/// The commands that make `changes` now: consecutive sysctls in one `sysctl -w`.
pub fn commands(changes: &[Assignment]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut sysctls: Vec<String> = Vec::new();
    for c in changes {
        if let Setting::Sysctl { name } = &c.setting {
            sysctls.push(format!("{}={}", name.replace('/', "."), c.value));
            continue;
        }
        if !sysctls.is_empty() {
            out.push(format!("sysctl -w {}", sysctls.join(" ")));
            sysctls.clear();
        }
        out.push(c.command());
    }
    if !sysctls.is_empty() {
        out.push(format!("sysctl -w {}", sysctls.join(" ")));
    }
    out
}

/// Where a target directory's settings apply: its whole disk (queue attributes), its bdi
/// (per-device writeback limits) and its mount point (mount options).
#[derive(Debug, Clone, Copy, Default)]
pub struct Place<'a> {
    pub device: Option<&'a str>,
    pub bdi: Option<&'a str>,
    pub mount_point: Option<&'a str>,
}

/// A setting a user named that sinkrate does not take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSetting {
    pub text: String,
    pub why: String,
}

impl fmt::Display for BadSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}': {}", self.text, self.why)
    }
}

impl std::error::Error for BadSetting {}

/// A setting as a user names it, found in the table, before it is bound to a target.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub text: &'a str,
    pub tunable: &'static Tunable,
    /// What follows `=` (for a mount option, the option itself).
    pub value: &'a str,
}

impl<'a> Named<'a> {
    /// Finds `text` in the table: `vm.dirty_expire_centisecs=100`, `queue:scheduler=none`,
    /// `bdi:max_bytes=50M`, `mount:noatime`, `mount:commit=60`.
    pub fn parse(text: &'a str) -> Result<Named<'a>, BadSetting> {
        let bad = |why: String| BadSetting {
            text: text.to_string(),
            why,
        };
        if let Some(option) = text.strip_prefix(Scope::Mount.prefix()) {
            if let Some(fixed) = NOT_ON_REMOUNT.iter().find(|n| option.starts_with(*n)) {
                return Err(bad(format!(
                    "{fixed} cannot change on a remount: the filesystem keeps the value it was mounted with; put it in the device's /etc/fstab line and mount it again"
                )));
            }
            let family = if option.starts_with("commit=") {
                "commit"
            } else {
                of_scope(Scope::Mount)
                    .find(|t| matches!(t.values, Values::OneOf(m) if m.contains(&option)))
                    .map(|t| t.name)
                    .ok_or_else(|| {
                        bad(format!(
                            "not a mount option sinkrate changes (accepted: {}, commit=N)",
                            mount_options().join(", ")
                        ))
                    })?
            };
            let tunable = of_scope(Scope::Mount)
                .find(|t| t.name == family)
                .ok_or_else(|| bad(format!("mount option family {family}")))?;
            return Ok(Named {
                text,
                tunable,
                value: option,
            });
        }
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=VALUE (or mount:OPTION)".into()))?;
        if value.is_empty() {
            return Err(bad("the value is empty".into()));
        }
        for scope in [Scope::Queue, Scope::Bdi] {
            if let Some(attr) = name.strip_prefix(scope.prefix()) {
                let tunable = of_scope(scope).find(|t| t.name == attr).ok_or_else(|| {
                    bad(format!(
                        "not a {} sinkrate changes (accepted: {})",
                        match scope {
                            Scope::Queue => "queue attribute",
                            _ => "bdi attribute",
                        },
                        names(scope).join(", ")
                    ))
                })?;
                return Ok(Named {
                    text,
                    tunable,
                    value,
                });
            }
        }
        let tunable = of_scope(Scope::System)
            .find(|t| t.name == name)
            .ok_or_else(|| {
                bad(format!(
                    "not a setting sinkrate changes (accepted: {}, queue:ATTR=VALUE, bdi:ATTR=VALUE, mount:OPTION)",
                    names(Scope::System).join(", ")
                ))
            })?;
        Ok(Named {
            text,
            tunable,
            value,
        })
    }

    /// The setting at `place`, with its value checked and written as the kernel takes it.
    pub fn at(self, place: Place<'_>) -> Result<Assignment, BadSetting> {
        let bad = |why: String| BadSetting {
            text: self.text.to_string(),
            why,
        };
        let name = self.tunable.name;
        let value = checked(name, self.tunable.values, self.value).map_err(bad)?;
        let setting = match self.tunable.scope {
            Scope::System => Setting::Sysctl {
                name: name.replace('.', "/"),
            },
            Scope::Queue => Setting::Queue {
                device: place
                    .device
                    .ok_or_else(|| bad("no block device to apply it to".into()))?
                    .to_string(),
                attr: name.to_string(),
            },
            Scope::Bdi => Setting::Bdi {
                bdi: place
                    .bdi
                    .ok_or_else(|| {
                        bad("no bdi to apply it to: the target has no backing device of its own (tmpfs and other memory filesystems have none)".into())
                    })?
                    .to_string(),
                attr: name.to_string(),
            },
            Scope::Mount => Setting::Mount {
                mount_point: place
                    .mount_point
                    .ok_or_else(|| bad("no mount point to apply it to".into()))?
                    .to_string(),
                family: name.to_string(),
            },
        };
        Ok(Assignment { setting, value })
    }
}

/// A setting as a user names it, with the value to write, at `place`.
pub fn parse(text: &str, place: Place<'_>) -> Result<Assignment, BadSetting> {
    Named::parse(text)?.at(place)
}

/// `value` for tunable `name` as the kernel takes it, or why it is refused.
fn checked(name: &str, values: Values, value: &str) -> Result<String, String> {
    let whole = || {
        value
            .parse::<u64>()
            .map_err(|_| format!("{name} takes a whole number"))
    };
    let no_memory = |attr: &str| {
        format!("{attr}=0 leaves the device no dirty memory: every buffered write would wait for it (open the file O_DIRECT instead)")
    };
    Ok(match values {
        Values::Count => whole()?.to_string(),
        Values::Percent => match whole()? {
            v if v > 100 => return Err("a ratio is a percentage, 0 to 100".into()),
            v => v.to_string(),
        },
        Values::Bytes => {
            match whole()? {
                v if v < 2 * 4096 => return Err(
                    "the kernel takes at least two pages (8192 bytes); set the _ratio form for 0"
                        .into(),
                ),
                v => v.to_string(),
            }
        }
        Values::Share => match value.parse::<u64>() {
            Ok(0) => return Err(no_memory(name)),
            Ok(r) if r <= 100 => r.to_string(),
            _ => {
                return Err(format!(
                    "{name} is a percentage of the dirty limit, 1 to 100"
                ))
            }
        },
        Values::Size => {
            if value.starts_with('-') {
                return Err(format!("{name} takes a size, e.g. 50M"));
            }
            let zero = value
                .trim_end_matches(char::is_alphabetic)
                .parse::<f64>()
                .is_ok_and(|v| v == 0.0);
            if zero {
                return Err(no_memory(name));
            }
            match sinkrate_units::product::parse_size(value)? {
                0 => return Err(no_memory(name)),
                b => b.to_string(),
            }
        }
        Values::Flag => match value {
            "0" | "1" => value.to_string(),
            _ => return Err(format!("{name} is 0 or 1")),
        },
        Values::Word => value.to_string(),
        Values::OneOf(_) => value.to_string(),
        Values::CommitSeconds => {
            value
                .strip_prefix("commit=")
                .and_then(|s| s.parse::<u32>().ok())
                .ok_or_else(|| "commit= takes seconds, e.g. commit=60".to_string())?;
            value.to_string()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_say_what_is_accepted() {
        let a = parse("vm.dirty_expire_centisecs=100", Place::default()).expect("sysctl");
        assert_eq!(
            a.setting,
            Setting::Sysctl {
                name: "vm/dirty_expire_centisecs".into()
            }
        );
        assert_eq!(a.value, "100");
        let a = parse(
            "queue:scheduler=none",
            Place {
                device: Some("sda"),
                ..Place::default()
            },
        )
        .expect("queue");
        assert_eq!(a.setting.to_string(), "/sys/block/sda/queue/scheduler");
        let card = Place {
            mount_point: Some("/mnt/card"),
            bdi: Some("179:0"),
            ..Place::default()
        };
        let a = parse("mount:noatime", card).expect("mount");
        assert_eq!(Some(a.clone()), Assignment::mount("/mnt/card", "noatime"));
        assert_eq!(a.command(), "mount -o remount,noatime /mnt/card");
        let a = parse("mount:commit=60", card).expect("commit");
        assert_eq!(Some(a), Assignment::mount("/mnt/card", "commit=60"));
        let a = parse("bdi:max_bytes=50M", card).expect("bdi");
        assert_eq!(a.setting.to_string(), "/sys/class/bdi/179:0/max_bytes");
        assert_eq!(
            (a.argument(), a.value.as_str()),
            ("bdi:max_bytes=52428800".to_string(), "52428800")
        );
        assert_eq!(
            a.command(),
            "echo 52428800 > /sys/class/bdi/179:0/max_bytes"
        );
        let e = parse("bdi:strict_limit=1", Place::default())
            .expect_err("no bdi")
            .to_string();
        assert!(e.contains("tmpfs"), "{e}");
        for (bad, says) in [
            ("vm.swappiness=10", "accepted: vm.dirty_expire_centisecs"),
            ("vm.dirty_ratio=150", "0 to 100"),
            ("vm.dirty_bytes=0", "at least two pages"),
            ("vm.dirty_bytes=lots", "whole number"),
            ("queue:rotational=0", "accepted: scheduler"),
            ("queue:nr_requests=many", "whole number"),
            ("mount:data=writeback", "cannot change on a remount"),
            ("mount:dirsync", "cannot change on a remount"),
            ("mount:ro", "accepted: noatime"),
            ("mount:commit=soon", "takes seconds"),
            ("dirty", "NAME=VALUE"),
            ("vm.dirty_bytes=", "empty"),
            ("bdi:max_bytes=0", "no dirty memory"),
            ("bdi:max_bytes=0M", "no dirty memory"),
            ("bdi:max_bytes=-5M", "takes a size"),
            ("bdi:max_bytes=lots", "not a size"),
            ("bdi:max_ratio=0", "no dirty memory"),
            ("bdi:max_ratio=101", "1 to 100"),
            ("bdi:strict_limit=2", "0 or 1"),
            (
                "bdi:min_ratio=5",
                "accepted: strict_limit, max_bytes, max_ratio",
            ),
        ] {
            let place = Place {
                device: Some("sda"),
                bdi: Some("8:0"),
                mount_point: Some("/mnt"),
            };
            let e = parse(bad, place).expect_err(bad).to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn every_tunable_parses_as_it_is_listed_and_renders_as_its_command() {
        let place = Place {
            device: Some("sda"),
            bdi: Some("8:0"),
            mount_point: Some("/mnt"),
        };
        for t in TUNABLES {
            let text = match t.values {
                Values::OneOf(members) => format!("mount:{}", members[0]),
                Values::CommitSeconds => "mount:commit=30".to_string(),
                Values::Word => format!("{}{}=none", t.scope.prefix(), t.name),
                _ => format!("{}{}=16384", t.scope.prefix(), t.name)
                    .replace("strict_limit=16384", "strict_limit=1")
                    .replace("ratio=16384", "ratio=10"),
            };
            let a = parse(&text, place).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(a.scope(), Some(t.scope), "{text}");
            // The argument a fix prints is the one the parser takes back.
            assert_eq!(parse(&a.argument(), place).as_ref(), Ok(&a), "{text}");
            assert!(help_list().contains(t.name), "{} not in --help", t.name);
        }
    }

    #[test]
    fn consecutive_sysctls_are_one_command() {
        let changes = [
            Assignment::sysctl("vm.dirty_expire_centisecs", 100),
            Assignment::sysctl("vm.dirty_writeback_centisecs", 100),
            Assignment::queue("sda", "max_sectors_kb", 1024),
        ];
        assert_eq!(
            commands(&changes),
            [
                "sysctl -w vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=100",
                "echo 1024 > /sys/block/sda/queue/max_sectors_kb"
            ]
        );
        let json = serde_json::to_string(&changes[2]).expect("json");
        assert_eq!(
            json,
            r#"[{"kind":"queue","device":"sda","attr":"max_sectors_kb"},"1024"]"#
        );
        assert_eq!(
            serde_json::from_str::<Assignment>(&json).expect("back"),
            changes[2]
        );
    }
}
