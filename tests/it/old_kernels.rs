//! Boards on old kernels (4.4, 4.9, 4.14, 4.19; fixture trees in tests/fixtures/sysroot written
//! in those kernels' formats): every /proc parser reads their files, the sampler takes its
//! series from them (PSI, absent before 4.20, degrades only its own series), and `audit
//! --sysroot` judges their storage with findings sized to each board's memory.

use crate::common;

use std::path::{Path, PathBuf};

use sinkrate_procparse::{cpustat, diskstats, meminfo, mountinfo, pressure, vmstat};
use sinkrate_sampler::live::SamplerCore;
use sinkrate_sampler::SamplerConfig;

/// Each old-kernel tree, its kernel, its storage mount for recordings, the disk behind it and
/// its RAM in MB (MemTotal).
const TREES: [(&str, &str, &str, &str, u64); 4] = [
    ("imx6ull-dashcam-4.4-512m", "4.4", "/mnt/sd", "mmcblk0", 518),
    (
        "jetson-tx2-l4t-4.9",
        "4.9",
        "/media/nvidia/SD",
        "mmcblk1",
        8232,
    ),
    (
        "rpi3-raspbian-4.14-1g",
        "4.14",
        "/media/pi/STICK",
        "sda",
        971,
    ),
    ("imx8m-4.19-2g", "4.19", "/media/ssd", "sda", 2070),
];

fn tree(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysroot")
        .join(name)
}

fn read(tree: &Path, file: &str) -> String {
    std::fs::read_to_string(tree.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn every_proc_parser_reads_the_old_kernels() {
    for (name, kernel, mount, disk, ram_mb) in TREES {
        let t = tree(name);
        assert!(read(&t, "proc/sys/kernel/osrelease").starts_with(kernel));

        let m = meminfo::parse(&read(&t, "proc/meminfo"));
        assert_eq!(
            m.mem_total_bytes.map(|b| b / 1_000_000),
            Some(ram_mb),
            "{name}"
        );
        assert!(m.mem_available_bytes.is_some_and(|a| a > 0), "{name}");
        assert!(
            m.dirty_bytes.is_some() && m.writeback_bytes.is_some(),
            "{name}"
        );

        let v = vmstat::parse(&read(&t, "proc/vmstat"));
        let (hard, background) = (
            v.nr_dirty_threshold.expect("threshold"),
            v.nr_dirty_background_threshold.expect("background"),
        );
        assert!(background < hard, "{name}");
        assert!(v.nr_dirty.is_some() && v.nr_dirtied.is_some(), "{name}");
        assert_eq!(v.freerun_ceiling_pages(), Some((hard + background) / 2));

        // 14 fields before 4.18, 18 from 4.18 on: the same counters either way.
        let text = read(&t, "proc/diskstats");
        let fields = text
            .lines()
            .next()
            .expect("a line")
            .split_whitespace()
            .count();
        assert_eq!(fields, if kernel == "4.19" { 18 } else { 14 }, "{name}");
        let c = diskstats::device(&text, disk).unwrap_or_else(|| panic!("{name}: {disk}"));
        assert!(
            c.writes > 0 && c.write_bytes == c.writes * 64 * 512,
            "{name}: {c:?}"
        );

        let cpu = cpustat::parse(&read(&t, "proc/stat")).expect("cpu line");
        assert!(cpu.total() > cpu.idle);

        let mounts = mountinfo::parse(&read(&t, "proc/self/mountinfo"));
        let storage: Vec<&str> = mounts
            .iter()
            .filter(|m| sinkrate_sys::mounts::is_storage(&m.fs_type))
            .map(|m| m.mount_point.as_str())
            .collect();
        assert!(storage.contains(&mount), "{name}: {storage:?}");
        // cgroup v1: one mount per controller, none of them storage.
        let cgroups = mounts.iter().filter(|m| m.fs_type == "cgroup").count();
        assert!(cgroups >= 4, "{name}");
        assert!(!storage.iter().any(|m| m.starts_with("/sys")), "{name}");

        // No PSI before 4.20.
        assert!(!t.join("proc/pressure").exists(), "{name}");
        assert_eq!(pressure::parse(""), None);
    }
}

/// The sampler reads an old kernel's tree: memory, thresholds, the disk and the CPU as on a
/// new kernel, and one note for the PSI series it cannot have.
#[test]
fn sampler_degrades_only_the_missing_series() {
    for (name, _, _, disk, _) in TREES {
        let mut core = SamplerCore::new(&SamplerConfig {
            devices: vec![disk.to_string()],
            root: sinkrate_sys::SysRoot::at(&tree(name)),
            ..SamplerConfig::default()
        });
        let _first = core.sample();
        let s = core.sample();
        assert!(
            s.dirty_bytes.is_some() && s.mem_available_bytes.is_some(),
            "{name}"
        );
        assert!(s.dirty_threshold_bytes.is_some() && s.freerun_ceiling_bytes.is_some());
        assert_eq!(s.disk_write_bytes_per_s, Some(0.0), "{name}: {s:?}");
        // A tree does not move: no CPU time passes between its samples, so no CPU shares.
        assert_eq!(s.cpu_idle_pct, None, "{name}");
        assert_eq!(s.psi_io_some_pct, None);
        assert_eq!(core.notes.len(), 1, "{name}: {:?}", core.notes);
        assert!(core.notes[0].contains("PSI"), "{:?}", core.notes);
        // Without a device list, the whole disks with hardware behind them, from the tree.
        let core = SamplerCore::new(&SamplerConfig {
            root: sinkrate_sys::SysRoot::at(&tree(name)),
            ..SamplerConfig::default()
        });
        assert!(
            core.devices().iter().any(|d| d == disk),
            "{name}: {:?}",
            core.devices()
        );
    }
}

fn audit(args: &[&str]) -> serde_json::Value {
    let (code, stdout, stderr) = common::sinkrate_sub("audit", args);
    assert!(matches!(code, Some(0) | Some(1)), "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn findings(v: &serde_json::Value) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn audit_reads_each_old_kernel_tree() {
    let expected: [(&str, &[(&str, &str)]); 4] = [
        (
            "imx6ull-dashcam-4.4-512m",
            &[
                ("fs.vfat", "warn"),
                ("part.aligned", "ok"),
                ("vm.dirty", "ok"),
            ],
        ),
        (
            "jetson-tx2-l4t-4.9",
            &[
                ("mount.atime", "info"),
                ("vm.expire", "warn"),
                ("vm.dirty", "ok"),
            ],
        ),
        (
            "rpi3-raspbian-4.14-1g",
            &[
                ("fs.vfat", "warn"),
                ("part.misaligned", "warn"),
                ("usb.link", "ok"),
            ],
        ),
        (
            "imx8m-4.19-2g",
            &[("mount.sync", "critical"), ("usb.link", "ok")],
        ),
    ];
    for ((name, _, mount, disk, _), (tree_name, want)) in TREES.iter().zip(expected) {
        assert_eq!(*name, tree_name);
        let root = tree(name);
        let v = audit(&[
            mount,
            "--sysroot",
            root.to_str().expect("utf8"),
            "--output-format",
            "json",
        ]);
        let got = findings(&v);
        for (id, severity) in want {
            assert!(
                got.iter().any(|(i, s)| i == id && s == severity),
                "{name}: no {severity} {id} in {got:?}"
            );
        }
        let text = v.to_string();
        assert!(text.contains(disk), "{name}: the disk {disk} is not named");
    }
}

/// The same stream on the 512 MB dashcam and on the 8 GB Jetson: the page cache of the small
/// board absorbs seconds of it, the large one minutes, and the findings say so with the data
/// each would lose on a power cut.
#[test]
fn findings_are_sized_to_the_boards_memory() {
    let small = tree("imx6ull-dashcam-4.4-512m");
    let large = tree("jetson-tx2-l4t-4.9");
    let args = |root: &Path, mount: &str| {
        audit(&[
            mount,
            "--sysroot",
            root.to_str().expect("utf8"),
            "--bitrate",
            "200M",
            "--output-format",
            "json",
        ])
    };
    let v = args(&small, "/mnt/sd");
    let f = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["id"] == "vm.dirty_limit_small_for_stream")
        .unwrap_or_else(|| panic!("512 MB board: {}", v["findings"]));
    assert_eq!(f["severity"], "warn");
    let title = f["title"].as_str().expect("title");
    let seconds: f64 = title
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("seconds in the title");
    // (hard + background) / 2 of a 512 MB board's thresholds at 25 MB/s: about 2.3 s.
    assert!((1.5..4.0).contains(&seconds), "{title}");

    let v = args(&large, "/media/nvidia/SD");
    let got = findings(&v);
    assert!(
        got.iter().any(|(i, s)| i == "vm.dirty" && s == "ok"),
        "8 GB board: {got:?}"
    );
}
