//! The USB path from a storage device to its root hub (lsusb -t, as sysfs has it).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsbNode {
    /// The sysfs name: usb2 for a root hub, 2-1.3 for a device.
    pub name: String,
    pub speed_mbps: Option<f64>,
    /// bcdUSB as the device reports it (3.20, 2.10, ...).
    pub usb_version: Option<String>,
    pub id: Option<String>,
    pub manufacturer: Option<String>,
    pub product: Option<String>,
    /// Class of the device or of its first interface (mass storage, video, hub, ...).
    pub class: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsbPath {
    pub device: UsbNode,
    /// Hubs between the root hub and the device, nearest the root first.
    pub hubs: Vec<UsbNode>,
    pub root_hub: UsbNode,
    /// The fastest root hub of the same host controller: what a port there could give.
    pub controller_max_mbps: Option<f64>,
    /// The least the device can do by its bcdUSB (5000 for any USB 3 device).
    pub device_capable_mbps: Option<f64>,
    /// Other devices on the same root hub (they share its bandwidth).
    pub peers: Vec<UsbNode>,
}
