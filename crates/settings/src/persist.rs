//! Settings made to last: every fix sinkrate advises goes into one file, each key merged in
//! (its old line, and its companion's, replaced; every other line kept), so that one fix
//! never overwrites another's.

/// The one file sinkrate's persistent queue settings go into.
pub const UDEV_FILE: &str = "/etc/udev/rules.d/60-sinkrate.rules";

/// `text` (a udev rules file) with one attribute of one disk set (`queue/scheduler`,
/// `bdi/max_bytes`, a path under the disk's sysfs directory): the rule for the same disk and
/// attribute replaced, every other line kept.
pub fn merge_udev_rule(text: &str, device: &str, attr: &str, value: &str) -> String {
    let kernel = format!("KERNEL==\"{device}\"");
    let attribute = format!("ATTR{{{attr}}}");
    let mut out: String = text
        .lines()
        .filter(|l| !(l.contains(&kernel) && l.contains(&attribute)))
        .map(|l| format!("{l}\n"))
        .collect();
    out.push_str(&format!(
        "ACTION==\"add|change\", SUBSYSTEM==\"block\", {kernel}, {attribute}=\"{value}\"\n"
    ));
    out
}

/// The fstab sinkrate edits with `--persist-fstab` unless told another (an image's rootfs).
pub const FSTAB: &str = "/etc/fstab";

/// Whether mount option `o` is a member of `family` (as `Setting::Mount` names families).
fn in_family(o: &str, family: &str) -> bool {
    match family {
        "commit" => o.starts_with("commit="),
        _ => {
            sinkrate_model::tunables::mount_members(family).contains(&o)
                || (family == "atime" && o == "atime")
        }
    }
}

/// `text` (an fstab) with the line for `mount_point` carrying `value` for the option
/// `family` in place of the member there; every other line and field kept byte for byte.
/// None when no line mounts at `mount_point`.
pub fn merge_fstab(text: &str, mount_point: &str, family: &str, value: &str) -> Option<String> {
    let mut found = false;
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        // Field spans, so that only the options field changes.
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in body.char_indices() {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    spans.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push((s, body.len()));
        }
        let field = |k: usize| spans.get(k).map(|(a, b)| &body[*a..*b]);
        let ours = !found
            && !body.trim_start().starts_with('#')
            && field(1).is_some_and(|m| m.replace("\\040", " ") == mount_point);
        let Some(&(a, b)) = spans.get(3).filter(|_| ours) else {
            out.push_str(line);
            continue;
        };
        found = true;
        let mut options: Vec<&str> = body[a..b]
            .split(',')
            .filter(|o| !in_family(o, family) && *o != "defaults")
            .collect();
        // The kernel's default needs no option: commit=0 is not an fstab word.
        if value != "commit=0" {
            options.push(value);
        }
        let options = if options.is_empty() {
            "defaults".to_string()
        } else {
            options.join(",")
        };
        out.push_str(&body[..a]);
        out.push_str(&options);
        out.push_str(&line[b..]);
    }
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_sys::sysctl_conf::{merge_command, merge_sysctl_conf};

    #[test]
    fn fstab_changes_only_the_options_of_the_line_for_the_mount_point() {
        let fstab = "# /etc/fstab\nUUID=1 / ext4 errors=remount-ro 0 1\nUUID=2\t/mnt/card\text4\tdefaults,relatime,commit=5\t0 2\n/dev/sdb1 /mnt/my\\040card vfat rw 0 0\n";
        let out = merge_fstab(fstab, "/mnt/card", "atime", "noatime").expect("a line");
        assert_eq!(
            out,
            "# /etc/fstab\nUUID=1 / ext4 errors=remount-ro 0 1\nUUID=2\t/mnt/card\text4\tcommit=5,noatime\t0 2\n/dev/sdb1 /mnt/my\\040card vfat rw 0 0\n"
        );
        let out = merge_fstab(&out, "/mnt/card", "commit", "commit=0").expect("a line");
        assert!(out.contains("\tnoatime\t0 2\n"), "{out}");
        let out = merge_fstab(fstab, "/mnt/my card", "atime", "noatime").expect("escaped");
        assert!(out.ends_with("vfat rw,noatime 0 0\n"), "{out}");
        assert_eq!(merge_fstab(fstab, "/mnt/other", "atime", "noatime"), None);
        // Commented lines are not the mount's.
        assert_eq!(
            merge_fstab(
                "#UUID=2 /mnt/card ext4 defaults 0 2\n",
                "/mnt/card",
                "atime",
                "noatime"
            ),
            None
        );
    }

    #[test]
    fn files_merge_their_keys_and_keep_every_other_line() {
        let conf = "vm.dirty_expire_centisecs = 100\nvm.dirty_ratio = 20\n# kept\n";
        assert_eq!(
            merge_sysctl_conf(conf, &[("vm.dirty_bytes", "67108864".into())]),
            "vm.dirty_expire_centisecs = 100\n# kept\nvm.dirty_bytes = 67108864\n"
        );
        let rules = "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"sda\", ATTR{queue/scheduler}=\"bfq\"\nOTHER\n";
        let merged = merge_udev_rule(rules, "sda", "queue/scheduler", "none");
        assert_eq!(
            merged,
            "OTHER\nACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"sda\", ATTR{queue/scheduler}=\"none\"\n"
        );
        // A disk's writeback limit, through its bdi link, beside its queue's rule.
        let both = merge_udev_rule(&merged, "sda", "bdi/max_bytes", "52428800");
        assert!(both.starts_with(&merged), "{both}");
        assert!(both.ends_with("KERNEL==\"sda\", ATTR{bdi/max_bytes}=\"52428800\"\n"));
        let again = merge_udev_rule(&both, "sda", "bdi/max_bytes", "16777216");
        assert_eq!(again.matches("bdi/max_bytes").count(), 1, "{again}");
    }

    #[test]
    fn merging_keeps_other_fixes_and_replaces_the_key_and_its_companion() {
        let d = tempfile::tempdir().expect("tempdir");
        let file = d.path().join("60-sinkrate.conf");
        std::fs::write(
            &file,
            "vm.dirty_expire_centisecs = 100\nvm.dirty_ratio = 20\nvm.dirty_bytes = 1\n# note\n",
        )
        .expect("write");
        let cmd = merge_command(
            file.to_str().expect("utf8"),
            &[
                ("vm.dirty_bytes", "67108864".to_string()),
                ("vm.dirty_background_bytes", "33554432".to_string()),
            ],
        );
        let status = std::process::Command::new("sh")
            .args(["-c", &cmd])
            .status()
            .expect("sh runs");
        assert!(status.success(), "{cmd}");
        let text = std::fs::read_to_string(&file).expect("read");
        assert_eq!(
            text,
            "vm.dirty_expire_centisecs = 100\n# note\nvm.dirty_bytes = 67108864\nvm.dirty_background_bytes = 33554432\n"
        );
        // Merging again changes nothing.
        assert!(std::process::Command::new("sh")
            .args(["-c", &cmd])
            .status()
            .expect("sh runs")
            .success());
        assert_eq!(std::fs::read_to_string(&file).expect("read"), text);
    }
}
