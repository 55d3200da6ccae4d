//! `sinkrate audit` on real loop devices formatted and mounted with the problem options, on
//! the sysroot fixture trees, and with bad input.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{run, sinkrate_path, with_root, LoopDevice, ScratchFs};

fn audit(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(sinkrate_path())
        .arg("audit")
        .args(["--output-format", "json"])
        .args(args)
        .output()
        .expect("runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn findings(v: &serde_json::Value) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("findings: {v}"))
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap_or("").to_string(),
                f["severity"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn has(v: &serde_json::Value, id: &str, severity: &str) -> bool {
    findings(v).iter().any(|(i, s)| i == id && s == severity)
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    findings(v).into_iter().map(|(i, _)| i).collect()
}

/// Findings a mount option or mkfs choice triggers; the baseline must have none of them.
const OPTION_FINDINGS: &[&str] = &[
    "mount.sync",
    "ext4.data_journal",
    "ext4.commit_short",
    "ext4.nobarrier",
    "ext4.no_journal",
    "fs.btrfs_cow",
];

fn fs_with(fs: &str, mkfs_extra: &[&str], opts: &str) -> ScratchFs {
    let loopdev = LoopDevice::new("512M", false);
    let device = loopdev.path.clone();
    let dev = device.to_str().expect("utf8");
    match fs {
        "ext4" => {
            let mut args = vec!["-q", "-F"];
            args.extend(mkfs_extra);
            args.push(dev);
            run("mkfs.ext4", &args);
        }
        other => common::mkfs(other, &device),
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    common::mount(&device, mountpoint.path(), opts);
    ScratchFs {
        mountpoint,
        device,
        loopdev,
    }
}

#[test]
fn problem_mount_options_give_their_findings_and_no_wrong_ones() {
    with_root(
        "problem_mount_options_give_their_findings_and_no_wrong_ones",
        &["mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "losetup"],
        || {
            // (fs, mkfs options, mount options, the finding expected, its severity)
            let cases: &[(&str, &[&str], &str, &str, &str)] = &[
                ("ext4", &[], "noatime", "mount.atime", "ok"),
                ("ext4", &[], "sync,noatime", "mount.sync", "critical"),
                ("ext4", &[], "strictatime", "mount.atime", "warn"),
                (
                    "ext4",
                    &[],
                    "noatime,data=journal",
                    "ext4.data_journal",
                    "warn",
                ),
                ("ext4", &[], "noatime,commit=1", "ext4.commit_short", "warn"),
                ("ext4", &[], "noatime,nobarrier", "ext4.nobarrier", "warn"),
                (
                    "ext4",
                    &["-O", "^has_journal"],
                    "noatime",
                    "ext4.no_journal",
                    "warn",
                ),
                ("xfs", &[], "noatime", "mount.atime", "ok"),
                ("btrfs", &[], "noatime", "fs.btrfs_cow", "info"),
            ];
            for (fs, mkfs_extra, opts, expected, severity) in cases {
                let scratch = fs_with(fs, mkfs_extra, opts);
                let dir = scratch.path().to_str().expect("utf8");
                let (code, v, stderr) = audit(&[dir]);
                let label = format!("{fs} {mkfs_extra:?} -o {opts}");
                assert_eq!(code, Some(0), "{label}: {stderr}");
                assert!(
                    has(&v, expected, severity),
                    "{label}: expected {expected} ({severity}), got {:?}",
                    findings(&v)
                );
                for other in OPTION_FINDINGS.iter().filter(|o| *o != expected) {
                    assert!(
                        !ids(&v).iter().any(|i| i == other),
                        "{label}: {other} is wrong here: {:?}",
                        findings(&v)
                    );
                }
                assert_eq!(v["target"]["fs_type"], *fs, "{label}");
                assert_eq!(v["target"]["mount_point"], dir, "{label}");
                assert_eq!(
                    v["target"]["device"].as_str(),
                    scratch.device.to_str(),
                    "{label}"
                );
                let options: Vec<&str> = v["target"]["mount_options"]
                    .as_array()
                    .expect("mount_options")
                    .iter()
                    .filter_map(|o| o.as_str())
                    .collect();
                if opts.contains("sync") {
                    assert!(options.contains(&"sync"), "{label}: {options:?}");
                }
                if *fs == "ext4" {
                    // Read from the device's own superblock, without tune2fs.
                    let sb = &v["filesystem"]["ext4"];
                    assert_eq!(
                        sb["has_journal"].as_bool(),
                        Some(mkfs_extra.is_empty()),
                        "{label}: {sb}"
                    );
                }
                // Every finding carries what scripts rely on.
                for f in v["findings"].as_array().expect("findings") {
                    for key in ["id", "severity", "evidence", "why", "fix", "tradeoff"] {
                        assert!(f.get(key).is_some(), "{label}: {key} missing in {f}");
                    }
                }
                let devices = v["devices"].as_array().expect("devices");
                assert_eq!(devices[0]["bus"], "loop", "{label}");
                assert!(
                    devices.len() >= 2,
                    "{label}: the loop device's backing file leads to the host's device"
                );
            }
        },
    );
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysroot")
        .join(name)
}

#[test]
fn fixture_arm_board_with_a_usb3_drive_on_a_usb2_path() {
    let root = fixture("arm-sbc-usb3-drive-on-usb2");
    let (code, v, stderr) = audit(&["/media/usb0", "--sysroot", root.to_str().expect("utf8")]);
    assert_eq!(code, Some(0), "{stderr}");
    for (id, severity) in [
        ("mount.sync", "critical"),
        ("usb.link_below_capability", "critical"),
        ("usb.shared_bus", "warn"),
        ("part.misaligned", "warn"),
        ("dev.max_sectors_small", "info"),
        ("vm.expire", "warn"),
    ] {
        assert!(has(&v, id, severity), "{id}: {:?}", findings(&v));
    }
    assert_eq!(v["usb"]["device"]["speed_mbps"], 480.0);
    assert_eq!(v["usb"]["controller_max_mbps"], 5000.0);
    assert_eq!(v["usb"]["hubs"][0]["name"], "1-1");
    let peers: Vec<&str> = v["usb"]["peers"]
        .as_array()
        .expect("peers")
        .iter()
        .filter_map(|p| p["class"].as_str())
        .collect();
    assert_eq!(peers, ["video", "HID"]);
    assert_eq!(v["target"]["device"], "/dev/sda1");
    assert_eq!(v["filesystem"]["ext4"]["has_journal"], true);
    // Critical findings come first.
    assert_eq!(v["findings"][0]["severity"], "critical");
}

#[test]
fn fixture_arm_board_sd_card_root_and_fat_boot_partition() {
    let root = fixture("arm-sbc-usb3-drive-on-usb2");
    let r = root.to_str().expect("utf8");
    let (code, v, stderr) = audit(&["/home/pi/clips", "--sysroot", r]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["target"]["mount_point"], "/");
    assert_eq!(v["target"]["device"], "/dev/mmcblk0p2");
    assert_eq!(v["devices"][0]["bus"], "mmc");
    assert_eq!(v["devices"][0]["mmc_type"], "SD");
    assert!(has(&v, "part.aligned", "ok"), "{:?}", findings(&v));
    assert!(has(&v, "mount.atime", "ok"));
    assert!(v["usb"].is_null());
    let (code, v, stderr) = audit(&["/boot/firmware", "--sysroot", r]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["filesystem"]["cluster_bytes"], 4096);
    assert!(has(&v, "fs.vfat", "warn"), "{:?}", findings(&v));
    let fix = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["id"] == "fs.vfat")
        .map(|f| f["fix"]["now"].to_string())
        .unwrap_or_default();
    assert!(fix.contains("mkfs.ext4 -L rec /dev/mmcblk0p1"), "{fix}");
}

#[test]
fn fixture_jetson_with_a_healthy_usb3_drive_has_nothing_critical() {
    let root = fixture("jetson-emmc-usb3-drive");
    let r = root.to_str().expect("utf8");
    let (code, v, stderr) = audit(&["/media/usb0", "--sysroot", r]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(has(&v, "usb.link", "ok"), "{:?}", findings(&v));
    assert!(has(&v, "ext4.data_writeback", "info"));
    assert!(has(&v, "mount.atime", "ok"));
    assert!(has(&v, "part.aligned", "ok"));
    assert!(
        !findings(&v)
            .iter()
            .any(|(_, s)| s == "critical" || s == "warn"),
        "{:?}",
        findings(&v)
    );
    assert_eq!(v["filesystem"]["ext4"]["default_data_mode"], "writeback");
    // A 50 MB/s stream on a 4 GB board with dirty_ratio 5: the page cache holds ~3 s.
    let (_, v, _) = audit(&["/media/usb0", "--sysroot", r, "--bitrate", "400M"]);
    assert!(
        has(&v, "vm.dirty_limit_small_for_stream", "warn"),
        "{:?}",
        findings(&v)
    );
    // --strict turns warn findings into exit 1.
    let out = Command::new(sinkrate_path())
        .args([
            "audit",
            "/media/usb0",
            "--sysroot",
            r,
            "--bitrate",
            "400M",
            "--strict",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn fixture_laptop_follows_bind_mounts_and_overlays_and_notes_what_it_could_not_read() {
    let root = fixture("x86-laptop-nvme");
    let r = root.to_str().expect("utf8");
    let (code, v, stderr) = audit(&["/var/lib/docker/overlay2/3f1e/merged", "--sysroot", r]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        v["target"]["fs_type"], "ext4",
        "the overlay's upper directory's filesystem"
    );
    assert_eq!(
        v["target"]["overlay_at"],
        "/var/lib/docker/overlay2/3f1e/merged"
    );
    assert!(has(&v, "fs.overlay_upper", "info"));
    assert!(has(&v, "swap.same_device", "warn"));
    assert!(has(&v, "mount.discard", "info"));
    assert_eq!(v["devices"][0]["bus"], "nvme");
    let notes = v["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("superblock not read"))),
        "{notes:?}"
    );
    let (_, v, _) = audit(&["/srv/videos", "--sysroot", r]);
    assert_eq!(v["target"]["bind_of"], "/home/user/videos");
    assert!(has(&v, "mount.bind", "info"));
    // xfs on dm-crypt: the chain goes from dm-0 to its member partition, whose start is
    // judged.
    let (_, v, _) = audit(&["/data/clips", "--sysroot", r]);
    assert_eq!(v["target"]["fs_type"], "xfs");
    assert_eq!(v["target"]["device"], "/dev/dm-0");
    let chain: Vec<(&str, &str)> = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| {
            (
                d["name"].as_str().unwrap_or(""),
                d["bus"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(chain, [("dm-0", "dm"), ("nvme0n1p4", "nvme")]);
    assert_eq!(v["devices"][0]["dm_name"], "cryptdata");
    assert!(has(&v, "part.misaligned", "info"), "{:?}", findings(&v));
    assert!(!ids(&v).iter().any(|i| i.starts_with("ext4.")));
}

/// The fixture's JSON with what changes from run to run masked.
fn masked(mut v: serde_json::Value) -> serde_json::Value {
    v["timestamp_ms"] = serde_json::json!("<masked>");
    v["started_at"] = serde_json::json!("<masked>");
    v["tool"]["version"] = serde_json::json!("<masked>");
    v["sysroot"] = serde_json::json!("<masked>");
    let text = serde_json::to_string_pretty(&v).expect("json");
    let root = fixture("").to_string_lossy().to_string();
    serde_json::from_str(&text.replace(&root, "<fixtures>/")).expect("json")
}

#[test]
fn json_snapshots_of_the_fixtures() {
    for (name, target) in [
        ("arm-sbc-usb3-drive-on-usb2", "/media/usb0"),
        ("jetson-emmc-usb3-drive", "/media/usb0"),
        ("x86-laptop-nvme", "/srv/videos"),
        ("rpi4-sd-card-v30", "/"),
        ("emmc-worn", "/"),
        ("usb-ssd-smart", "/media/rec"),
    ] {
        let root = fixture(name);
        let (code, v, stderr) = audit(&[target, "--sysroot", root.to_str().expect("utf8")]);
        assert_eq!(code, Some(0), "{name}: {stderr}");
        let got = masked(v);
        let snapshot = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(format!("audit-{name}.json"));
        let text = serde_json::to_string_pretty(&got).expect("json") + "\n";
        if std::env::var_os("SINKRATE_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&snapshot, &text).expect("write snapshot");
            continue;
        }
        let want = std::fs::read_to_string(&snapshot).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with SINKRATE_UPDATE_SNAPSHOTS=1 to create it)",
                snapshot.display()
            )
        });
        assert_eq!(
            text, want,
            "{name}: the audit's JSON changed; if that is intended, rerun with SINKRATE_UPDATE_SNAPSHOTS=1 and review the diff"
        );
    }
}

#[test]
fn text_groups_by_severity_and_respects_no_color() {
    let root = fixture("arm-sbc-usb3-drive-on-usb2");
    let out = Command::new(sinkrate_path())
        .args([
            "audit",
            "/media/usb0",
            "--sysroot",
            root.to_str().expect("utf8"),
            "--color",
            "always",
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\x1b["),
        "--color always colours even with NO_COLOR"
    );
    let out = Command::new(sinkrate_path())
        .args([
            "audit",
            "/media/usb0",
            "--sysroot",
            root.to_str().expect("utf8"),
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!text.contains("\x1b["), "no colour off a terminal");
    let critical = text.find("critical  mount.sync").expect("critical first");
    let warn = text.find("warn      part.misaligned").expect("warn");
    let ok = text.find("ok        vm.dirty").expect("ok");
    assert!(critical < warn && warn < ok, "{text}");
    assert!(
        text.contains("now:        mount -o remount,async /media/usb0"),
        "{text}"
    );
    assert!(text.contains("persistent: /etc/fstab"), "{text}");
}

#[test]
fn bad_input_gets_one_line_and_the_rest_of_the_audit_runs_where_it_can() {
    let empty = tempfile::tempdir().expect("tempdir");
    let empty_root = empty.path().to_str().expect("utf8");
    for (args, mentions) in [
        (vec!["/no/such/dir"], "/no/such/dir"),
        (vec!["/media/usb0", "--sysroot", empty_root], "proc/"),
    ] {
        let (code, _, err) = audit(&args);
        assert_eq!(code, Some(2), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(mentions), "{err}");
    }
    // A sysroot without sys/: mount and memory findings still come, with a note.
    let partial = tempfile::tempdir().expect("tempdir");
    let src = fixture("arm-sbc-usb3-drive-on-usb2");
    run(
        "cp",
        &[
            "-a",
            src.join("proc").to_str().expect("utf8"),
            partial.path().to_str().expect("utf8"),
        ],
    );
    let (code, v, stderr) = audit(&[
        "/media/usb0",
        "--sysroot",
        partial.path().to_str().expect("utf8"),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(has(&v, "mount.sync", "critical"));
    assert!(has(&v, "vm.expire", "warn"));
    assert!(
        v["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("not found in sysfs"))),
        "{}",
        v["notes"]
    );
    // A relative path with --sysroot is ambiguous.
    let (code, _, stderr) = audit(&["media", "--sysroot", src.to_str().expect("utf8")]);
    assert_eq!(code, Some(2), "{stderr}");
    // /proc is audited (it is not storage), and says so.
    let (code, v, _) = audit(&["/proc"]);
    assert_eq!(code, Some(0));
    assert!(has(&v, "fs.pseudo", "critical"));
}

#[test]
fn without_root_the_superblock_is_skipped_with_a_note_and_the_rest_runs() {
    with_root(
        "without_root_the_superblock_is_skipped_with_a_note_and_the_rest_runs",
        &["mkfs.ext4", "runuser"],
        || {
            let fs = ScratchFs::new("256M", "ext4", "sync");
            let binary = common::BinaryForOtherUsers::new();
            let out = Command::new("runuser")
                .current_dir(binary.dir())
                .args(["-u", "nobody", "--"])
                .arg(&binary.path)
                .args(["audit", "--output-format", "json"])
                .arg(fs.path())
                .output()
                .expect("runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert!(has(&v, "mount.sync", "critical"), "{:?}", findings(&v));
            assert!(v["filesystem"]["ext4"].is_null());
            let notes = v["notes"].to_string();
            assert!(
                notes.contains("superblock not read") && notes.contains("run as root"),
                "{notes}"
            );
        },
    );
}

#[test]
fn a_full_filesystem_is_critical_and_an_empty_one_is_not() {
    with_root(
        "a_full_filesystem_is_critical_and_an_empty_one_is_not",
        &["mkfs.ext4"],
        || {
            let fs = ScratchFs::new("64M", "ext4", "");
            let dir = fs.path().to_str().expect("utf8");
            let (_, v, err) = audit(&[dir, "--bitrate", "1M"]);
            // 53 MB is 7 minutes of 1 Mbit/s: low, not critical.
            assert!(has(&v, "space.low", "warn"), "{err}{v}");
            assert!(!ids(&v).contains(&"space.no_room".to_string()), "{v}");
            // Filled to the last block, as a card is after a long recording.
            let _ = Command::new("dd")
                .args(["if=/dev/zero", "bs=1M", "status=none"])
                .arg(format!("of={dir}/fill"))
                .status()
                .expect("dd runs");
            let (code, v, err) = audit(&[dir, "--bitrate", "1M", "--strict"]);
            assert!(has(&v, "space.no_room", "critical"), "{err}{v}");
            assert_eq!(code, Some(1), "--strict fails on it");
        },
    );
}

#[test]
fn the_help_examples_run_as_written() {
    let help = Command::new(sinkrate_path())
        .args(["audit", "--help"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&help.stdout);
    let examples: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("sinkrate audit") && l.contains("--sysroot"))
        .collect();
    assert!(!examples.is_empty(), "{text}");
    for example in examples {
        let args: Vec<&str> = example.split_whitespace().skip(1).collect();
        let out = Command::new(sinkrate_path())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{example}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_man_page_has_a_page_for_every_page_it_refers_to() {
    let out = Command::new(sinkrate_path())
        .arg("man")
        .output()
        .expect("runs");
    let roff = String::from_utf8_lossy(&out.stdout);
    let pages: Vec<String> = roff
        .lines()
        .filter_map(|l| l.strip_prefix(".TH "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    for line in roff.lines() {
        if let Some(name) = line.strip_suffix("(1)") {
            let name = name.replace("\\-", "-");
            assert!(
                pages.contains(&name),
                "{name}(1) is referred to but not in {pages:?}"
            );
        }
    }
    assert!(pages.contains(&"sinkrate-emulate-up".to_string()));
    assert!(
        roff.contains("write\\-rate"),
        "emulate up's options are documented"
    );
}
