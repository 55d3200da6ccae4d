//! The settings sinkrate may change, how a user names them, and how each is read and written:
//! sysctls under /proc/sys, block-queue attributes under /sys/block/DEV/queue, and mount
//! options changed by a remount.

use std::path::PathBuf;

use crate::Error;

/// The sysctls sinkrate changes: the page cache's writeback knobs.
pub const SYSCTLS: &[&str] = &[
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
];

/// The block-queue attributes sinkrate changes.
pub const QUEUE_ATTRS: &[&str] = &[
    "scheduler",
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "write_cache",
];

/// The per-device writeback limits sinkrate changes (/sys/class/bdi/BDI/ATTR): the device's
/// share of the dirty limit, as bytes or a percentage, and whether it holds to it always.
pub const BDI_ATTRS: &[&str] = &["strict_limit", "max_bytes", "max_ratio"];

/// Mount options a remount can change, by family: applying one member replaces the member
/// in force, and restoring writes that member back.
pub const MOUNT_FAMILIES: &[(&str, &[&str])] = &[
    ("atime", &["noatime", "relatime", "strictatime"]),
    ("sync", &["sync", "async"]),
    ("discard", &["discard", "nodiscard"]),
    ("barrier", &["barrier", "nobarrier"]),
];

/// Options that a remount cannot change: the filesystem keeps the value it was mounted with.
pub const NOT_ON_REMOUNT: &[&str] = &[
    "data=",
    "journal_checksum",
    "journal_async_commit",
    // Not among the flags a remount changes (MS_RMT_MASK): the kernel keeps the one in force.
    "dirsync",
];

/// Where the settings live: the live system, or a tree standing in for its /proc/sys and
/// /sys/block in tests (mount options are live only).
#[derive(Debug, Clone)]
pub struct Host {
    root: sinkrate_sys::SysRoot,
}

impl Host {
    pub fn live() -> Host {
        Host::at(sinkrate_sys::SysRoot::live())
    }

    pub fn at(root: sinkrate_sys::SysRoot) -> Host {
        Host { root }
    }

    /// Whether the kernel has this setting (a bdi attribute of a kernel before 6.2 is not).
    pub fn has(&self, s: &Setting) -> bool {
        match s {
            Setting::Mount { .. } | Setting::File { .. } => true,
            _ => self.path(s).is_some_and(|p| p.exists()),
        }
    }

    /// A sysctl's file under /proc/sys (`vm/dirty_bytes`).
    pub fn sysctl_path(&self, name: &str) -> PathBuf {
        self.root.host_path(&format!("/proc/sys/{name}"))
    }

    fn path(&self, s: &Setting) -> Option<PathBuf> {
        match s {
            Setting::Sysctl { name } => Some(self.sysctl_path(name)),
            Setting::Queue { device, attr } => Some(sinkrate_sys::device::queue_attr_path(
                &self.root, device, attr,
            )),
            Setting::Bdi { bdi, attr } => {
                Some(self.root.host_path(&format!("/sys/class/bdi/{bdi}/{attr}")))
            }
            Setting::Mount { .. } => None,
            Setting::File { path } => Some(PathBuf::from(path)),
        }
    }

    /// The value in force, as it would be written back: a queue's scheduler without the
    /// brackets, a mount family's member in force.
    pub fn read(&self, s: &Setting) -> Result<String, Error> {
        if let Setting::Mount {
            mount_point,
            family,
        } = s
        {
            return mount_value(mount_point, family);
        }
        let path = self.path(s).ok_or_else(|| Error::Unknown(s.to_string()))?;
        if let Setting::File { .. } = s {
            return match std::fs::read_to_string(&path) {
                Ok(text) => Ok(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ABSENT.to_string()),
                Err(e) => Err(Error::Io(path, e)),
            };
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        let text = text.trim();
        Ok(match s {
            Setting::Queue { attr, .. } if attr == "scheduler" => {
                bracketed(text).unwrap_or(text).to_string()
            }
            _ => text.to_string(),
        })
    }

    /// Writes `value`; the kernel's refusal comes back with what it accepts where that is
    /// knowable (a queue's schedulers).
    pub fn write(&self, s: &Setting, value: &str) -> Result<(), Error> {
        if let Setting::Mount { mount_point, .. } = s {
            return remount(mount_point, value);
        }
        let path = self.path(s).ok_or_else(|| Error::Unknown(s.to_string()))?;
        if let Setting::File { .. } = s {
            return write_file(&path, value);
        }
        std::fs::write(&path, value).map_err(|e| {
            let accepted = match s {
                Setting::Queue { attr, .. } if attr == "scheduler" => {
                    std::fs::read_to_string(&path).ok().map(|t| {
                        format!(
                            " (accepted: {})",
                            t.split_whitespace()
                                .map(|w| w.trim_matches(|c| c == '[' || c == ']'))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                }
                _ => None,
            };
            Error::Refused {
                setting: s.to_string(),
                value: value.to_string(),
                why: format!("{e}{}", accepted.unwrap_or_default()),
            }
        })
    }
}

/// A configuration file replaced whole through a temporary file and a rename (or removed,
/// for [`ABSENT`]), readable by all as /etc's files are.
fn write_file(path: &std::path::Path, value: &str) -> Result<(), Error> {
    let io = |e| Error::Io(path.to_path_buf(), e);
    if value == ABSENT {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        };
    }
    // A file that is there keeps its mode (an fstab or rules file made private stays so).
    sinkrate_platform::durable::replace(path, value.as_bytes(), 0o644).map_err(io)
}

fn bracketed(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

/// The mount on top at exactly `mount_point`, asked of the system layer.
fn mount_at(mount_point: &str) -> Result<sinkrate_procparse::mountinfo::Mount, Error> {
    sinkrate_sys::mounts::stacked_at(&sinkrate_sys::SysRoot::live(), mount_point)
        .pop()
        .ok_or_else(|| Error::Unknown(format!("{mount_point} is not a mount point")))
}

/// The member of `family` in force at `mount_point` (`relatime`, `async`, `commit=5`).
fn mount_value(mount_point: &str, family: &str) -> Result<String, Error> {
    let m = mount_at(mount_point)?;
    let options: Vec<&str> = m
        .mount_options
        .iter()
        .chain(m.super_options.iter())
        .map(String::as_str)
        .collect();
    if family == "commit" {
        // Absent means the filesystem's default; commit=0 asks for it again.
        return Ok(options
            .iter()
            .find(|o| o.starts_with("commit="))
            .map(|o| o.to_string())
            .unwrap_or_else(|| "commit=0".into()));
    }
    let members = MOUNT_FAMILIES
        .iter()
        .find(|(f, _)| *f == family)
        .map(|(_, m)| *m)
        .ok_or_else(|| Error::Unknown(format!("mount option family {family}")))?;
    if let Some(found) = options.iter().find(|o| members.contains(o)) {
        return Ok(found.to_string());
    }
    // What the kernel does when none is given.
    Ok(match family {
        "atime" => "strictatime",
        "sync" => "async",
        "discard" => "nodiscard",
        _ => "barrier",
    }
    .to_string())
}

fn remount(mount_point: &str, option: &str) -> Result<(), Error> {
    // mount(8) passes "relatime" to the kernel as no atime flag at all (it is the default),
    // and a remount without atime flags keeps noatime: going through strictatime first
    // clears it.
    if option == "relatime" {
        remount_once(mount_point, "strictatime")?;
    }
    remount_once(mount_point, option)
}

fn remount_once(mount_point: &str, option: &str) -> Result<(), Error> {
    let options = format!("remount,{option}");
    let out = std::process::Command::new("mount")
        .args(["-o", &options])
        .arg(mount_point)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::Io(PathBuf::from("mount"), e))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(Error::Refused {
            setting: format!("{mount_point} mount options"),
            value: option.to_string(),
            why: err
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        })
    }
}

/// Where the settings of a target directory apply: its whole disk (queue attributes), its
/// bdi (per-device writeback limits) and its mount point (mount options).
#[derive(Debug, Clone, Copy, Default)]
pub struct Place<'a> {
    pub device: Option<&'a str>,
    pub bdi: Option<&'a str>,
    pub mount_point: Option<&'a str>,
}

/// A setting as a user names it, with the value to write: `vm.dirty_expire_centisecs=100`,
/// `queue:scheduler=none`, `bdi:max_bytes=50M`, `mount:noatime`, `mount:commit=60`. Queue,
/// bdi and mount settings apply where `place` says (those of the target directory).
pub fn parse(text: &str, place: Place<'_>) -> Result<(Setting, String), Error> {
    let Place {
        device,
        bdi,
        mount_point,
    } = place;
    let bad = |why: String| Error::BadSetting {
        text: text.to_string(),
        why,
    };
    if let Some(option) = text.strip_prefix("mount:") {
        let mp = mount_point.ok_or_else(|| bad("no mount point to apply it to".into()))?;
        if let Some(fixed) = NOT_ON_REMOUNT.iter().find(|n| option.starts_with(*n)) {
            return Err(bad(format!(
                "{fixed} cannot change on a remount: the filesystem keeps the value it was mounted with; put it in the device's /etc/fstab line and mount it again"
            )));
        }
        if let Some(secs) = option.strip_prefix("commit=") {
            secs.parse::<u32>()
                .map_err(|_| bad("commit= takes seconds, e.g. commit=60".into()))?;
            return Ok((
                Setting::Mount {
                    mount_point: mp.to_string(),
                    family: "commit".into(),
                },
                option.to_string(),
            ));
        }
        let family = MOUNT_FAMILIES
            .iter()
            .find(|(_, members)| members.contains(&option))
            .map(|(f, _)| f.to_string())
            .ok_or_else(|| {
                bad(format!(
                    "not a mount option sinkrate changes (accepted: {}, commit=N)",
                    MOUNT_FAMILIES
                        .iter()
                        .flat_map(|(_, m)| m.iter())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        return Ok((
            Setting::Mount {
                mount_point: mp.to_string(),
                family,
            },
            option.to_string(),
        ));
    }
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| bad("expected NAME=VALUE (or mount:OPTION)".into()))?;
    if value.is_empty() {
        return Err(bad("the value is empty".into()));
    }
    if let Some(attr) = name.strip_prefix("bdi:") {
        let value = bdi_value(attr, value).map_err(bad)?;
        let bdi = bdi.ok_or_else(|| {
            bad("no bdi to apply it to: the target has no backing device of its own (tmpfs and other memory filesystems have none)".into())
        })?;
        return Ok((
            Setting::Bdi {
                bdi: bdi.to_string(),
                attr: attr.to_string(),
            },
            value,
        ));
    }
    if let Some(attr) = name.strip_prefix("queue:") {
        if !QUEUE_ATTRS.contains(&attr) {
            return Err(bad(format!(
                "not a queue attribute sinkrate changes (accepted: {})",
                QUEUE_ATTRS.join(", ")
            )));
        }
        if attr != "scheduler" && attr != "write_cache" && value.parse::<u64>().is_err() {
            return Err(bad(format!("{attr} takes a whole number")));
        }
        let dev = device.ok_or_else(|| bad("no block device to apply it to".into()))?;
        return Ok((
            Setting::Queue {
                device: dev.to_string(),
                attr: attr.to_string(),
            },
            value.to_string(),
        ));
    }
    if !SYSCTLS.contains(&name) {
        return Err(bad(format!(
            "not a setting sinkrate changes (accepted: {}, queue:ATTR=VALUE, bdi:ATTR=VALUE, mount:OPTION)",
            SYSCTLS.join(", ")
        )));
    }
    value
        .parse::<u64>()
        .map_err(|_| bad(format!("{name} takes a whole number")))?;
    if name.ends_with("_ratio") && value.parse::<u64>().is_ok_and(|v| v > 100) {
        return Err(bad("a ratio is a percentage, 0 to 100".into()));
    }
    if name.ends_with("_bytes") && value.parse::<u64>().is_ok_and(|v| v < 2 * 4096) {
        return Err(bad(
            "the kernel takes at least two pages (8192 bytes); set the _ratio form for 0".into(),
        ));
    }
    Ok((
        Setting::Sysctl {
            name: name.replace('.', "/"),
        },
        value.to_string(),
    ))
}

/// A bdi attribute's value as the kernel takes it (`max_bytes` in bytes, from `50M`), or why
/// it is refused.
fn bdi_value(attr: &str, value: &str) -> Result<String, String> {
    match attr {
        "strict_limit" => match value {
            "0" | "1" => Ok(value.to_string()),
            _ => Err("strict_limit is 0 or 1".into()),
        },
        "max_ratio" => match value.parse::<u64>() {
            Ok(0) => Err("max_ratio=0 leaves the device no dirty memory: every buffered write would wait for it (open the file O_DIRECT instead)".into()),
            Ok(r) if r <= 100 => Ok(r.to_string()),
            _ => Err("max_ratio is a percentage of the dirty limit, 1 to 100".into()),
        },
        "max_bytes" => {
            if value.starts_with('-') {
                return Err("max_bytes takes a size, e.g. 50M".into());
            }
            let zero = value
                .trim_end_matches(char::is_alphabetic)
                .parse::<f64>()
                .is_ok_and(|v| v == 0.0);
            if zero || sinkrate_units::product::parse_size(value)? == 0 {
                return Err("max_bytes=0 leaves the device no dirty memory: every buffered write would wait for it (open the file O_DIRECT instead)".into());
            }
            sinkrate_units::product::parse_size(value).map(|b| b.to_string())
        }
        _ => Err(format!(
            "not a bdi attribute sinkrate changes (accepted: {})",
            BDI_ATTRS.join(", ")
        )),
    }
}

use sinkrate_model::settings::{Setting, ABSENT};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_say_what_is_accepted() {
        let (s, v) = parse("vm.dirty_expire_centisecs=100", Place::default()).expect("sysctl");
        assert_eq!(
            s,
            Setting::Sysctl {
                name: "vm/dirty_expire_centisecs".into()
            }
        );
        assert_eq!(v, "100");
        let (s, _) = parse(
            "queue:scheduler=none",
            Place {
                device: Some("sda"),
                ..Place::default()
            },
        )
        .expect("queue");
        assert_eq!(s.to_string(), "/sys/block/sda/queue/scheduler");
        let (s, v) = parse(
            "mount:noatime",
            Place {
                mount_point: Some("/mnt/card"),
                ..Place::default()
            },
        )
        .expect("mount");
        assert_eq!(
            s,
            Setting::Mount {
                mount_point: "/mnt/card".into(),
                family: "atime".into()
            }
        );
        assert_eq!(v, "noatime");
        let card = Place {
            bdi: Some("179:0"),
            ..Place::default()
        };
        let (s, v) = parse("bdi:max_bytes=50M", card).expect("bdi");
        assert_eq!(s.to_string(), "/sys/class/bdi/179:0/max_bytes");
        assert_eq!(
            (s.argument(&v), v.as_str()),
            ("bdi:max_bytes=52428800".to_string(), "52428800")
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
            ("mount:data=writeback", "cannot change on a remount"),
            ("mount:dirsync", "cannot change on a remount"),
            ("mount:ro", "accepted: noatime"),
            ("dirty", "NAME=VALUE"),
            ("bdi:max_bytes=0", "no dirty memory"),
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
    fn a_scheduler_reads_as_the_one_in_brackets() {
        assert_eq!(bracketed("mq-deadline [none] bfq"), Some("none"));
        assert_eq!(bracketed("none"), None);
    }
}
