//! Writing to block devices on real loop devices: refused when mounted (directly, through a
//! symlink, or through the whole disk of a mounted partition) or when holding a filesystem;
//! allowed with --force on a device that is not mounted.

use crate::common;

use common::{mkfs, mount, sinkrate, with_root, LoopDevice};

fn refused(device: &std::path::Path, expect: &str) {
    let out = sinkrate()
        .args(["--name=w", "--rw=write", "--bs=64k", "--size=1m"])
        .arg(format!("--filename={}", device.display()))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to write") && stderr.contains(expect),
        "{stderr}"
    );
}

#[test]
fn mounted_devices_are_refused_through_every_path() {
    with_root(
        "mounted_devices_are_refused_through_every_path",
        &["losetup", "mkfs.ext4", "sfdisk"],
        || {
            let disk = LoopDevice::new("64M", true);
            let part = disk.partition(1);
            mkfs("ext4", &part);
            let mnt = tempfile::tempdir().expect("tempdir");
            mount(&part, mnt.path(), "");
            let _unmount = scopeguard(mnt.path().to_path_buf());
            refused(&part, "is mounted at");
            refused(&disk.path, "its partition");
            let link_dir = tempfile::tempdir().expect("tempdir");
            let link = link_dir.path().join("card");
            std::os::unix::fs::symlink(&part, &link).expect("symlink");
            refused(&link, "is mounted at");
            // --force (alias --allow-mounted-write) is the user's explicit choice: it writes, and
            // says what it is overriding.
            let out = sinkrate()
                .args([
                    "--name=w",
                    "--rw=write",
                    "--bs=64k",
                    "--size=1m",
                    "--allow-mounted-write",
                ])
                .arg(format!("--filename={}", part.display()))
                .output()
                .expect("runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            // Said in the results' closing notes (standard error stays fio's).
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains("note: ")
                    && stdout.contains("although")
                    && stdout.contains("is mounted at"),
                "{stdout}"
            );
            // Reading is always allowed.
            let out = sinkrate()
                .args(["--name=r", "--rw=read", "--bs=64k", "--size=1m"])
                .arg(format!("--filename={}", part.display()))
                .output()
                .expect("runs");
            common::succeeded(&out);
        },
    );
}

#[test]
fn signatures_are_refused_unless_forced() {
    with_root(
        "signatures_are_refused_unless_forced",
        &["losetup", "mkfs.ext4"],
        || {
            let dev = LoopDevice::new("64M", false);
            mkfs("ext4", &dev.path);
            refused(&dev.path, "ext2/3/4 filesystem");
            let out = sinkrate()
                .args([
                    "--name=w",
                    "--rw=write",
                    "--bs=64k",
                    "--size=4m",
                    "--direct=1",
                    "--force",
                    "--output-format=json",
                ])
                .arg(format!("--filename={}", dev.path.display()))
                .output()
                .expect("runs");
            common::succeeded(&out);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(v["jobs"][0]["write"]["io_bytes"], 4 << 20);
            assert_eq!(v["targets"][0]["is_block_device"], true);
            assert!(dev.path.exists(), "a device is never removed");
            // A blank device (no signature) may be written without --force.
            let blank = LoopDevice::new("16M", false);
            let out = sinkrate()
                .args(["--name=w", "--rw=write", "--bs=64k", "--size=1m"])
                .arg(format!("--filename={}", blank.path.display()))
                .output()
                .expect("runs");
            common::succeeded(&out);
        },
    );
}

/// Volumes beyond the common filesystems stop a write too: a real F2FS (mkfs.f2fs), and an
/// LVM2 label and an md 0.90 superblock (at the device's end) written from their documented
/// layouts; the device's bytes are unchanged after each refusal, by bench and by verify.
#[test]
fn volume_signatures_on_devices_are_refused() {
    with_root(
        "volume_signatures_on_devices_are_refused",
        &["losetup", "mkfs.f2fs"],
        || {
            use std::os::unix::fs::FileExt;
            let check = |dev: &std::path::Path, expect: &str| {
                let before = std::fs::read(dev).expect("read device");
                refused(dev, expect);
                let out = std::process::Command::new(common::sinkrate_path())
                    .args(["verify", "--progress", "never"])
                    .arg(dev)
                    .output()
                    .expect("verify runs");
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{stderr}");
                assert!(stderr.contains(expect), "{stderr}");
                assert!(
                    std::fs::read(dev).expect("read") == before,
                    "{expect}: written"
                );
            };
            let f2fs = LoopDevice::new("128M", false);
            common::run(
                "mkfs.f2fs",
                &["-q", "-f", f2fs.path.to_str().expect("utf8")],
            );
            check(&f2fs.path, "an F2FS filesystem");

            let lvm = LoopDevice::new("16M", false);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&lvm.path)
                .expect("open");
            f.write_all_at(b"LABELONE", 512).expect("label");
            f.write_all_at(b"LVM2 001", 512 + 24).expect("type");
            f.sync_all().expect("sync");
            check(&lvm.path, "an LVM2 physical volume");

            let md = LoopDevice::new("16M", false);
            let size = 16u64 << 20;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&md.path)
                .expect("open");
            f.write_all_at(&[0xfc, 0x4e, 0x2b, 0xa9], size - 64 * 1024)
                .expect("md magic");
            f.sync_all().expect("sync");
            check(&md.path, "an md RAID member (superblock 0.90)");
        },
    );
}

/// Unmounts on drop, so a failing assertion does not leave a mount behind.
fn scopeguard(path: std::path::PathBuf) -> impl Drop {
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    Unmount(path)
}

#[test]
fn honest_numbers_on_a_real_filesystem() {
    with_root(
        "honest_numbers_on_a_real_filesystem",
        &["losetup", "mkfs.ext4"],
        || {
            let fs = common::ScratchFs::new("512M", "ext4", "");
            // Buffered, no fsync, smaller than the dirty limit: both warnings, and the flush.
            let v = common::sinkrate_json(
                fs.path(),
                &[
                    "--name=b",
                    "--rw=write",
                    "--bs=1m",
                    "--size=64m",
                    "--unlink=1",
                ],
            );
            let ids: Vec<&str> = v["warnings"]
                .as_array()
                .expect("warnings")
                .iter()
                .filter_map(|w| w["id"].as_str())
                .collect();
            assert!(ids.contains(&"cache.unflushed_at_end"), "{ids:?}");
            assert!(ids.contains(&"cache.fits_in_dirty_limit"), "{ids:?}");
            let flush = &v["jobs"][0]["sinkrate"]["flush"];
            assert!(flush["device_bytes_per_s"]
                .as_f64()
                .is_some_and(|r| r > 0.0));
            assert!(
                flush["device_bytes_per_s"].as_f64() <= flush["application_bytes_per_s"].as_f64()
            );
            // With end_fsync the figure is already honest: no flush warning.
            let v = common::sinkrate_json(
                fs.path(),
                &[
                    "--name=b",
                    "--rw=write",
                    "--bs=1m",
                    "--size=64m",
                    "--end_fsync=1",
                    "--unlink=1",
                ],
            );
            let ids: Vec<&str> = v["warnings"]
                .as_array()
                .expect("warnings")
                .iter()
                .filter_map(|w| w["id"].as_str())
                .collect();
            assert!(!ids.contains(&"cache.unflushed_at_end"), "{ids:?}");
            assert!(v["jobs"][0]["sync"]["total_ios"].as_u64() >= Some(1));
            assert_eq!(v["targets"][0]["fs_type"], "ext4");
            assert!(
                common::files_in(fs.path())
                    .iter()
                    .all(|f| f == "lost+found"),
                "files left behind"
            );
        },
    );
}
