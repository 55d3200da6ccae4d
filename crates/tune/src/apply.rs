//! `sinkrate tune apply | restore | status` as a library session: settings named by a user,
//! resolved against the target directory, applied or restored through the journal, and a
//! typed report of what changed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sinkrate_sys::root::SysRoot;

use sinkrate_model::settings::Setting;
use sinkrate_model::settings::{Change, Held, Mode, Outcome, TuneReport};
use sinkrate_model::tunables::{Assignment, Named, Place, Scope};
use sinkrate_settings::{Error, Journal};

/// Where queue and mount settings apply: the target directory's mount and block device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub path: String,
    pub mount_point: String,
    /// The whole disk whose queue serves the mount (`sda` for `sda1`, `loop3`).
    pub device: Option<String>,
    /// The bdi its dirty pages count against (`8:0`, `0:45` for FUSE); None for tmpfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdi: Option<String>,
    /// The mount point or device was named by the user (`--mount-point`, `--device`), not
    /// found from the path: a change to the system's own disk is then allowed.
    pub named: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ApplyConfig {
    /// The settings asked for, by name or from findings' fixes.
    pub settings: Vec<Requested>,
    /// The directory whose mount and device queue and mount settings apply to.
    pub path: PathBuf,
    pub device: Option<String>,
    pub mount_point: Option<String>,
    pub dry_run: bool,
    /// Also write the persistent forms: sysctl.d, a udev rule; the fstab line is printed.
    pub persist: bool,
    /// `--persist-fstab`: also edit this fstab's line for the mount (after a backup), once
    /// the kernel has taken the options on a remount.
    pub fstab: Option<PathBuf>,
}

/// A setting asked for: as a user names it (`vm.dirty_expire_centisecs=100`,
/// `mount:noatime`), bound to the target directory's device and mount; or as a finding's fix
/// carries it, typed and bound to what the audit found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    Named(String),
    Fixed(Assignment),
}

/// A request once its name is found in the table.
enum Asked<'a> {
    Named(Named<'a>),
    Fixed(Assignment),
}

/// The mount and device under `path`, or the ones named.
pub fn target(
    path: &Path,
    device: Option<&str>,
    mount_point: Option<&str>,
) -> Result<Target, Error> {
    let canonical = std::fs::canonicalize(path).map_err(|e| Error::Io(path.to_path_buf(), e))?;
    let root = SysRoot::live();
    let t = sinkrate_sys::mounts::resolve(&root, &canonical.to_string_lossy())
        .map_err(|e| Error::Unknown(format!("{}: {e}", path.display())))?;
    let found_device = sinkrate_sys::device::sysfs_dir(&root, t.major, t.minor, &t.source)
        .map(|sys| sinkrate_sys::device::read(&root, &sys).disk);
    let bdi = match device {
        Some(d) => sinkrate_sys::bdi::of_disk(&root, d),
        None => sinkrate_sys::bdi::of_mount(&root, t.major, t.minor),
    };
    Ok(Target {
        path: canonical.display().to_string(),
        mount_point: mount_point.map(str::to_string).unwrap_or(t.mount_point),
        bdi,
        device: device.map(str::to_string).or(found_device),
        named: device.is_some() || mount_point.is_some(),
    })
}

/// Whether `mount_point` or `device` carries the system (`/`) or the journal's directory:
/// changing those by accident could stall the whole machine.
pub fn holds_system(t: &Target, journal: &Path) -> Option<String> {
    let root = SysRoot::live();
    let system_paths = [Path::new("/"), journal.parent().unwrap_or(Path::new("/"))];
    for p in system_paths {
        let Ok(m) = sinkrate_sys::mounts::resolve(&root, &p.to_string_lossy()) else {
            continue;
        };
        if m.mount_point == t.mount_point {
            return Some(format!("{} holds {}", t.mount_point, p.display()));
        }
        let disk = sinkrate_sys::device::sysfs_dir(&root, m.major, m.minor, &m.source)
            .map(|sys| sinkrate_sys::device::read(&root, &sys).disk);
        if disk.is_some() && disk == t.device {
            return Some(format!(
                "/dev/{} holds {}",
                t.device.as_deref().unwrap_or_default(),
                p.display()
            ));
        }
    }
    None
}

/// The settings named in `cfg`, checked, with the value each replaces.
pub fn plan(cfg: &ApplyConfig, journal: &Journal) -> Result<Vec<Change>, Error> {
    // Every name is checked against the table before anything is resolved or read.
    let asked: Vec<(String, Asked)> = cfg
        .settings
        .iter()
        .map(|r| match r {
            Requested::Named(text) => Named::parse(text)
                .map(|n| (text.clone(), Asked::Named(n)))
                .map_err(Error::from),
            Requested::Fixed(a) => Ok((a.argument(), Asked::Fixed(a.clone()))),
        })
        .collect::<Result<_, _>>()?;
    let needs_target = asked.iter().any(|(_, a)| match a {
        Asked::Named(n) => n.tunable.scope.needs_target(),
        Asked::Fixed(a) => a.scope().is_some_and(Scope::needs_target),
    });
    let t = if needs_target {
        Some(target(
            &cfg.path,
            cfg.device.as_deref(),
            cfg.mount_point.as_deref(),
        )?)
    } else {
        None
    };
    let mut changes = Vec::new();
    for (text, asked) in asked {
        let Assignment { setting, value: to } = match asked {
            Asked::Named(n) => n.at(Place {
                device: t.as_ref().and_then(|t| t.device.as_deref()),
                bdi: t.as_ref().and_then(|t| t.bdi.as_deref()),
                mount_point: t.as_ref().map(|t| t.mount_point.as_str()),
            })?,
            Asked::Fixed(a) => a,
        };
        let text = &text;
        if let (Some(t), Setting::Queue { .. } | Setting::Bdi { .. } | Setting::Mount { .. }) =
            (&t, &setting)
        {
            if !t.named {
                if let Some(why) = holds_system(t, journal.path()) {
                    return Err(Error::BadSetting {
                        text: text.to_string(),
                        why: format!(
                            "{why}: a queue, bdi or mount change there is made only when asked for by name (--device or --mount-point)"
                        ),
                    });
                }
            }
        }
        if let Setting::Bdi { bdi, attr } = &setting {
            check_bdi(text, bdi, attr, &to, journal)?;
        }
        if let Setting::Queue { device, attr } = &setting {
            if attr == "max_sectors_kb" {
                let hw = journal.host().read(&Setting::Queue {
                    device: device.clone(),
                    attr: "max_hw_sectors_kb".into(),
                });
                if let (Ok(hw), Ok(want)) = (hw, to.parse::<u64>()) {
                    if hw.parse::<u64>().is_ok_and(|hw| want > hw) {
                        return Err(Error::BadSetting {
                            text: text.to_string(),
                            why: format!("at most max_hw_sectors_kb = {hw} for {device}"),
                        });
                    }
                }
            }
        }
        let from = journal.host().read(&setting)?;
        changes.push(Change { setting, from, to });
    }
    Ok(changes)
}

/// A bdi change this kernel can make, within this machine's memory.
fn check_bdi(text: &str, bdi: &str, attr: &str, to: &str, journal: &Journal) -> Result<(), Error> {
    let bad = |why: String| Error::BadSetting {
        text: text.to_string(),
        why,
    };
    let setting = Setting::Bdi {
        bdi: bdi.to_string(),
        attr: attr.to_string(),
    };
    if !journal.host().has(&setting) {
        let kernel = sinkrate_sys::kernel_release().unwrap_or_else(|| "?".into());
        let dirty = sinkrate_sys::host::dirty_threshold_bytes();
        let fallback = match (attr, to.parse::<u64>().ok(), dirty) {
            ("max_bytes", Some(bytes), Some(limit)) if limit > 0 => format!(
                "; bdi:max_ratio={} gives the device that share of the dirty limit now in force ({} bytes)",
                (bytes * 100).div_ceil(limit).clamp(1, 100),
                limit
            ),
            ("max_bytes", ..) => "; bdi:max_ratio=N caps the device at N% of the dirty limit".into(),
            _ => String::new(),
        };
        return Err(bad(format!(
            "this kernel ({kernel}) has no /sys/class/bdi/{bdi}/{attr} (Linux 6.2 added it){fallback}"
        )));
    }
    if attr == "max_bytes" {
        let total = sinkrate_sys::host::read_meminfo().mem_total_bytes;
        if let (Some(total), Ok(bytes)) = (total, to.parse::<u64>()) {
            if bytes > total {
                return Err(bad(format!(
                    "{bytes} bytes is more than this machine's memory ({total} bytes)"
                )));
            }
        }
    }
    Ok(())
}

/// What sinkrate holds changed now.
pub fn held(journal: &Journal) -> Result<Vec<Held>, Error> {
    let entries = journal.entries()?;
    // Each setting read once.
    let values: Vec<Option<String>> = entries
        .iter()
        .map(|e| journal.host().read(&e.setting).ok())
        .collect();
    let in_force = |i: usize| entries[i].written.is_some() && values[i] == entries[i].written;
    Ok(entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            // max_bytes reads as the kernel's ratio times a dirty limit that follows free
            // memory: whether it is still sinkrate's is told by the ratio it derives from.
            let exact = match &entry.setting {
                Setting::Bdi { bdi, attr } if attr == "max_bytes" => entries.iter().position(|e| {
                    matches!(&e.setting, Setting::Bdi { bdi: b, attr: a }
                        if b == bdi && (a == "max_ratio_fine" || a == "max_ratio"))
                }),
                _ => None,
            };
            Held {
                in_force: in_force(exact.unwrap_or(i)),
                running: journal.is_live(entry),
                now: values[i].clone(),
                entry: entry.clone(),
            }
        })
        .collect())
}

pub fn apply(cfg: &ApplyConfig, journal: &Journal) -> Result<TuneReport, Error> {
    // A name that is not a setting is refused before any work: before a killed run's
    // changes are put back too, which would otherwise be done by a command that then fails.
    for requested in &cfg.settings {
        if let Requested::Named(text) = requested {
            Named::parse(text)?;
        }
    }
    let recovered = if cfg.dry_run {
        Outcome::default()
    } else {
        journal.recover()?
    };
    let mut changes = plan(cfg, journal)?;
    let mut to_keep = Vec::new();
    if cfg.persist || cfg.fstab.is_some() {
        let (files, lines) = persistent_forms(&changes, journal, cfg.fstab.is_none())?;
        changes.extend(files);
        to_keep = lines;
    }
    let as_list = |changes: &[Change]| -> Vec<Assignment> {
        changes
            .iter()
            .map(|c| Assignment::new(c.setting.clone(), c.to.clone()))
            .collect()
    };
    let mut not_as_asked = Vec::new();
    if !cfg.dry_run {
        let entries = journal.apply(&as_list(&changes), Mode::Applied)?;
        // What the kernel holds after the write, not what was asked.
        for c in changes.iter_mut() {
            let held = entries
                .iter()
                .find(|e| e.setting == c.setting)
                .and_then(|e| e.written.clone());
            if let Some(held) = held.filter(|h| *h != c.to) {
                let why = match &c.setting {
                    Setting::Bdi { attr, .. } if attr == "max_bytes" => {
                        " (it keeps the device's share of the dirty limit in millionths, so max_bytes reads the share times the limit of the moment, which follows free memory)"
                    }
                    _ => "",
                };
                not_as_asked.push(format!(
                    "{}: the kernel holds {held}, not the {} asked for{why}",
                    c.setting, c.to
                ));
                c.to = held;
            }
        }
    }
    // fstab only after the remount took the options: a line the kernel refuses would leave
    // the device unmounted at the next boot.
    if let Some(fstab) = &cfg.fstab {
        match fstab_changes(&changes, fstab, journal)? {
            Ok(edits) => {
                if !cfg.dry_run && !edits.is_empty() {
                    journal.apply(&as_list(&edits), Mode::Applied)?;
                }
                changes.extend(edits);
            }
            Err(why) => to_keep.push(why),
        }
    }
    Ok(TuneReport {
        dry_run: cfg.dry_run,
        recovered,
        changes,
        held: held(journal)?,
        to_keep,
        not_as_asked,
        ..TuneReport::default()
    })
}

/// The files that make `changes` last across a reboot (sysctl.d, a udev rule), as changes
/// of their own, and the fstab lines a user must edit by hand for mount options.
fn persistent_forms(
    changes: &[Change],
    journal: &Journal,
    fstab_lines: bool,
) -> Result<(Vec<Change>, Vec<String>), Error> {
    use sinkrate_settings::persist;
    let mut files = Vec::new();
    let sysctls: Vec<(String, String)> = changes
        .iter()
        .filter_map(|c| match &c.setting {
            Setting::Sysctl { name } => Some((name.replace('/', "."), c.to.clone())),
            _ => None,
        })
        .collect();
    let file_change = |path: &str, new: &dyn Fn(&str) -> String| -> Result<Change, Error> {
        sinkrate_settings::setting::replaceable(Path::new(path))?;
        let setting = Setting::File { path: path.into() };
        let from = journal.host().read(&setting)?;
        let base = if from == sinkrate_model::settings::ABSENT {
            ""
        } else {
            from.as_str()
        };
        Ok(Change {
            to: new(base),
            from,
            setting,
        })
    };
    let mut notes = Vec::new();
    let mut notes_for_bdi = Vec::new();
    // A directory that is not there means nothing on this system reads such files: say so
    // rather than make it.
    let has_dir = |file: &str, what: &str, notes: &mut Vec<String>| {
        let dir = Path::new(file).parent().unwrap_or(Path::new("/"));
        if dir.is_dir() {
            true
        } else {
            notes.push(format!(
                "{} does not exist, so nothing here reads {what}: these last until reboot",
                dir.display()
            ));
            false
        }
    };
    if !sysctls.is_empty()
        && has_dir(
            sinkrate_sys::sysctl_conf::FILE,
            "sysctl.d files",
            &mut notes,
        )
    {
        let pairs: Vec<(&str, String)> = sysctls
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        files.push(file_change(sinkrate_sys::sysctl_conf::FILE, &|text| {
            sinkrate_sys::sysctl_conf::merge_sysctl_conf(text, &pairs)
        })?);
    }
    // A udev rule sets a disk's attributes when it appears: its queue's, and through the
    // disk's bdi link its writeback limits. A bdi with no disk (FUSE) has no rule to match.
    let root = SysRoot::live();
    let mut queues: Vec<(String, String, &str)> = Vec::new();
    for c in changes {
        match &c.setting {
            Setting::Queue { device, attr } => {
                queues.push((device.clone(), format!("queue/{attr}"), c.to.as_str()))
            }
            Setting::Bdi { bdi, attr } => match sinkrate_sys::bdi::disk_of(&root, bdi) {
                Some(disk) => queues.push((disk, format!("bdi/{attr}"), c.to.as_str())),
                None => notes_for_bdi.push(format!(
                    "{}: no disk under it for a udev rule to match: this lasts until reboot",
                    c.setting
                )),
            },
            _ => {}
        }
    }
    if !queues.is_empty() && has_dir(persist::UDEV_FILE, "udev rules", &mut notes) {
        files.push(file_change(persist::UDEV_FILE, &|text| {
            queues.iter().fold(text.to_string(), |acc, (d, a, v)| {
                persist::merge_udev_rule(&acc, d, a, v)
            })
        })?);
    }
    notes.append(&mut notes_for_bdi);
    notes.extend(changes
        .iter()
        .filter(|_| fstab_lines)
        .filter_map(|c| match &c.setting {
            Setting::Mount { mount_point, family } => Some(format!(
                "/etc/fstab, the line for {mount_point}: use {} in place of the {family} option in force ({})",
                c.to, c.from
            )),
            _ => None,
        }));
    Ok((files, notes))
}

/// The number of errors `findmnt --verify` finds in an fstab, or None without findmnt.
fn fstab_errors(path: &Path) -> Option<u64> {
    let out = std::process::Command::new("findmnt")
        .args(["--verify", "--tab-file"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("no errors") {
        return Some(0);
    }
    // "0 parse errors, 1 error, 0 warnings"
    let summary = text.lines().last()?;
    Some(
        summary
            .split(',')
            .filter(|part| part.contains("error"))
            .filter_map(|part| part.split_whitespace().next()?.parse::<u64>().ok())
            .sum(),
    )
}

/// The edit of `fstab` that makes the mount changes among `changes` last, with a backup
/// of the file beside it, as changes of their own (restore puts both back); or why fstab
/// is not edited (no line for the mount, an fstab the edit would break).
fn fstab_changes(
    changes: &[Change],
    fstab: &Path,
    journal: &Journal,
) -> Result<Result<Vec<Change>, String>, Error> {
    let mounts: Vec<(&str, &str, &str)> = changes
        .iter()
        .filter_map(|c| match &c.setting {
            Setting::Mount {
                mount_point,
                family,
            } => Some((mount_point.as_str(), family.as_str(), c.to.as_str())),
            _ => None,
        })
        .collect();
    if mounts.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let path = fstab.display().to_string();
    let backup_path = format!("{path}.sinkrate-backup");
    for file in [fstab, Path::new(&backup_path)] {
        sinkrate_settings::setting::replaceable(file)?;
    }
    let file = Setting::File { path: path.clone() };
    let old = journal.host().read(&file)?;
    if old == sinkrate_model::settings::ABSENT {
        return Ok(Err(format!("{path} does not exist: nothing edited")));
    }
    let mut new = old.clone();
    for (mount_point, family, value) in &mounts {
        match sinkrate_settings::persist::merge_fstab(&new, mount_point, family, value) {
            Some(text) => new = text,
            None => {
                return Ok(Err(format!(
                    "{path} has no line for {mount_point}: nothing edited; add one with the option {value}"
                )))
            }
        }
    }
    if new == old {
        return Ok(Ok(Vec::new()));
    }
    // The edited file checked as a whole before it replaces the real one; the copy made
    // exclusively (nothing planted at its name in the shared temporary directory is opened)
    // and removed only while it is still the file made here.
    let scratch = std::env::temp_dir().join(format!("sinkrate-fstab-{}", std::process::id()));
    let made = sinkrate_sys::owned::create_new(&scratch, std::fs::OpenOptions::new().write(true))
        .and_then(|mut f| std::io::Write::write_all(&mut f, new.as_bytes()));
    if let Err(e) = made {
        let _ = sinkrate_sys::owned::remove(&scratch);
        return Err(Error::Io(scratch, e));
    }
    let (before, after) = (fstab_errors(fstab), fstab_errors(&scratch));
    let _ = sinkrate_sys::owned::remove(&scratch);
    match (before, after) {
        (Some(b), Some(a)) if a > b => {
            return Ok(Err(format!(
                "{path}: findmnt --verify finds {a} error(s) in the edited file against {b} now: nothing edited"
            )))
        }
        (None, _) | (_, None) => {
            return Ok(Err(format!(
                "{path}: findmnt (util-linux) is not there to verify the edit: nothing edited"
            )))
        }
        _ => {}
    }
    let backup = Setting::File { path: backup_path };
    Ok(Ok(vec![
        Change {
            from: journal.host().read(&backup)?,
            to: old.clone(),
            setting: backup,
        },
        Change {
            setting: file,
            from: old,
            to: new,
        },
    ]))
}

/// Puts back everything `tune apply` changed (and any killed run's temporary change).
pub fn restore(dry_run: bool, journal: &Journal) -> Result<TuneReport, Error> {
    if dry_run {
        let restored = Outcome {
            restored: journal
                .entries()?
                .into_iter()
                .filter(|e| e.mode == Mode::Applied || !journal.is_live(e))
                .map(|e| (e.setting, e.original))
                .collect(),
            ..Outcome::default()
        };
        return Ok(TuneReport {
            dry_run,
            restored,
            held: held(journal)?,
            ..TuneReport::default()
        });
    }
    let recovered = journal.recover()?;
    let restored = journal.restore(&|e| e.mode == Mode::Applied)?;
    Ok(TuneReport {
        dry_run,
        recovered,
        restored,
        held: held(journal)?,
        ..TuneReport::default()
    })
}

/// Restores what a killed run left, then lists what stays changed.
pub fn status(journal: &Journal) -> Result<TuneReport, Error> {
    let recovered = journal.recover()?;
    Ok(TuneReport {
        recovered,
        held: held(journal)?,
        ..TuneReport::default()
    })
}
