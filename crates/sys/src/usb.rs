//! The USB path of a storage device in sysfs: the negotiated speed of the device and of every
//! hub on its way to the root hub, what the device and the host controller could do, and
//! the other devices sharing its root hub (lsusb -t, read directly).

use crate::root::SysRoot;
use sinkrate_model::facts::{UsbNode, UsbPath};

fn is_device_dir(name: &str) -> bool {
    let Some((bus, port)) = name.split_once('-') else {
        return false;
    };
    !bus.is_empty()
        && bus.bytes().all(|b| b.is_ascii_digit())
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn is_root_hub(name: &str) -> bool {
    name.strip_prefix("usb")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn class_name(code: &str) -> String {
    match code.to_ascii_lowercase().as_str() {
        "01" => "audio",
        "02" | "0a" => "communications",
        "03" => "HID",
        "06" => "still image",
        "07" => "printer",
        "08" => "mass storage",
        "09" => "hub",
        "0e" => "video",
        "e0" => "wireless",
        "ef" => "miscellaneous",
        "ff" => "vendor specific",
        other => return format!("class {other}"),
    }
    .to_string()
}

fn node(root: &SysRoot, dir: &str) -> UsbNode {
    let a = |rel: &str| root.attr(&format!("{dir}/{rel}"));
    let name = dir.rsplit('/').next().unwrap_or(dir).to_string();
    let device_class = a("bDeviceClass").filter(|c| c != "00");
    let interface_class = root
        .list(dir)
        .into_iter()
        .filter(|e| e.starts_with(&format!("{name}:")))
        .find_map(|e| root.attr(&format!("{dir}/{e}/bInterfaceClass")));
    UsbNode {
        speed_mbps: a("speed").and_then(|s| s.parse().ok()),
        usb_version: a("version"),
        id: match (a("idVendor"), a("idProduct")) {
            (Some(v), Some(p)) => Some(format!("{v}:{p}")),
            _ => None,
        },
        manufacturer: a("manufacturer"),
        product: a("product"),
        class: device_class.or(interface_class).map(|c| class_name(&c)),
        name,
    }
}

fn capability_from_version(version: &str) -> Option<f64> {
    let major: u32 = version.trim().split('.').next()?.parse().ok()?;
    Some(match major {
        0 | 1 => 12.0,
        2 => 480.0,
        _ => 5000.0,
    })
}

/// Devices below `dir`, depth first.
fn devices_below(root: &SysRoot, dir: &str, out: &mut Vec<String>) {
    for e in root.list(dir) {
        if is_device_dir(&e) {
            let child = format!("{dir}/{e}");
            out.push(child.clone());
            devices_below(root, &child, out);
        }
    }
}

/// The USB path of the block device whose (canonical) sysfs directory is `disk_sys`.
pub fn path_of(root: &SysRoot, disk_sys: &str) -> Option<UsbPath> {
    let parts: Vec<&str> = disk_sys.split('/').collect();
    let mut root_hub_dir = None;
    let mut chain = Vec::new();
    for i in 0..parts.len() {
        let dir = parts[..=i].join("/");
        if is_root_hub(parts[i]) {
            root_hub_dir = Some(dir);
        } else if root_hub_dir.is_some() && is_device_dir(parts[i]) {
            chain.push(dir);
        }
    }
    let root_hub_dir = root_hub_dir?;
    let device_dir = chain.pop()?;
    let controller = root_hub_dir.rsplit_once('/').map(|(c, _)| c.to_string())?;
    let controller_max_mbps = root
        .list(&controller)
        .into_iter()
        .filter(|e| is_root_hub(e))
        .filter_map(|e| {
            root.attr(&format!("{controller}/{e}/speed"))?
                .parse::<f64>()
                .ok()
        })
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    let device = node(root, &device_dir);
    let mut others = Vec::new();
    devices_below(root, &root_hub_dir, &mut others);
    let peers = others
        .iter()
        .filter(|d| **d != device_dir && !chain.contains(d))
        .map(|d| node(root, d))
        .filter(|n| n.class.as_deref() != Some("hub"))
        .collect();
    Some(UsbPath {
        device_capable_mbps: device
            .usb_version
            .as_deref()
            .and_then(capability_from_version),
        device,
        hubs: chain.iter().map(|d| node(root, d)).collect(),
        root_hub: node(root, &root_hub_dir),
        controller_max_mbps,
        peers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_device_dir("2-1"));
        assert!(is_device_dir("1-1.4.2"));
        assert!(!is_device_dir("2-1:1.0"));
        assert!(!is_device_dir("usb2"));
        assert!(is_root_hub("usb2"));
        assert!(!is_root_hub("usb"));
        assert_eq!(capability_from_version(" 3.20"), Some(5000.0));
        assert_eq!(capability_from_version(" 2.10"), Some(480.0));
    }
}
