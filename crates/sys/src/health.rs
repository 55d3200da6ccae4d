//! What a card or drive says about itself. SD and eMMC cards: the attributes the kernel's
//! MMC core shows under the card's sysfs directory (`cid`, `ssr`, `life_time`, ...), read
//! through the [`SysRoot`] so that fixture trees are read as live ones. SATA, NVMe and USB
//! drives: smartmontools' `smartctl --json -a`, run with a time bound on the live system,
//! or its output captured beside a fixture tree as `smartctl/DISK.json`.

use std::time::Duration;

use crate::root::SysRoot;
use sinkrate_model::facts::{BlockDevice, Bus};
use sinkrate_model::health::{
    CardHealth, EmulatedWear, LifeTime, MmcCard, PreEol, SdStatus, SmartHealth,
};

/// How long smartctl may take before it is stopped: it talks to the drive, and a drive
/// behind a bridge that does not answer can hold it for minutes.
pub const SMARTCTL_TIMEOUT: Duration = Duration::from_secs(10);
/// More than smartctl's JSON for any drive (a few tens of KiB).
const SMARTCTL_BYTES: u64 = 4 << 20;

/// The health facts of the device under a target (`chain`: the mounted device first, then
/// what it stands on), and notes on what could not be read.
pub fn read(root: &SysRoot, chain: &[BlockDevice], notes: &mut Vec<String>) -> CardHealth {
    let mut health = CardHealth {
        emulated: chain.iter().find_map(|d| emulated_wear(root, d)),
        ..CardHealth::default()
    };
    let physical = chain
        .iter()
        .find(|d| !matches!(d.bus, Bus::Loop | Bus::Dm | Bus::Md));
    match physical.map(|d| (d.bus, d)) {
        Some((Bus::Mmc, d)) => health.mmc = Some(mmc_card(root, &d.sysfs_path, notes)),
        Some((Bus::Sata | Bus::Nvme | Bus::Usb | Bus::Scsi, d)) => {
            health.smart = smart(root, &d.disk, notes);
        }
        _ => {}
    }
    health
}

/// The health facts of the device `path` is stored on (the live system), with notes.
pub fn of_path(path: &std::path::Path) -> (CardHealth, Vec<String>) {
    let root = SysRoot::live();
    let mount = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| crate::mounts::resolve(&root, &p.to_string_lossy()).ok());
    of_mount(mount.as_ref())
}

/// The health facts of the device under a mount already resolved (the live system).
pub fn of_mount(mount: Option<&sinkrate_model::facts::Target>) -> (CardHealth, Vec<String>) {
    let root = SysRoot::live();
    let mut notes = Vec::new();
    let chain = mount
        .and_then(|t| crate::device::sysfs_dir(&root, t.major, t.minor, &t.source))
        .map(|sys| crate::device::chain(&root, &sys))
        .unwrap_or_default();
    let health = read(&root, &chain, &mut notes);
    (health, notes)
}

/// A loop device over an emulated card's export (`STATE/fuse/disk`, `sinkrate emulate
/// up`): the card's wear as its device model counts it (`STATE/device.json`), when the
/// card was given an endurance (`--wear-out`).
fn emulated_wear(root: &SysRoot, d: &BlockDevice) -> Option<EmulatedWear> {
    use serde_json::Value;
    let backing = d.loop_backing_file.as_deref()?;
    let state_dir = backing.strip_suffix("/fuse/disk")?;
    let read = |name: &str| -> Option<Value> {
        let bytes =
            crate::input::read_capped(&root.host_path(&format!("{state_dir}/{name}")), 1 << 20)
                .ok()?;
        serde_json::from_slice(&bytes).ok()
    };
    let state = read("state.json")?;
    let wear = state["spec"]["device"]["wear_out"].as_array()?;
    let endurance_bytes = wear.first()?.as_u64()?;
    let mode = wear.get(1)?.as_str()?.to_string();
    let stats = read("device.json").unwrap_or(Value::Null);
    Some(EmulatedWear {
        endurance_bytes,
        mode,
        written_bytes: stats["wear_written_bytes"].as_u64().unwrap_or(0),
        worn_out: stats["worn_out"].as_bool().unwrap_or(false),
        worn_out_at_ms: stats["worn_out_at_ms"].as_u64(),
        worn_out_after_bytes: stats["worn_out_after_bytes"].as_u64(),
    })
}

fn hex_u32(text: &str) -> Option<u32> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u32::from_str_radix(t, 16).ok()
}

/// The manufacturers whose CID ids the Linux kernel's MMC quirk tables name
/// (`drivers/mmc/core/card.h`); the full lists are not public, so other ids stay numbers.
fn manufacturer(kind: Option<&str>, manfid: u32) -> Option<&'static str> {
    let sd = kind.is_some_and(|k| k.starts_with("SD"));
    Some(match (sd, manfid) {
        (true, 0x03) => "SanDisk",
        (true, 0x12) => "Gigastone",
        (true, 0x9f) => "Kingston",
        (false, 0x02) => "SanDisk",
        (false, 0x09) => "ATP",
        (false, 0x11) => "Toshiba",
        (false, 0x13) => "Micron",
        (false, 0x15) => "Samsung",
        (false, 0x27) => "Apacer",
        (false, 0x70) => "Kingston",
        (false, 0x90) => "SK hynix",
        (false, 0xfe) => "Numonyx",
        _ => return None,
    })
}

/// The card's attributes under the disk's `device` directory (the MMC card).
pub fn mmc_card(root: &SysRoot, disk_sys: &str, notes: &mut Vec<String>) -> MmcCard {
    let a = |name: &str| root.attr(&format!("{disk_sys}/device/{name}"));
    let kind = a("type");
    let manfid = a("manfid").and_then(|m| hex_u32(&m));
    let mut card = MmcCard {
        manufacturer: manfid
            .and_then(|m| manufacturer(kind.as_deref(), m))
            .map(str::to_string),
        name: a("name"),
        manfid,
        oemid: a("oemid"),
        // The kernel prints "MM/YYYY".
        date: a("date").and_then(|d| {
            let (month, year) = d.split_once('/')?;
            let (month, year): (u32, u32) = (month.parse().ok()?, year.parse().ok()?);
            (1..=12)
                .contains(&month)
                .then(|| format!("{year:04}-{month:02}"))
        }),
        fwrev: a("fwrev"),
        hwrev: a("hwrev"),
        serial: a("serial"),
        preferred_erase_bytes: a("preferred_erase_size").and_then(|s| s.parse().ok()),
        kind,
        ..MmcCard::default()
    };
    if let Some(ssr) = a("ssr") {
        match decode_ssr(&ssr) {
            Ok(status) => card.sd_status = Some(status),
            Err(e) => notes.push(format!(
                "{}: {e}; the card's classes are unknown",
                root.host_path(&format!("{disk_sys}/device/ssr")).display()
            )),
        }
        card.ssr_hex = Some(ssr);
    }
    if let Some(lt) = a("life_time") {
        let values: Vec<Option<u32>> = lt.split_whitespace().map(hex_u32).collect();
        match values.as_slice() {
            [Some(x), Some(y)] if *x <= 0xff && *y <= 0xff => {
                card.life_time = Some(LifeTime {
                    typ_a: *x as u8,
                    typ_b: *y as u8,
                })
            }
            _ => notes.push(format!(
                "{}: \"{lt}\" is not two hex bytes as the kernel prints them; the life time estimate is unknown",
                root.host_path(&format!("{disk_sys}/device/life_time")).display()
            )),
        }
    }
    if let Some(eol) = a("pre_eol_info") {
        match hex_u32(&eol)
            .and_then(|v| u8::try_from(v).ok())
            .and_then(PreEol::from_register)
        {
            Some(p) => card.pre_eol = Some(p),
            None => notes.push(format!(
                "{}: \"{eol}\" is not a PRE_EOL_INFO value (0x00 to 0x03)",
                root.host_path(&format!("{disk_sys}/device/pre_eol_info"))
                    .display()
            )),
        }
    }
    card
}

/// The SD Status register (512 bits) as the kernel's `ssr` attribute prints it: sixteen
/// 32-bit words in hex, most significant bit of the register first. Field positions from
/// the SD Physical Layer Specification's SD Status table.
pub fn decode_ssr(hex: &str) -> Result<SdStatus, String> {
    let hex = hex.trim();
    if hex.len() != 128 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "the SD Status register is 128 hex digits; this one has {} characters{}",
            hex.len(),
            if hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                ""
            } else {
                ", not all hex"
            }
        ));
    }
    let mut bytes = [0u8; 64];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    // Bits [hi:lo] of the register, bit 511 being the first byte's top bit.
    let bits = |hi: usize, lo: usize| -> u32 {
        (lo..=hi).rev().fold(0u32, |acc, bit| {
            let byte = bytes[(511 - bit) / 8];
            (acc << 1) | u32::from((byte >> (bit % 8)) & 1)
        })
    };
    let speed_class = match bits(447, 440) {
        0 => Some(0),
        1 => Some(2),
        2 => Some(4),
        3 => Some(6),
        4 => Some(10),
        _ => None,
    };
    // AU_SIZE codes 1..=0xF: 16 KiB doubling to 4 MiB at 9, then 8, 12, 16, 24, 32, 64 MiB.
    let au_bytes = match bits(431, 428) {
        0 => None,
        c @ 1..=9 => Some(16u64 << 10 << (c - 1)),
        0xA => Some(8 << 20),
        0xB => Some(12 << 20),
        0xC => Some(16 << 20),
        0xD => Some(24 << 20),
        0xE => Some(32 << 20),
        _ => Some(64 << 20),
    };
    let uhs_grade = match bits(399, 396) {
        1 => Some(1),
        3 => Some(3),
        _ => None,
    };
    let video_class = match bits(391, 384) {
        v @ (6 | 10 | 30 | 60 | 90) => Some(v as u8),
        _ => None,
    };
    let app_class = match bits(339, 336) {
        a @ (1 | 2) => Some(a as u8),
        _ => None,
    };
    Ok(SdStatus {
        speed_class,
        uhs_grade,
        video_class,
        app_class,
        au_bytes,
    })
}

/// smartctl's report on `/dev/DISK`: run on the live system (when smartmontools is
/// installed; its absence is a note), read from `smartctl/DISK.json` under a fixture root.
fn smart(root: &SysRoot, disk: &str, notes: &mut Vec<String>) -> Option<SmartHealth> {
    let node = format!("/dev/{disk}");
    let text = if root.is_live() {
        match run_smartctl(std::path::Path::new("smartctl"), &node, SMARTCTL_TIMEOUT) {
            Ok(t) => t,
            Err(e) => {
                notes.push(e);
                return None;
            }
        }
    } else {
        let captured = root.host_path(&format!("/smartctl/{disk}.json"));
        match crate::input::read_capped(&captured, SMARTCTL_BYTES) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                notes.push(format!("{}: {e}", captured.display()));
                return None;
            }
        }
    };
    match parse_smartctl(&node, &text) {
        Ok(h) => Some(h),
        Err(e) => {
            notes.push(format!("smartctl on {node}: {e}; SMART wear unknown"));
            None
        }
    }
}

/// Runs `PROGRAM --json -a NODE` (smartctl) for at most `timeout`; its output, or one line
/// on why there is none.
fn run_smartctl(
    program: &std::path::Path,
    node: &str,
    timeout: Duration,
) -> Result<String, String> {
    use std::io::Read;
    let mut child = match std::process::Command::new(program)
        .args(["--json", "-a", node])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "smartctl not found: SMART wear and bytes written of {node} not read (install smartmontools to have them)"
            ))
        }
        Err(e) => return Err(format!("smartctl could not be started: {e}")),
    };
    let Some(out) = child.stdout.take() else {
        return Err("smartctl's output could not be read".to_string());
    };
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.take(SMARTCTL_BYTES).read_to_end(&mut bytes);
        bytes
    });
    let pid = child.id() as i32;
    let ended = sinkrate_platform::child::wait_for_end(timeout, &mut || {
        matches!(child.try_wait(), Ok(None))
    });
    if !ended {
        sinkrate_platform::child::stop(
            pid,
            sinkrate_platform::child::Signal::Term,
            Duration::from_secs(1),
            &mut || matches!(child.try_wait(), Ok(None)),
        );
        return Err(format!(
            "smartctl on {node} did not answer within {:.1} s and was stopped; SMART wear unknown",
            timeout.as_secs_f64()
        ));
    }
    let bytes = reader.join().unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// smartctl's JSON (format 1) read for wear and bytes written. An output that is not
/// smartctl's JSON, or one where smartctl says it could not read the device, is an error.
pub fn parse_smartctl(node: &str, text: &str) -> Result<SmartHealth, String> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(text).map_err(|_| {
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>();
        format!("its output is not JSON (\"{first}\")")
    })?;
    if v.get("json_format_version").is_none() {
        return Err("its output is not smartctl's JSON (no json_format_version)".to_string());
    }
    let s = |path: &[&str]| -> Option<String> {
        path.iter()
            .try_fold(&v, |at, k| at.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let n = |path: &[&str]| -> Option<u64> {
        path.iter()
            .try_fold(&v, |at, k| at.get(k))
            .and_then(Value::as_u64)
    };
    let protocol = s(&["device", "protocol"]);
    if protocol.is_none() {
        let why = v["smartctl"]["messages"]
            .as_array()
            .and_then(|m| m.first())
            .and_then(|m| m["string"].as_str())
            .unwrap_or("no device was read");
        return Err(why.to_string());
    }
    let mut h = SmartHealth {
        device: node.to_string(),
        protocol,
        model: s(&["model_name"]),
        serial: s(&["serial_number"]),
        firmware: s(&["firmware_version"]),
        passed: v["smart_status"]["passed"].as_bool(),
        power_on_hours: n(&["power_on_time", "hours"]),
        ..SmartHealth::default()
    };
    let nvme = &v["nvme_smart_health_information_log"];
    if let Some(p) = nvme["percentage_used"].as_u64() {
        h.percentage_used = Some(p as u32);
        h.percentage_used_source = Some("NVMe percentage_used".into());
    }
    // NVMe counts data units of 1000 512-byte blocks.
    if let Some(units) = nvme["data_units_written"].as_u64() {
        h.written_bytes = Some(units.saturating_mul(512_000));
        h.written_bytes_source = Some("NVMe data_units_written".into());
    }
    let logical = n(&["logical_block_size"]).unwrap_or(512);
    for page in v["ata_device_statistics"]["pages"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for row in page["table"].as_array().into_iter().flatten() {
            match (row["name"].as_str(), row["value"].as_u64()) {
                (Some("Percentage Used Endurance Indicator"), Some(p))
                    if h.percentage_used.is_none() =>
                {
                    h.percentage_used = Some(p as u32);
                    h.percentage_used_source =
                        Some("ATA device statistics: Percentage Used Endurance Indicator".into());
                }
                (Some("Logical Sectors Written"), Some(sectors)) if h.written_bytes.is_none() => {
                    h.written_bytes = Some(sectors.saturating_mul(logical));
                    h.written_bytes_source =
                        Some("ATA device statistics: Logical Sectors Written".into());
                }
                _ => {}
            }
        }
    }
    let attributes = v["ata_smart_attributes"]["table"].as_array();
    let attribute = |id: u64| {
        attributes
            .into_iter()
            .flatten()
            .find(|a| a["id"].as_u64() == Some(id))
    };
    if h.percentage_used.is_none() {
        // Vendors' normalised "life left" attributes, 100 new and falling.
        for id in [231, 233, 202, 169, 177] {
            if let Some(a) = attribute(id) {
                if let Some(left) = a["value"].as_u64().filter(|l| *l <= 100) {
                    h.percentage_used = Some(100 - left as u32);
                    h.percentage_used_source = Some(format!(
                        "ATA attribute {id} {} (normalised life left {left})",
                        a["name"].as_str().unwrap_or("")
                    ));
                    break;
                }
            }
        }
    }
    if h.written_bytes.is_none() {
        // Total_LBAs_Written: most drives count logical blocks; some vendors count other
        // units, so the source says which attribute it was.
        if let Some(raw) = attribute(241).and_then(|a| a["raw"]["value"].as_u64()) {
            h.written_bytes = Some(raw.saturating_mul(logical));
            h.written_bytes_source = Some(format!(
                "ATA attribute 241 Total_LBAs_Written x {logical} bytes"
            ));
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SD Status register with the given fields set, as the kernel prints it.
    fn ssr(speed: u8, au: u8, uhs: u8, video: u8, app: u8) -> String {
        let mut b = [0u8; 64];
        b[8] = speed; // bits 447:440
        b[10] = au << 4; // bits 431:428
        b[14] = uhs << 4; // bits 399:396
        b[15] = video; // bits 391:384
        b[21] = app; // bits 339:336 (low nibble of byte 21)
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn the_sd_status_register_gives_the_classes_printed_on_the_card() {
        let s = decode_ssr(&ssr(4, 9, 3, 30, 1)).unwrap();
        assert_eq!(s.speed_class, Some(10));
        assert_eq!(s.uhs_grade, Some(3));
        assert_eq!(s.video_class, Some(30));
        assert_eq!(s.app_class, Some(1));
        assert_eq!(s.au_bytes, Some(4 << 20));
        assert_eq!(s.label(), "Class 10, U3, V30, A1");
        assert_eq!(s.claimed_write(), Some(("V30".to_string(), 30e6)));
        let s = decode_ssr(&ssr(3, 7, 0, 0, 0)).unwrap();
        assert_eq!((s.speed_class, s.au_bytes), (Some(6), Some(1 << 20)));
        assert_eq!(s.claimed_write(), Some(("Class 6".to_string(), 6e6)));
        for (code, bytes) in [(1u8, 16u64 << 10), (0xB, 12 << 20), (0xF, 64 << 20)] {
            assert_eq!(
                decode_ssr(&ssr(0, code, 0, 0, 0)).unwrap().au_bytes,
                Some(bytes)
            );
        }
        // A register as a Class 6 card with a 4 MiB allocation unit returns it to ACMD13.
        let real = "00000000030000000303900008110900".to_string() + &"0".repeat(96);
        let s = decode_ssr(&real).unwrap();
        assert_eq!(
            (s.speed_class, s.au_bytes, s.uhs_grade),
            (Some(6), Some(4 << 20), None)
        );
    }

    #[test]
    fn a_register_of_the_wrong_length_or_not_hex_is_refused() {
        assert!(decode_ssr("0011").unwrap_err().contains("128 hex digits"));
        let bad = "zz".repeat(64);
        assert!(decode_ssr(&bad).unwrap_err().contains("not all hex"));
    }

    #[test]
    fn emmc_life_time_and_pre_eol_are_decoded() {
        let d = tempfile::tempdir().unwrap();
        let root = SysRoot::at(d.path());
        let card = "/sys/devices/mmc0/mmc0:0001/block/mmcblk0";
        for (k, v) in [
            ("type", "MMC"),
            ("manfid", "0x000015"),
            ("name", "8GTF4R"),
            ("date", "03/2017"),
            ("life_time", "0x09 0x0B"),
            ("pre_eol_info", "0x02"),
        ] {
            let p = root.host_path(&format!("{card}/device/{k}"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{v}\n")).unwrap();
        }
        let mut notes = Vec::new();
        let c = mmc_card(&root, card, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(c.manufacturer.as_deref(), Some("Samsung"));
        assert_eq!(c.date.as_deref(), Some("2017-03"));
        assert_eq!(c.life_time.and_then(|l| l.used_percent()), Some((100, 100)));
        assert_eq!(c.pre_eol, Some(PreEol::Warning));
        std::fs::write(
            root.host_path(&format!("{card}/device/life_time")),
            "garbage\n",
        )
        .unwrap();
        let c = mmc_card(&root, card, &mut notes);
        assert!(c.life_time.is_none());
        assert!(notes[0].contains("not two hex bytes"), "{notes:?}");
    }

    #[test]
    fn a_smartctl_that_hangs_is_stopped_and_one_that_prints_garbage_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let hang = script("hang", "exec sleep 30");
        let started = std::time::Instant::now();
        let e = run_smartctl(&hang, "/dev/sda", Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not answer within 0.3 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let garbage = script("garbage", "echo 'Segmentation fault'");
        let out = run_smartctl(&garbage, "/dev/sda", Duration::from_secs(10)).unwrap();
        assert!(parse_smartctl("/dev/sda", &out)
            .unwrap_err()
            .contains("not JSON"));
        let missing = d.path().join("no-such-smartctl");
        let e = run_smartctl(&missing, "/dev/sda", Duration::from_secs(1)).unwrap_err();
        assert!(e.contains("install smartmontools"), "{e}");
    }

    #[test]
    fn smartctl_json_gives_wear_and_bytes_written() {
        let nvme = r#"{"json_format_version":[1,0],"device":{"name":"/dev/nvme0","protocol":"NVMe"},
            "model_name":"X","smart_status":{"passed":true},"power_on_time":{"hours":1200},
            "nvme_smart_health_information_log":{"percentage_used":7,"data_units_written":2000000}}"#;
        let h = parse_smartctl("/dev/nvme0n1", nvme).unwrap();
        assert_eq!(h.percentage_used, Some(7));
        assert_eq!(h.written_bytes, Some(2_000_000 * 512_000));
        assert_eq!(h.power_on_hours, Some(1200));
        let ata = r#"{"json_format_version":[1,0],"device":{"name":"/dev/sda","type":"sat","protocol":"ATA"},
            "logical_block_size":512,"smart_status":{"passed":true},
            "ata_smart_attributes":{"table":[{"id":177,"name":"Wear_Leveling_Count","value":88,"raw":{"value":120}},
              {"id":241,"name":"Total_LBAs_Written","value":99,"raw":{"value":1000000}}]}}"#;
        let h = parse_smartctl("/dev/sda", ata).unwrap();
        assert_eq!(h.percentage_used, Some(12));
        assert_eq!(h.written_bytes, Some(512_000_000));
        assert!(parse_smartctl("/dev/sda", "Segmentation fault")
            .unwrap_err()
            .contains("not JSON"));
        assert!(parse_smartctl("/dev/sda", "{\"a\":1}")
            .unwrap_err()
            .contains("not smartctl's JSON"));
        let unreadable = r#"{"json_format_version":[1,0],"smartctl":{"messages":[{"string":"/dev/vda: Unable to detect device type","severity":"error"}],"exit_status":1}}"#;
        assert!(parse_smartctl("/dev/vda", unreadable)
            .unwrap_err()
            .contains("Unable to detect device type"));
    }
}
