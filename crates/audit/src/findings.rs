//! The rules: facts in, findings out. Each finding has a stable id, a severity, the evidence
//! it read, why it matters for a recorder, the exact fix (now and persistent) and the
//! trade-off where there is one.

use sinkrate_model::audit::Audit;
use sinkrate_model::audit::{Finding, Fix, Severity, Step};
use sinkrate_model::tunables::Assignment;

/// A step of a fix that is not a setting: a command for the user.
fn run(command: impl Into<String>) -> Step {
    Step::Run(command.into())
}

/// A mount option a remount changes, as a setting (`tune apply` makes it).
fn remount(mount_point: &str, option: &str) -> Step {
    match Assignment::mount(mount_point, option) {
        Some(a) => Step::Set(a),
        None => run(format!("mount -o remount,{option} {mount_point}")),
    }
}

fn runs(commands: Vec<String>) -> Vec<Step> {
    commands.into_iter().map(Step::Run).collect()
}
use sinkrate_model::facts::Bus;

fn mb(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.1} GB", bytes / 1e9)
    } else {
        format!("{:.0} MB", bytes / 1e6)
    }
}

fn speed(mbps: f64) -> String {
    if mbps >= 1000.0 {
        format!("{}M", mbps as u64)
    } else {
        format!("{mbps}M")
    }
}

struct Rules<'a> {
    a: &'a Audit,
    out: Vec<Finding>,
}

impl Rules<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        id: &'static str,
        severity: Severity,
        title: String,
        evidence: String,
        why: &str,
        now: &[Step],
        persistent: &[String],
        tradeoff: Option<String>,
    ) {
        self.out.push(Finding {
            id: id.into(),
            severity,
            title,
            evidence,
            why: why.to_string(),
            fix: Fix::of(now, persistent),
            tradeoff,
        });
    }

    fn mount_line(&self) -> String {
        let t = &self.a.target;
        format!(
            "{} on {} type {} ({})",
            t.source,
            t.mount_point,
            t.fs_type,
            t.all_options().join(",")
        )
    }

    fn fstab_hint(&self, change: &str) -> String {
        format!(
            "/etc/fstab, the line for {}: {change}",
            self.a.target.mount_point
        )
    }
}

/// All findings for an audit's facts, unsorted.
pub fn judge(a: &Audit) -> Vec<Finding> {
    let mut r = Rules { a, out: Vec::new() };
    filesystem_kind(&mut r);
    mount_options(&mut r);
    ext4(&mut r);
    device(&mut r);
    card(&mut r);
    usb(&mut r);
    memory(&mut r);
    space(&mut r);
    r.out
}

fn filesystem_kind(r: &mut Rules) {
    let t = &r.a.target;
    let mp = t.mount_point.clone();
    let evidence = r.mount_line();
    let has_ext4 =
        r.a.filesystem
            .kernel_filesystems
            .iter()
            .any(|f| f == "ext4");
    match t.fs_type.as_str() {
        "tmpfs" | "ramfs" => r.add(
            "fs.memory",
            Severity::Critical,
            format!("{mp} is {}: it is memory, not storage", t.fs_type),
            evidence,
            "Writes here never reach a storage device; any rate measured on it is the speed of RAM and says nothing about the card or drive.",
            &[run("point sinkrate (and the recorder) at the mount point of the real device")],
            &[],
            None,
        ),
        fs if sinkrate_sys::mounts::PSEUDO_FS.contains(&fs) => r.add(
            "fs.pseudo",
            Severity::Critical,
            format!("{mp} is {fs}, a kernel interface, not storage"),
            evidence,
            "Nothing can be recorded here.",
            &[run("point sinkrate at the mount point of the recording device")],
            &[],
            None,
        ),
        "vfat" | "msdos" => {
            let cluster = r.a.filesystem.cluster_bytes;
            let suggest = if has_ext4 {
                format!(
                    "for recordings: back up the card, then umount {mp} && mkfs.ext4 -L rec {} (destroys data)",
                    t.device.as_deref().unwrap_or(&t.source)
                )
            } else {
                "this kernel has no ext4 (/proc/filesystems); exfat or a kernel with ext4 are the alternatives".to_string()
            };
            r.add(
                "fs.vfat",
                Severity::Warn,
                format!(
                    "{mp} is FAT{}: files stop at 4 GiB and there is no journal",
                    cluster.map(|c| format!(" with {} KiB clusters", c / 1024)).unwrap_or_default()
                ),
                evidence,
                "A long recording in one file fails at 4 GiB, and a power cut during a write can leave the FAT inconsistent until fsck; FAT also updates its allocation table near the start of the card on every cluster allocated.",
                &[run(suggest)],
                &[],
                Some("other operating systems read FAT everywhere; ext4 needs a driver on Windows and macOS".to_string()),
            );
        }
        "exfat" => r.add(
            "fs.exfat",
            Severity::Info,
            format!(
                "{mp} is exFAT{}",
                r.a.filesystem.cluster_bytes.map(|c| format!(" with {} KiB clusters", c / 1024)).unwrap_or_default()
            ),
            evidence,
            "exFAT has no journal: a power cut while recording can need fsck.exfat; large clusters (128 KiB or more) suit video.",
            &[],
            &[],
            None,
        ),
        "btrfs" => r.add(
            "fs.btrfs_cow",
            Severity::Info,
            format!("{mp} is btrfs: copy-on-write and checksums add work to every write"),
            evidence,
            "Rewriting preallocated files (pregrown segments) fragments them under copy-on-write, and checksumming costs CPU on small boards.",
            &[run(format!("chattr +C {mp}   (new files in the directory skip copy-on-write)"))],
            &[],
            Some("files with +C lose btrfs data checksums and compression".to_string()),
        ),
        "nfs" | "nfs4" | "cifs" | "smb3" | "fuse.sshfs" => r.add(
            "fs.network",
            Severity::Warn,
            format!("{mp} is a network filesystem ({})", t.fs_type),
            evidence,
            "Its rate and stalls are the network's and the server's; a recorder on a network filesystem needs a local buffer for outages.",
            &[],
            &[],
            None,
        ),
        "overlay" => r.add(
            "fs.overlay",
            Severity::Info,
            format!("{mp} is an overlay without an upper directory that could be followed"),
            evidence,
            "Writes go to the overlay's upper directory; audit that directory to see the device that stores them.",
            &[],
            &[],
            None,
        ),
        _ => {}
    }
    if let Some(overlay) = &t.overlay_at {
        r.add(
            "fs.overlay_upper",
            Severity::Info,
            format!("{overlay} is an overlay: writes land in its upper directory on {}", t.mount_point),
            format!("overlay at {overlay}; upper directory on {}", r.mount_line()),
            "The findings below are for the filesystem and device that store the overlay's upper directory.",
            &[],
            &[],
            None,
        );
    }
    if let Some(root) = &t.bind_of {
        r.add(
            "mount.bind",
            Severity::Info,
            format!("{} is a bind mount of {root} on {}", t.mount_point, t.source),
            r.mount_line(),
            "The options that matter are those of the filesystem underneath; they are audited here.",
            &[],
            &[],
            None,
        );
    }
}

fn mount_options(r: &mut Rules) {
    let t = r.a.target.clone();
    let mp = &t.mount_point;
    let storage = !matches!(t.fs_type.as_str(), "tmpfs" | "ramfs" | "overlay")
        && !sinkrate_sys::mounts::PSEUDO_FS.contains(&t.fs_type.as_str());
    if t.mount_options.iter().any(|o| o == "ro") {
        r.add(
            "mount.read_only",
            Severity::Critical,
            format!("{mp} is mounted read-only"),
            r.mount_line(),
            "Nothing can be recorded; a filesystem remounted read-only after an error (errors=remount-ro) also shows this.",
            &[run("dmesg | grep -i -e ext4 -e error   (why it is read-only)"), run(format!("mount -o remount,rw {mp}"))],
            &[r.fstab_hint("use rw")],
            None,
        );
    }
    if !storage {
        return;
    }
    if t.has_option("sync") {
        r.add(
            "mount.sync",
            Severity::Critical,
            format!("{mp} is mounted with \"sync\": every write waits for the device"),
            r.mount_line(),
            "With sync each write(2) returns only when the data is on the medium, so the page cache cannot absorb the device's pauses and a recorder stalls on every one of them (seed 000: SD cards and USB drives automounted with -o sync).",
            &[remount(mp, "async")],
            &[
                r.fstab_hint("replace \"sync\" by \"async,noatime\""),
                "automounted media (udisks2): /etc/udisks2/mount_options.conf, [defaults] ext4_defaults=noatime".to_string(),
            ],
            Some("without sync, data written in the last seconds (the dirty limit, see vm.dirty) is lost on a power cut unless the recorder calls fdatasync".to_string()),
        );
    } else if t.has_option("dirsync") {
        r.add(
            "mount.dirsync",
            Severity::Warn,
            format!("{mp} is mounted with \"dirsync\": creating and deleting files waits for the device"),
            r.mount_line(),
            "Segment rotation and loop-recording deletion then stall the writer for a device round trip each.",
            // The kernel keeps dirsync across a remount (it is not among the flags a remount
            // changes), so the only fix is a fresh mount without it.
            &[run(format!("umount {mp} && mount {mp}   # after removing dirsync from its fstab line; a remount keeps it"))],
            &[r.fstab_hint("remove \"dirsync\"")],
            None,
        );
    }
    let atime = if t.has_option("noatime") {
        None
    } else if t.has_option("relatime") {
        Some((Severity::Info, "relatime", "relatime still writes a file's access time once a day and whenever it is older than its modification time"))
    } else {
        Some((Severity::Warn, "strictatime", "every read of a file writes its access time back to the medium: extra small writes on a flash card while recording"))
    };
    match atime {
        Some((severity, mode, why)) => r.add(
            "mount.atime",
            severity,
            format!("{mp} records access times ({mode})"),
            r.mount_line(),
            &format!("{why} (seeds 000 and 001 mount recording media with noatime)."),
            &[remount(mp, "noatime")],
            &[r.fstab_hint("add \"noatime\"")],
            Some("tools that rely on atime (mutt's new-mail check, some cleanup scripts) stop seeing reads".to_string()),
        ),
        None => r.add(
            "mount.atime",
            Severity::Ok,
            format!("{mp} is mounted noatime"),
            r.mount_line(),
            "Reads cause no metadata writes.",
            &[],
            &[],
            None,
        ),
    }
    if t.has_option("discard") {
        let flash = r.a.devices.iter().any(|d| d.bus.is_removable_flash());
        r.add(
            "mount.discard",
            if flash { Severity::Warn } else { Severity::Info },
            format!("{mp} discards freed blocks online (\"discard\")"),
            r.mount_line(),
            "Each delete sends TRIM requests inline; on SD cards and USB sticks these are slow and stall the writes queued behind them, which loop recording (deleting old segments while recording) hits every time.",
            &[remount(mp, "nodiscard"), run(format!("fstrim -v {mp}   (trim once, now)"))],
            &[r.fstab_hint("remove \"discard\""), "systemctl enable --now fstrim.timer   (trim weekly instead)".to_string()],
            None,
        );
    }
}

fn ext4(r: &mut Rules) {
    let t = r.a.target.clone();
    if !matches!(t.fs_type.as_str(), "ext4" | "ext3") {
        return;
    }
    let mp = &t.mount_point;
    let dev = t.device.clone().unwrap_or_else(|| t.source.clone());
    let proc_opts = &r.a.filesystem.ext4_options;
    let opt = |key: &str| -> Option<String> {
        t.option_value(key).map(str::to_string).or_else(|| {
            proc_opts
                .iter()
                .find_map(|o| o.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
        })
    };
    let data_mode = opt("data").or_else(|| {
        r.a.filesystem
            .ext4
            .as_ref()
            .and_then(|s| s.default_data_mode.clone())
    });
    let sb = r.a.filesystem.ext4.clone();
    let journal = sb.as_ref().map(|s| s.has_journal);
    let evidence = match &sb {
        Some(s) => format!(
            "{}; superblock: {}{}",
            r.mount_line(),
            s.features.join(" "),
            s.journal_bytes
                .map(|j| format!(", journal {} MiB", j >> 20))
                .unwrap_or_default()
        ),
        None => r.mount_line(),
    };
    if journal == Some(false) {
        r.add(
            "ext4.no_journal",
            Severity::Warn,
            format!("{dev} is ext4 without a journal"),
            evidence.clone(),
            "Without a journal, a power cut while recording (a dashcam's normal way to stop) leaves the filesystem needing a full fsck at the next boot, which can take minutes on a large card and can lose the last files.",
            &[run(format!("umount {mp} && tune2fs -O has_journal {dev} && mount {dev} {mp}"))],
            &[],
            Some("the journal costs a few percent of write throughput; data=writeback keeps most of it while keeping metadata safe".to_string()),
        );
    }
    match data_mode.as_deref() {
        Some("journal") => r.add(
            "ext4.data_journal",
            Severity::Warn,
            format!("{mp} journals data (data=journal): every byte is written twice"),
            evidence.clone(),
            "With data=journal each block goes to the journal first and to its place later, halving the sustained write rate; seed 000 advises data=ordered or data=writeback for recording.",
            &[run(format!("umount {mp} && mount -o data=ordered {dev} {mp}   (the data mode cannot change on remount)"))],
            &[r.fstab_hint("replace data=journal by data=ordered"), format!("tune2fs -o journal_data_ordered {dev}   (the default stored in the superblock)")],
            Some("data=journal protects file contents written just before a crash; ordered protects metadata and never exposes stale blocks".to_string()),
        ),
        Some("writeback") => r.add(
            "ext4.data_writeback",
            Severity::Info,
            format!("{mp} uses data=writeback"),
            evidence.clone(),
            "Metadata is journaled but file data is not ordered before it: the fastest journaled mode (seed 001's choice for SD cards).",
            &[],
            &[],
            Some("after a crash, the end of a file being written can contain stale data from deleted files".to_string()),
        ),
        _ => {}
    }
    if let Some(c) = opt("commit").and_then(|c| c.parse::<u64>().ok()) {
        if c < 5 && journal != Some(false) {
            r.add(
                "ext4.commit_short",
                Severity::Warn,
                format!("{mp} commits its journal every {c} s (commit={c})"),
                evidence.clone(),
                "Each commit forces the journal and the data it orders to the device; committing more often than the default 5 s turns a steady stream into frequent small synchronous writes (seed 002's table: commit frequency drives metadata cost).",
                &[match Assignment::mount(mp, "commit=5") {
                    Some(a) => Step::SetNoted(a, "(or higher, e.g. 30, for fewer flushes)".into()),
                    None => run(format!("mount -o remount,commit=5 {mp}")),
                }],
                &[r.fstab_hint("set commit=5 or remove commit=")],
                Some(format!("a longer commit interval loses up to that many seconds of metadata on a power cut; commit={c} loses at most {c} s")),
            );
        }
    }
    if t.has_option("nobarrier") || opt("barrier").as_deref() == Some("0") {
        let cache =
            r.a.devices
                .iter()
                .find_map(|d| d.queue.write_cache.clone())
                .map(|c| format!("; device write cache: {c}"))
                .unwrap_or_default();
        r.add(
            "ext4.nobarrier",
            Severity::Warn,
            format!("{mp} is mounted without write barriers (nobarrier)"),
            format!("{evidence}{cache}"),
            "Without barriers the journal's ordering is not enforced on a device with a volatile write cache: a power cut can corrupt the filesystem, not only lose recent data.",
            &[remount(mp, "barrier")],
            &[r.fstab_hint("remove \"nobarrier\"")],
            Some("barriers cost a cache flush per journal commit; on a device without a volatile cache (write_cache: write through) they cost nothing".to_string()),
        );
    }
    if let Some(e) = opt("errors") {
        if e == "panic" {
            r.add(
                "ext4.errors_panic",
                Severity::Info,
                format!("{mp}: errors=panic reboots the machine on a filesystem error"),
                r.mount_line(),
                "A failing card then reboots the recorder instead of stopping the recording.",
                &[],
                &[r.fstab_hint("errors=remount-ro")],
                None,
            );
        }
    }
}

fn device(r: &mut Rules) {
    let Some(dev) = r.a.devices.first().cloned() else {
        return;
    };
    let physical =
        r.a.devices
            .iter()
            .find(|d| !matches!(d.bus, Bus::Loop | Bus::Dm | Bus::Md))
            .cloned();
    if dev.bus == Bus::Loop {
        r.add(
            "dev.loop",
            Severity::Info,
            format!("/dev/{} is a loop device backed by {}", dev.name, dev.loop_backing_file.clone().unwrap_or_else(|| "a file".into())),
            format!("{}/loop/backing_file", dev.sysfs_path),
            "Writes go through the backing file's filesystem and device; rates measured here are that stack's, not a card's.",
            &[],
            &[],
            None,
        );
    }
    if let Some(p) = dev
        .partition
        .as_ref()
        .or(physical.as_ref().and_then(|d| d.partition.as_ref()))
    {
        let flash = physical
            .as_ref()
            .is_some_and(|d| d.bus.is_removable_flash());
        // The card's own allocation unit when it states one; 4 MiB, most SD cards' erase
        // block, for other flash.
        let card_au = card_allocation_unit(r.a);
        let erase = card_au.unwrap_or(if flash { 4u64 << 20 } else { 1u64 << 20 });
        let boundary = match card_au {
            Some(au) => format!("the card's {} allocation unit", size_label(au)),
            None => format!("a {} boundary", size_label(erase)),
        };
        // The partition's own name: under dm or a loop it is the member's, not the mount's.
        let owner = if dev.partition.is_some() {
            Some(&dev)
        } else {
            physical.as_ref()
        };
        let name = owner.map(|d| d.name.clone()).unwrap_or_default();
        let disk = owner.map(|d| d.disk.clone()).unwrap_or_default();
        if p.start_bytes % erase != 0 {
            r.add(
                "part.misaligned",
                if flash || p.start_bytes % 4096 != 0 { Severity::Warn } else { Severity::Info },
                format!(
                    "partition {name} starts at sector {} ({} KiB), not on {boundary}",
                    p.start_bytes / 512,
                    p.start_bytes / 1024,
                ),
                format!("/sys/class/block/{name}/start = {}", p.start_bytes / 512),
                "Flash erases in large blocks (4 MiB on most SD cards); a partition that does not start on one makes every large write straddle two erase blocks and costs the card extra internal copying.",
                &[run({
                    let at = size_label(erase.max(4 << 20));
                    format!("back up the data, then repartition with the first partition at {at} (destroys every partition on /dev/{disk}): parted -a optimal /dev/{disk} mklabel msdos mkpart primary {} 100%", at.replace(' ', ""))
                })],
                &[],
                None,
            );
        } else {
            r.add(
                "part.aligned",
                Severity::Ok,
                format!("partition {name} starts on {boundary}"),
                format!("/sys/class/block/{name}/start = {}", p.start_bytes / 512),
                "Large writes map onto whole erase blocks.",
                &[],
                &[],
                None,
            );
        }
    }
    let Some(phys) = physical else {
        return;
    };
    let q = &phys.queue;
    if let (Some(cur), Some(hw)) = (q.max_sectors_kb, q.max_hw_sectors_kb) {
        if cur < 512 && hw > cur {
            let want = hw.min(1024);
            r.add(
                "dev.max_sectors_small",
                Severity::Info,
                format!("{} splits writes at {cur} KiB though the hardware takes {hw} KiB", phys.disk),
                format!("/sys/block/{0}/queue/max_sectors_kb = {cur}, max_hw_sectors_kb = {hw}", phys.disk),
                "Each request carries at most max_sectors_kb; larger requests mean fewer commands per MB, which helps USB bridges and SD cards keep their rate.",
                &[Step::Set(Assignment::queue(&phys.disk, "max_sectors_kb", want))],
                &[format!(
                    "/etc/udev/rules.d/60-sinkrate.rules: ACTION==\"add|change\", KERNEL==\"{}\", ATTR{{queue/max_sectors_kb}}=\"{want}\"",
                    phys.disk
                )],
                None,
            );
        }
    }
}

/// "4 MiB", "512 KiB", "12 MiB".
fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The allocation unit the card states: its SD Status register's, else the erase size the
/// kernel prefers for it (an SD card's AU, an eMMC's high-capacity erase group).
fn card_allocation_unit(a: &Audit) -> Option<u64> {
    let card = a.health.mmc.as_ref()?;
    card.sd_status
        .as_ref()
        .and_then(|s| s.au_bytes)
        .or(card.preferred_erase_bytes)
        .filter(|au| *au >= 4096)
}

fn card(r: &mut Rules) {
    let health = r.a.health.clone();
    if let Some(card) = &health.mmc {
        let node =
            r.a.devices
                .iter()
                .find(|d| d.bus == Bus::Mmc)
                .map(|d| d.sysfs_path.clone())
                .unwrap_or_default();
        let who = [
            card.manufacturer
                .clone()
                .or(card.manfid.map(|m| format!("manufacturer 0x{m:06x}"))),
            card.name.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let mut what = vec![card.kind.clone().unwrap_or_else(|| "MMC".into())];
        what.extend(card.date.as_ref().map(|d| format!("made {d}")));
        let classes = card.sd_status.as_ref().map(|s| s.label());
        r.add(
            "card.identity",
            Severity::Ok,
            format!(
                "{} ({}){}",
                if who.is_empty() {
                    "the card"
                } else {
                    who.as_str()
                },
                what.join(", "),
                classes
                    .as_ref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default()
            ),
            format!(
                "{node}/device: name, manfid, date{}",
                if card.ssr_hex.is_some() {
                    ", ssr (SD Status)"
                } else {
                    ""
                }
            ),
            "What the card says it is: the figures below are held to it.",
            &[],
            &[],
            None,
        );
        if let Some((class, claimed)) = card.sd_status.as_ref().and_then(|s| s.claimed_write()) {
            if let Some(measured) = r.a.measured_write_bytes_per_s {
                if measured < 0.9 * claimed {
                    r.add(
                        "card.class_not_reached",
                        Severity::Warn,
                        format!(
                            "the card claims {class} ({:.0} MB/s sustained); sustained {:.1} MB/s here",
                            claimed / 1e6,
                            measured / 1e6
                        ),
                        format!("{node}/device/ssr; check's sustained write (direct I/O, fsync'd)"),
                        "A card that does not reach its class is worn, counterfeit, or runs in a slower bus mode than it supports (a UHS card in a slot or reader without UHS). A recorder sized for the class will drop frames.",
                        &[run("compare with the same card in a UHS reader on a PC, and check the slot's bus mode: cat /sys/kernel/debug/mmc0/ios (timing spec)")],
                        &["replace the card with one whose class is met on this board (sinkrate check on the new card)".to_string()],
                        None,
                    );
                }
            }
            let stream = r.a.stream_bytes_per_s;
            if stream > 0.0 && claimed < stream {
                r.add(
                    "card.class_below_stream",
                    Severity::Warn,
                    format!(
                        "the card's best class, {class}, promises {:.0} MB/s; the stream needs {:.1} MB/s",
                        claimed / 1e6,
                        stream / 1e6
                    ),
                    format!("{node}/device/ssr"),
                    "The class is the sustained rate a card guarantees while recording; a stream above it relies on the card doing better than it promises, which ends when the card is full, worn or warm.",
                    &[run("choose a card whose class is above the stream (V30 for up to 30 MB/s)")],
                    &[],
                    None,
                );
            }
        }
        if let Some(lt) = card.life_time {
            if let Some((low, high)) = lt.used_percent() {
                let evidence = format!(
                    "{node}/device/life_time = 0x{:02x} 0x{:02x} (type A, type B)",
                    lt.typ_a, lt.typ_b
                );
                let (severity, title) = if lt.typ_a.max(lt.typ_b) > 10 {
                    (
                        Severity::Critical,
                        "the eMMC is past its rated life (life time estimate exceeded)".to_string(),
                    )
                } else if low >= 80 {
                    (
                        Severity::Warn,
                        format!("the eMMC has used {low}-{high}% of its rated life"),
                    )
                } else {
                    (
                        Severity::Ok,
                        format!("the eMMC has used {low}-{high}% of its rated life"),
                    )
                };
                r.add(
                    "card.life_time",
                    severity,
                    title,
                    evidence,
                    "JEDEC's life-time estimate counts the erase cycles used of those the memory is rated for. Past it, writes slow down and the device can turn read-only or lose data.",
                    &runs(if severity == Severity::Ok {
                        Vec::new()
                    } else {
                        vec!["plan the board's replacement; lower the bytes written per day (noatime, a longer ext4 commit interval, fewer small syncs)".to_string()]
                    }),
                    &[],
                    None,
                );
            }
        }
        if let Some(eol) = card.pre_eol {
            use sinkrate_model::health::PreEol;
            let (severity, title) = match eol {
                PreEol::Urgent => (
                    Severity::Critical,
                    "the eMMC's reserved blocks are 90% used (pre-EOL urgent)",
                ),
                PreEol::Warning => (
                    Severity::Warn,
                    "the eMMC's reserved blocks are 80% used (pre-EOL warning)",
                ),
                PreEol::Normal => (
                    Severity::Ok,
                    "the eMMC's reserved blocks are in normal use (pre-EOL normal)",
                ),
                PreEol::NotDefined => {
                    (Severity::Ok, "the eMMC does not report its reserved blocks")
                }
            };
            if eol != PreEol::NotDefined {
                r.add(
                    "card.pre_eol",
                    severity,
                    title.to_string(),
                    format!("{node}/device/pre_eol_info"),
                    "Worn blocks are replaced from a reserve; once it is used up the device turns read-only.",
                    &runs(if severity == Severity::Ok {
                        Vec::new()
                    } else {
                        vec!["back up what the device holds and plan its replacement".to_string()]
                    }),
                    &[],
                    None,
                );
            }
        }
    }
    if let Some(e) = &health.emulated {
        let used = e.written_bytes as f64 / e.endurance_bytes.max(1) as f64;
        let bytes = sinkrate_units::product::bytes_si;
        let (severity, title) = if e.worn_out {
            (
                Severity::Critical,
                format!(
                    "the emulated card wore out after {} written{} ({})",
                    bytes(e.worn_out_after_bytes.unwrap_or(e.written_bytes)),
                    e.worn_out_at_ms
                        .map(|ms| format!(
                            ", {} after it was set up",
                            sinkrate_units::product::hh_mm_ss((ms / 1000) as f64)
                        ))
                        .unwrap_or_default(),
                    match e.mode.as_str() {
                        "errors" => "its writes fail ever more often",
                        "stale" => "its writes are lost, reads return earlier data",
                        _ => "it is read-only",
                    }
                ),
            )
        } else {
            (
                if used >= 0.8 { Severity::Warn } else { Severity::Ok },
                format!(
                    "the emulated card has written {} of the {} it takes before it wears out ({:.0}%)",
                    bytes(e.written_bytes),
                    bytes(e.endurance_bytes),
                    used * 100.0
                ),
            )
        };
        r.add(
            "card.wear",
            severity,
            title,
            format!(
                "the emulated card's own account (sinkrate emulate up --wear-out {}:{})",
                e.endurance_bytes, e.mode
            ),
            "A card at the end of its life turns read-only, fails writes or silently keeps old data; a recorder on it loses everything from then on.",
            &runs(if severity == Severity::Ok {
                Vec::new()
            } else {
                vec!["replace the card (here: sinkrate emulate down, then up again)".to_string()]
            }),
            &[],
            None,
        );
    }
    if let Some(smart) = &health.smart {
        let who = smart.model.clone().unwrap_or_else(|| smart.device.clone());
        if smart.passed == Some(false) {
            r.add(
                "smart.failed",
                Severity::Critical,
                format!("{who}: SMART's overall assessment is FAILED"),
                format!(
                    "smartctl --json -a {}: smart_status.passed = false",
                    smart.device
                ),
                "The drive predicts its own failure.",
                &[run("back up what the drive holds and replace it")],
                &[],
                None,
            );
        }
        if let Some(used) = smart.percentage_used {
            let severity = if used >= 100 {
                Severity::Critical
            } else if used >= 80 {
                Severity::Warn
            } else {
                Severity::Ok
            };
            r.add(
                "smart.wear",
                severity,
                format!("{who} has used {used}% of its rated endurance"),
                format!(
                    "smartctl --json -a {}: {}",
                    smart.device,
                    smart.percentage_used_source.clone().unwrap_or_default()
                ),
                "The rated endurance is the writes the maker warrants; past it, the drive may slow down, turn read-only or lose data.",
                &runs(if severity == Severity::Ok {
                    Vec::new()
                } else {
                    vec!["plan the drive's replacement; lower the bytes written per day (noatime, a longer ext4 commit interval, fewer small syncs)".to_string()]
                }),
                &[],
                None,
            );
        }
    }
}

fn usb(r: &mut Rules) {
    let Some(u) = r.a.usb.clone() else {
        return;
    };
    let negotiated = u.device.speed_mbps;
    let mut path = format!(
        "root hub {} {}",
        u.root_hub.name,
        u.root_hub.speed_mbps.map(speed).unwrap_or_default()
    );
    for h in &u.hubs {
        path.push_str(&format!(
            " -> hub {} {}{}",
            h.name,
            h.speed_mbps.map(speed).unwrap_or_default(),
            h.product
                .as_ref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default()
        ));
    }
    path.push_str(&format!(
        " -> {} {}{} USB{}",
        u.device.name,
        negotiated.map(speed).unwrap_or_default(),
        u.device
            .product
            .as_ref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default(),
        u.device
            .usb_version
            .as_deref()
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    ));
    let evidence = format!(
        "{path}; fastest root hub on this controller: {}",
        u.controller_max_mbps
            .map(speed)
            .unwrap_or_else(|| "unknown".into())
    );
    let slow_hub = u
        .hubs
        .iter()
        .find(|h| h.speed_mbps.is_some_and(|s| s < 5000.0))
        .map(|h| h.name.clone());
    match (negotiated, u.device_capable_mbps) {
        (Some(n), Some(cap)) if n < cap => r.add(
            "usb.link_below_capability",
            Severity::Critical,
            format!(
                "{} enumerated at {} although it can do {}{}",
                u.device.product.clone().unwrap_or_else(|| u.device.name.clone()),
                speed(n),
                speed(cap),
                if u.controller_max_mbps.is_some_and(|c| c >= cap) { " and so can this controller" } else { "" }
            ),
            evidence,
            &format!(
                "At {} a USB mass-storage device writes at most about {} MB/s, far below what the drive can sustain (seed 000: 5000M means super-speed; 480M or lower points at a USB 2 cable, port or hub).",
                speed(n),
                if n <= 480.0 { "35-40" } else { "400" }
            ),
            &[run(match slow_hub {
                Some(h) => format!("hub {h} on the path runs at USB 2 speed: connect the drive to a USB 3 port directly or through a USB 3 hub, with a USB 3 cable"),
                None => "use a certified USB 3 cable and a USB 3 port (blue or marked SS); then run sinkrate audit again".to_string(),
            })],
            &[],
            None,
        ),
        (Some(n), Some(cap)) if n <= 480.0 && cap <= 480.0 && u.controller_max_mbps.is_some_and(|c| c >= 5000.0) => r.add(
            "usb.device_usb2",
            Severity::Info,
            format!("{} is a USB 2 device: about 35-40 MB/s at most", u.device.product.clone().unwrap_or_else(|| u.device.name.clone())),
            evidence,
            "The port could do more; the drive itself cannot.",
            &[run("for more than ~35 MB/s use a USB 3 drive")],
            &[],
            None,
        ),
        (Some(_), _) => r.add(
            "usb.link",
            Severity::Ok,
            format!("{} runs at {}", u.device.name, negotiated.map(speed).unwrap_or_default()),
            evidence,
            "The link runs at what the device can do.",
            &[],
            &[],
            None,
        ),
        _ => {}
    }
    let busy: Vec<String> = u
        .peers
        .iter()
        .map(|p| {
            format!(
                "{} {}{}",
                p.name,
                p.class.clone().unwrap_or_else(|| "device".into()),
                p.product
                    .as_ref()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default()
            )
        })
        .collect();
    if !busy.is_empty() {
        let heavy = u.peers.iter().any(|p| {
            matches!(
                p.class.as_deref(),
                Some(
                    "video"
                        | "mass storage"
                        | "audio"
                        | "wireless"
                        | "communications"
                        | "vendor specific"
                )
            )
        });
        r.add(
            "usb.shared_bus",
            if heavy { Severity::Warn } else { Severity::Info },
            format!("{} other device(s) share root hub {} with the drive", busy.len(), u.root_hub.name),
            busy.join("; "),
            "Devices on one root hub share its bandwidth: a USB camera streaming on the same bus takes from the drive's write rate exactly when recording (seed 000).",
            &[run("move the camera or the drive to a port of another root hub (lsusb -t shows which ports share one)")],
            &[],
            None,
        );
    }
}

/// Settings sinkrate changed and has not put back: the findings below may judge sinkrate's
/// values, not the system's own, and the user must know before acting on them.
fn sinkrate_settings(r: &mut Rules) {
    let entries = r.a.memory.sinkrate_settings.clone();
    if entries.is_empty() {
        return;
    }
    use sinkrate_model::settings::Mode;
    let killed: Vec<_> = entries
        .iter()
        .filter(|e| e.entry.mode == Mode::Temporary && !e.running)
        .collect();
    let names = |list: &[&sinkrate_model::facts::JournaledSetting]| {
        list.iter()
            .map(|e| e.entry.setting.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let evidence = entries
        .iter()
        .map(|e| {
            format!(
                "{} was {} ({:?}, pid {})",
                e.entry.setting, e.entry.original, e.entry.mode, e.entry.pid
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    if !killed.is_empty() {
        r.add(
            "sinkrate.temporary_settings",
            Severity::Warn,
            format!(
                "{} are still a killed sinkrate run's temporary settings",
                names(&killed)
            ),
            format!("{}: {evidence}", sinkrate_model::settings::DEFAULT_JOURNAL),
            "A sinkrate run set them for its test and was killed before it could put them back; the next sinkrate that changes settings (sinkrate tune status included) restores them from the journal. Until then the findings here judge the test's values, not the system's.",
            &[run("sinkrate tune status   (restores a killed run's temporary settings and lists what stays changed)")],
            &[],
            None,
        );
        return;
    }
    let all: Vec<_> = entries.iter().collect();
    r.add(
        "sinkrate.settings",
        Severity::Info,
        format!("{} changed by sinkrate", names(&all)),
        format!("{}: {evidence}", sinkrate_model::settings::DEFAULT_JOURNAL),
        "Values applied with sinkrate tune apply (kept until sinkrate tune restore), or a running test's temporary values: the findings here judge them as they are now.",
        &[run("sinkrate tune restore   (puts back what tune apply changed)")],
        &[],
        None,
    );
}

fn memory(r: &mut Rules) {
    sinkrate_settings(r);
    let m = r.a.memory.clone();
    let rate = r.a.stream_bytes_per_s.max(1.0);
    let (Some(limit), Some(background)) = (m.dirty_threshold_bytes, m.background_threshold_bytes)
    else {
        return;
    };
    let ceiling = m.freerun_ceiling_bytes.unwrap_or((limit + background) / 2);
    let vm = &m.vm;
    let setting = |bytes: Option<u64>, ratio: Option<u64>| match (bytes, ratio) {
        (Some(b), _) if b > 0 => format!("{} bytes", b),
        (_, Some(p)) => format!("{p}% of available memory"),
        _ => "?".to_string(),
    };
    let evidence = format!(
        "vm.dirty_ratio/bytes: {}, background: {}; the kernel's thresholds now: {} hard, {} background, throttling from {}; MemAvailable {}; stream {:.1} MB/s",
        setting(vm.dirty_bytes, vm.dirty_ratio),
        setting(vm.dirty_background_bytes, vm.dirty_background_ratio),
        mb(limit as f64),
        mb(background as f64),
        mb(ceiling as f64),
        m.available_bytes.map(|b| mb(b as f64)).unwrap_or_else(|| "?".into()),
        rate / 1e6
    );
    let seconds = ceiling as f64 / rate;
    let persistent_file = "/etc/sysctl.d/60-sinkrate.conf";
    if seconds < 5.0 {
        let want = (rate * 10.0) as u64;
        r.add(
            "vm.dirty_limit_small_for_stream",
            Severity::Warn,
            format!("the page cache absorbs only {seconds:.1} s of this stream before writers are throttled"),
            evidence.clone(),
            "When the device pauses (an SD card's garbage collection takes hundreds of ms), the recorder keeps writing into the page cache; with a small dirty limit the kernel throttles it almost at once and frames back up.",
            &[Step::Set(Assignment::sysctl("vm.dirty_bytes", want * 2)), Step::Set(Assignment::sysctl("vm.dirty_background_bytes", want))],
            &[format!("{persistent_file}: vm.dirty_bytes = {}, vm.dirty_background_bytes = {}", want * 2, want)],
            Some(format!(
                "up to {} of recording (about {:.0} s) would be lost on a power cut instead of {}",
                mb((want * 2) as f64),
                (want * 2) as f64 / rate,
                mb(ceiling as f64)
            )),
        );
    } else {
        r.add(
            "vm.dirty",
            Severity::Ok,
            format!(
                "dirty limits {} / {} background: room for {seconds:.0} s of this stream before throttling",
                mb(limit as f64),
                mb(background as f64)
            ),
            evidence.clone(),
            "Short device pauses are absorbed by the page cache.",
            &[],
            &[],
            Some(format!(
                "everything dirty is lost on a power cut: up to {} = {seconds:.0} s of this stream",
                mb(ceiling as f64)
            )),
        );
    }
    device_share(r, limit);
    if let Some(expire) = vm.dirty_expire_centisecs {
        if expire >= 1000 {
            let burst = rate * expire as f64 / 100.0;
            let burst = burst.min(background as f64);
            r.add(
                "vm.expire",
                Severity::Warn,
                format!("dirty data waits {} s before it is written back", expire / 100),
                format!(
                    "vm.dirty_expire_centisecs = {expire}, vm.dirty_writeback_centisecs = {}",
                    vm.dirty_writeback_centisecs.map(|w| w.to_string()).unwrap_or_else(|| "?".into())
                ),
                &format!(
                    "Below the background threshold nothing is written until data is {} s old; the device then gets up to {} in one burst, and the flusher's burst is when writes stall and the CPU spikes (seed 001).",
                    expire / 100,
                    mb(burst)
                ),
                &[Step::Set(Assignment::sysctl("vm.dirty_expire_centisecs", 100)), Step::Set(Assignment::sysctl("vm.dirty_writeback_centisecs", 100))],
                &[format!("{persistent_file}: vm.dirty_expire_centisecs = 100, vm.dirty_writeback_centisecs = 100")],
                Some("more frequent, smaller flushes; none for a recorder, whose data is written once".to_string()),
            );
        }
    }
    if let (Some(total), Some(avail)) = (m.total_bytes, m.available_bytes) {
        if avail < total / 10 {
            r.add(
                "mem.low_available",
                Severity::Warn,
                format!("only {} of {} memory is available", mb(avail as f64), mb(total as f64)),
                format!("/proc/meminfo MemAvailable {avail} bytes, MemTotal {total} bytes"),
                "Dirty limits given as ratios scale with available memory: when it is low, the page cache absorbs little and writers are throttled early.",
                &[run("find what holds memory: sinkrate watch (top hogs), or ps aux --sort=-rss | head")],
                &[],
                None,
            );
        }
    }
}

/// Seconds of the device's own writing that its dirty-memory cap is sized to when no
/// recording's pool has been measured: what a capture pool of 4 frames (a V4L2 queue's) at
/// 30 fps holds. Under a cap the kernel pauses a writer for at most about an eighth of the
/// time the device takes to write the cap back (`wb_max_pause`), so such a pool rides the
/// pauses out; a cap of seconds of the device's rate pauses it for 0.2 s at a time, and on
/// a 20 MB/s card two 6 MB/s streams with 4-frame pools dropped 76-197 frames in 12 s under
/// strict caps of 8-16 MiB and none under 4 MiB (bench/device-limit). `record` sizes the
/// cap from the recorder's own pool.
const SHARE_SECONDS: f64 = 4.0 / 30.0;

/// The smallest per-device cap offered.
const SHARE_FLOOR_BYTES: u64 = 1 << 20;

/// A device with no dirty-memory cap of its own may hold the machine's whole pool: slow to
/// drain, lost at a power cut, and when it fills every writer on the machine is throttled.
fn device_share(r: &mut Rules, limit: u64) {
    let Some(bdi) = r.a.bdi.clone() else {
        return;
    };
    if !bdi.shares_whole_pool() {
        let cap = bdi
            .max_bytes
            .unwrap_or(limit * bdi.max_ratio.unwrap_or(100) / 100);
        r.add(
            "bdi.share",
            Severity::Ok,
            format!("this device may hold at most {} of dirty data", mb(cap as f64)),
            format!(
                "/sys/class/bdi/{}: max_ratio {}, strict_limit {}",
                bdi.name,
                bdi.max_ratio.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
                bdi.strict_limit.map(|s| u8::from(s).to_string()).unwrap_or_else(|| "absent".into())
            ),
            "A cap of the device's own keeps a slow card's backlog, and what a power cut loses, small, and leaves the rest of the dirty memory to the machine's other writers.",
            &[],
            &[],
            None,
        );
        return;
    }
    let measured = r.a.measured_write_bytes_per_s.filter(|m| *m > 0.0);
    let drain = measured.map(|m| limit as f64 / m);
    let sized = measured
        .map(|m| ((m * SHARE_SECONDS) as u64).div_ceil(1 << 20) << 20)
        .unwrap_or(SHARE_FLOOR_BYTES)
        .max(SHARE_FLOOR_BYTES)
        .min(limit.max(SHARE_FLOOR_BYTES));
    let sized_from = match measured {
        Some(m) => format!(
            "{} = {SHARE_SECONDS:.2} s (what a 4-frame capture pool at 30 fps holds) of the {} this device sustained; the kernel's throttle pauses under it last up to {:.2} s",
            mb(sized as f64),
            sinkrate_units::product::mb_per_s(m),
            sinkrate_model::record::DeviceLimit::longest_throttle_pause_s(sized, m)
        ),
        None => String::new(),
    };
    let title = match drain {
        Some(s) => format!(
            "this device may hold {} of dirty data: at {} that is {s:.0} s to drain",
            mb(limit as f64),
            sinkrate_units::product::mb_per_s(measured.unwrap_or(0.0))
        ),
        None => format!(
            "this device may hold all {} of the machine's dirty data",
            mb(limit as f64)
        ),
    };
    let (now, persistent) = if bdi.strict_limit.is_some() && bdi.max_bytes.is_some() {
        (
            vec![
                Step::Set(Assignment::bdi(&bdi.name, "strict_limit", 1)),
                Step::Set(Assignment::bdi(&bdi.name, "max_bytes", sized)),
            ],
            vec![format!(
                "/etc/udev/rules.d/60-sinkrate.rules: ATTR{{bdi/strict_limit}}=\"1\", ATTR{{bdi/max_bytes}}=\"{sized}\" for this disk (sinkrate tune apply --persist writes it)"
            )],
        )
    } else {
        // Before Linux 6.2 only the ratio of the dirty limit can be set.
        let ratio = (sized * 100).div_ceil(limit.max(1)).clamp(1, 100);
        (
            vec![Step::Set(Assignment::bdi(&bdi.name, "max_ratio", ratio))],
            vec![format!(
                "/etc/udev/rules.d/60-sinkrate.rules: ATTR{{bdi/max_ratio}}=\"{ratio}\" for this disk (sinkrate tune apply --persist writes it)"
            )],
        )
    };
    // A cap is offered only where it is sized from a measured rate and the device would
    // take long to drain the pool: `tune apply --path` makes every fix that is offered, and a
    // guessed cap on a fast disk would throttle its writers for nothing.
    let (severity, now, persistent) = match drain {
        Some(s) if s > 30.0 => (Severity::Warn, now, persistent),
        Some(_) => (Severity::Ok, Vec::new(), Vec::new()),
        None => (Severity::Info, Vec::new(), Vec::new()),
    };
    r.add(
        "bdi.whole_pool",
        severity,
        title,
        format!(
            "/sys/class/bdi/{}: max_ratio {}, strict_limit {}; the machine's dirty limit now {}{}",
            bdi.name,
            bdi.max_ratio.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
            bdi.strict_limit.map(|s| u8::from(s).to_string()).unwrap_or_else(|| "absent (before Linux 6.2)".into()),
            mb(limit as f64),
            measured
                .map(|m| format!("; measured {}", sinkrate_units::product::mb_per_s(m)))
                .unwrap_or_default()
        ),
        "Without a cap of its own a device may fill the machine's whole dirty pool: what it holds is lost at a power cut and takes that long to drain, and once the pool is full every writer on the machine is throttled, not only the recorder. A cap sized to the device keeps its backlog to what it drains in a few seconds.",
        &now,
        &persistent,
        Some(if measured.is_some() {
            format!(
                "cap {sized_from}: a recorder that outruns the card is throttled once the card holds that much, not when the whole machine does, and a power cut loses at most that; `sinkrate record` sizes the cap from your recorder's own pool"
            )
        } else {
            "a cap is sized from the device's measured rate: `sinkrate check` measures it and offers one".to_string()
        }),
    );
}

fn space(r: &mut Rules) {
    let rate = r.a.stream_bytes_per_s.max(1.0);
    let mp = r.a.target.mount_point.clone();
    if let Some(s) = r.a.space.filter(|s| s.total_bytes > 0) {
        let hours = s.available_bytes as f64 / rate / 3600.0;
        let pct = if s.total_bytes > 0 {
            100.0 * s.available_bytes as f64 / s.total_bytes as f64
        } else {
            0.0
        };
        let evidence = format!(
            "{} available of {} ({pct:.0}%); inodes {} free of {}",
            mb(s.available_bytes as f64),
            mb(s.total_bytes as f64),
            s.inodes_free,
            s.inodes
        );
        if (s.available_bytes as f64) < rate * 60.0 {
            r.add(
                "space.no_room",
                Severity::Critical,
                format!(
                    "{mp} has {} free: {:.0} s of this stream, less than a minute",
                    mb(s.available_bytes as f64),
                    s.available_bytes as f64 / rate
                ),
                evidence,
                "A recorder without loop recording stops within the minute, and every write until then allocates in the last scattered pieces.",
                &[run("delete old recordings, or record with loop recording (sinkrate record --segment-time 60s --loop-fill 90 tests it)")],
                &[],
                None,
            );
        } else if pct < 10.0 || hours < 1.0 {
            r.add(
                "space.low",
                Severity::Warn,
                format!("{mp} has {} free: {hours:.1} h of this stream", mb(s.available_bytes as f64)),
                evidence,
                "A nearly full filesystem allocates in scattered small pieces (slower writes), and a recorder without loop recording stops when it is full.",
                &[run("delete old recordings, or record with loop recording (sinkrate record --segment-time 60s --loop-fill 90 tests it)")],
                &[],
                None,
            );
        } else {
            r.add(
                "space",
                Severity::Ok,
                format!(
                    "{mp} has {} free: {hours:.1} h of this stream",
                    mb(s.available_bytes as f64)
                ),
                evidence,
                "Room to record.",
                &[],
                &[],
                None,
            );
        }
        if s.inodes > 0 && s.inodes_free * 20 < s.inodes {
            r.add(
                "space.inodes_low",
                if s.inodes_free == 0 {
                    Severity::Critical
                } else {
                    Severity::Warn
                },
                format!("{mp} has only {} free inodes", s.inodes_free),
                format!("{} of {} inodes free", s.inodes_free, s.inodes),
                "Each segment file needs an inode; when they run out, creating the next segment fails although space is left.",
                &[run("delete small files, or recreate the filesystem with more inodes (mkfs.ext4 -i 65536 ... destroys data)")],
                &[],
                None,
            );
        }
    }
    for swap in r.a.swap.iter().filter(|s| s.same_disk) {
        r.add(
            "swap.same_device",
            Severity::Warn,
            format!("swap {} is on the recording device", swap.name),
            format!("/proc/swaps: {} {} {} bytes", swap.name, swap.kind, swap.size_bytes),
            "When memory runs short, swapping competes with the recording for the same device exactly when the device is busiest.",
            &[run(format!("swapoff {}", swap.name))],
            &[format!("/etc/fstab: remove or comment out the swap line for {}", swap.name)],
            Some("without swap, memory pressure ends in the OOM killer instead of slowdowns".to_string()),
        );
    }
}

#[cfg(test)]
mod settings_tests {
    use super::*;
    use crate::{audit, Options};
    use sinkrate_model::settings::Setting;
    use sinkrate_model::tunables::{parse, Place};
    use sinkrate_sys::root::SysRoot;

    /// Every fix a rule gives on the fixture boards: each of its settings is printed among
    /// the commands to run now, and is the setting its `tune apply` spelling names at the
    /// same place (what `--from` applies is what the report shows).
    #[test]
    fn every_fixs_settings_are_its_commands_and_its_tune_arguments() {
        let base =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sysroot");
        let mut kinds = std::collections::BTreeSet::new();
        for tree in std::fs::read_dir(&base).expect("fixtures") {
            let tree = tree.expect("entry").path();
            if !tree.is_dir() {
                continue;
            }
            for path in ["/", "/media/usb0", "/media/rec"] {
                let Ok(a) = audit(
                    std::path::Path::new(path),
                    &Options {
                        root: SysRoot::at(&tree),
                        stream_bytes_per_s: 20e6,
                    },
                ) else {
                    continue;
                };
                for f in &a.findings {
                    for s in f.settings() {
                        let shown = f.fix.now.join("\n");
                        let command = s.command();
                        let value = format!("{}={}", s.setting, s.value);
                        assert!(
                            shown.contains(&command) || shown.contains(&value.replace('/', ".")),
                            "{}: {} not among {shown}",
                            f.id,
                            s.argument()
                        );
                        let (device, bdi, mount_point) = match &s.setting {
                            Setting::Queue { device, .. } => (Some(device.as_str()), None, None),
                            Setting::Bdi { bdi, .. } => (None, Some(bdi.as_str()), None),
                            Setting::Mount { mount_point, .. } => {
                                (None, None, Some(mount_point.as_str()))
                            }
                            _ => (None, None, None),
                        };
                        let place = Place {
                            device,
                            bdi,
                            mount_point,
                        };
                        assert_eq!(parse(&s.argument(), place).as_ref(), Ok(s), "{}", f.id);
                        kinds.insert(s.scope().map(|k| k.prefix()));
                    }
                }
            }
        }
        // The boards' fixes include sysctls, mount options and a queue's (a bdi's needs a
        // measured device: whole_pool's own tests hold it to this).
        for kind in ["", "mount:", "queue:"] {
            assert!(
                kinds.contains(&Some(kind)),
                "no fix of kind {kind:?}: {kinds:?}"
            );
        }
    }

    #[test]
    fn a_fix_prints_its_settings_first_and_other_commands_as_they_are() {
        let fix = Fix::of(
            &[
                Step::Set(Assignment::sysctl("vm.dirty_expire_centisecs", 100)),
                Step::Set(Assignment::sysctl("vm.dirty_writeback_centisecs", 100)),
                run("fstrim -v /mnt/card   (trim once, now)"),
                remount("/mnt/card", "noatime"),
            ],
            &[],
        );
        assert_eq!(
            fix.now,
            [
                "sysctl -w vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=100",
                "fstrim -v /mnt/card   (trim once, now)",
                "mount -o remount,noatime /mnt/card"
            ]
        );
        assert_eq!(
            fix.settings
                .iter()
                .map(Assignment::argument)
                .collect::<Vec<_>>(),
            [
                "vm.dirty_expire_centisecs=100",
                "vm.dirty_writeback_centisecs=100",
                "mount:noatime"
            ]
        );
        // An option no tunable owns stays a command, not a setting.
        assert_eq!(
            remount("/mnt/card", "rw"),
            run("mount -o remount,rw /mnt/card")
        );
    }
}

#[cfg(test)]
mod card_tests {
    use super::*;

    /// A finding's settings as `tune apply` takes them.
    fn args(f: &Finding) -> Vec<String> {
        f.settings().iter().map(Assignment::argument).collect()
    }
    use crate::{audit, judge_for, Options};
    use sinkrate_sys::root::SysRoot;

    fn fixture_audit(tree: &str, path: &str, stream: f64) -> Audit {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysroot")
            .join(tree);
        audit(
            std::path::Path::new(path),
            &Options {
                root: SysRoot::at(&base),
                stream_bytes_per_s: stream,
            },
        )
        .expect("fixture audit")
    }

    fn severity_of(a: &Audit, id: &str) -> Option<Severity> {
        a.findings.iter().find(|f| f.id == id).map(|f| f.severity)
    }

    #[test]
    fn a_card_that_does_not_reach_its_class_is_named_with_both_figures() {
        let mut a = fixture_audit("rpi4-sd-card-v30", "/", 3e6);
        assert_eq!(severity_of(&a, "card.identity"), Some(Severity::Ok));
        // Without a measured rate there is nothing to hold the class to.
        assert_eq!(severity_of(&a, "card.class_not_reached"), None);
        a.measured_write_bytes_per_s = Some(11.8e6);
        judge_for(&mut a, 3e6);
        let f = a
            .findings
            .iter()
            .find(|f| f.id == "card.class_not_reached")
            .expect("class finding");
        assert_eq!(f.severity, Severity::Warn);
        assert!(
            f.title.contains("claims V30 (30 MB/s sustained)") && f.title.contains("11.8 MB/s"),
            "{}",
            f.title
        );
        // 28 MB/s is within the 10% a filesystem's overhead may take.
        a.measured_write_bytes_per_s = Some(28e6);
        judge_for(&mut a, 3e6);
        assert_eq!(severity_of(&a, "card.class_not_reached"), None);
        // A stream above the best class the card claims.
        judge_for(&mut a, 50e6);
        assert_eq!(
            severity_of(&a, "card.class_below_stream"),
            Some(Severity::Warn)
        );
    }

    fn whole_pool(a: &Audit) -> &Finding {
        a.findings
            .iter()
            .find(|f| f.id == "bdi.whole_pool")
            .expect("the whole-pool finding")
    }

    #[test]
    fn a_card_that_may_hold_the_whole_dirty_pool_gets_a_cap_sized_to_its_rate() {
        let mut a = fixture_audit("rpi4-sd-card-v30", "/", 3e6);
        let bdi = a.bdi.clone().expect("the card's bdi");
        assert_eq!((bdi.name.as_str(), bdi.max_ratio), ("179:0", Some(100)));
        let limit = a.memory.dirty_threshold_bytes.expect("limit");
        // Without a measured rate: said, as information, with no cap to apply.
        let f = whole_pool(&a);
        assert_eq!(f.severity, Severity::Info);
        assert!(f.settings().is_empty());
        a.measured_write_bytes_per_s = Some(11.8e6);
        judge_for(&mut a, 3e6);
        let f = whole_pool(&a);
        let drain = limit as f64 / 11.8e6;
        assert!(drain > 30.0, "the fixture's pool takes {drain} s to drain");
        assert!(
            f.title.contains(&format!("{drain:.0} s to drain")),
            "{}",
            f.title
        );
        assert_eq!(f.severity, Severity::Warn);
        // Linux 6.1: only the ratio. 0.13 s of 11.8 MB/s (1.6 MB), in whole MiB, as a share
        // of the limit.
        let sized: u64 = 2 << 20;
        let ratio = (sized * 100).div_ceil(limit).clamp(1, 100);
        assert_eq!(args(f), [format!("bdi:max_ratio={ratio}")]);
        assert!(
            f.tradeoff.as_deref().is_some_and(|t| t
                .contains("0.13 s (what a 4-frame capture pool at 30 fps holds) of the 11.8 MB/s")),
            "{:?}",
            f.tradeoff
        );
        // 6.2 and later: held to bytes of its own, always.
        a.bdi = Some(sinkrate_model::facts::BdiLimits {
            strict_limit: Some(false),
            max_bytes: Some(limit),
            max_ratio_fine: Some(1_000_000),
            ..bdi.clone()
        });
        judge_for(&mut a, 3e6);
        let f = whole_pool(&a);
        assert_eq!(
            args(f),
            [
                "bdi:strict_limit=1".to_string(),
                format!("bdi:max_bytes={sized}")
            ]
        );
        assert!(
            f.fix.persistent[0].contains("ATTR{bdi/max_bytes}"),
            "{:?}",
            f.fix
        );
        // A device that drains the pool within 30 s: said, nothing offered.
        a.measured_write_bytes_per_s = Some(limit as f64 / 20.0);
        judge_for(&mut a, 3e6);
        assert_eq!(severity_of(&a, "bdi.whole_pool"), Some(Severity::Ok));
        a.measured_write_bytes_per_s = Some(11.8e6);
        // Capped already: said as it is.
        a.bdi = Some(sinkrate_model::facts::BdiLimits {
            strict_limit: Some(true),
            max_bytes: Some(sized),
            ..bdi
        });
        judge_for(&mut a, 3e6);
        assert_eq!(severity_of(&a, "bdi.whole_pool"), None);
        assert_eq!(severity_of(&a, "bdi.share"), Some(Severity::Ok));
    }

    #[test]
    fn the_partition_is_held_to_the_cards_own_allocation_unit() {
        let a = fixture_audit("rpi4-sd-card-v30", "/", 3e6);
        let f = a
            .findings
            .iter()
            .find(|f| f.id == "part.misaligned")
            .expect("misaligned");
        assert!(
            f.title.contains("the card's 4 MiB allocation unit"),
            "{}",
            f.title
        );
        let a = fixture_audit("emmc-worn", "/", 3e6);
        assert!(a
            .findings
            .iter()
            .any(|f| f.id == "part.aligned" && f.title.contains("512 KiB allocation unit")));
    }

    #[test]
    fn a_worn_emmc_and_a_worn_drive_are_warned_of() {
        let a = fixture_audit("emmc-worn", "/", 3e6);
        assert_eq!(severity_of(&a, "card.life_time"), Some(Severity::Warn));
        assert_eq!(severity_of(&a, "card.pre_eol"), Some(Severity::Warn));
        let a = fixture_audit("usb-ssd-smart", "/media/rec", 3e6);
        assert_eq!(severity_of(&a, "smart.wear"), Some(Severity::Warn));
        let smart = a.health.smart.as_ref().expect("smart");
        assert_eq!(smart.written_bytes, Some(299_067_162_755 * 512));
        assert_eq!(smart.power_on_hours, Some(14210));
    }
}
