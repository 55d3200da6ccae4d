//! `compare --by KEY`: the rows of a comparison across boards, cards or filesystems, each
//! run labelled by a field of its own result (or by the folder it was fetched into, as a lab
//! tool lays out `results/HOST/...`), instead of by its configuration. Pure: the label comes
//! from the document's JSON and where the file was found.

use serde_json::Value;

/// What to group runs by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// The machine the run was made on (`host.hostname`).
    Host,
    /// The first folder under the directory given on the command line: `results/cam1/...`
    /// is `cam1` (the inventory name a lab's playbook fetched it under).
    Dir,
    /// The filesystem of the directory tested.
    Fs,
    /// The device's model, or the device when it gives no model.
    Device,
    /// Any field of the result, by JSON pointer (`/host/kernel`, `/config/write_mode`).
    Pointer(String),
}

/// Where each shortcut looks, first match wins: a record has its target at the top, a check
/// holds it in its audit and its recording.
const FS: &[&str] = &[
    "/target/fs_type",
    "/audit/target/fs_type",
    "/record/target/fs_type",
];
const DEVICE: &[&str] = &[
    "/audit/devices/0/model",
    "/audit/devices/0/name",
    "/target/device",
    "/record/target/device",
];

impl GroupBy {
    pub fn parse(key: &str) -> Result<GroupBy, String> {
        match key {
            "host" => Ok(GroupBy::Host),
            "dir" => Ok(GroupBy::Dir),
            "fs" => Ok(GroupBy::Fs),
            "device" => Ok(GroupBy::Device),
            p if p.starts_with('/') => Ok(GroupBy::Pointer(p.to_string())),
            other => Err(format!(
                "--by {other}: not a key (host, dir, fs, device, or a JSON pointer to any field such as /host/kernel)"
            )),
        }
    }

    /// What the label is called when a run has none ("no fs").
    fn name(&self) -> &str {
        match self {
            GroupBy::Host => "host",
            GroupBy::Dir => "folder",
            GroupBy::Fs => "fs",
            GroupBy::Device => "device",
            GroupBy::Pointer(p) => p,
        }
    }

    /// The label of a run from its document and, for [`GroupBy::Dir`], the folder it was
    /// found in; a run without the field is labelled so ("(no fs)"), never dropped.
    pub fn label(&self, document: &Value, folder: Option<&str>) -> String {
        let text = |v: &Value| match v {
            Value::Null => None,
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        };
        let first = |pointers: &[&str]| {
            pointers
                .iter()
                .find_map(|p| document.pointer(p).and_then(text))
        };
        let found = match self {
            GroupBy::Host => first(&["/host/hostname"]),
            GroupBy::Dir => folder.map(str::to_string),
            GroupBy::Fs => first(FS),
            GroupBy::Device => first(DEVICE),
            GroupBy::Pointer(p) => document.pointer(p).and_then(text),
        };
        found.unwrap_or_else(|| format!("(no {})", self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_parse_and_a_wrong_one_says_what_is_taken() {
        assert_eq!(GroupBy::parse("host"), Ok(GroupBy::Host));
        assert_eq!(
            GroupBy::parse("/host/kernel"),
            Ok(GroupBy::Pointer("/host/kernel".into()))
        );
        let e = GroupBy::parse("hostname").expect_err("not a key");
        assert!(e.contains("host, dir, fs, device"), "{e}");
    }

    #[test]
    fn each_kind_of_result_gives_its_filesystem_and_device() {
        let record = json!({"host": {"hostname": "cam1"}, "target": {"fs_type": "ext4", "device": "/dev/mmcblk0p1"}});
        let check = json!({"host": {"hostname": "cam2"}, "audit": {"target": {"fs_type": "vfat"}, "devices": [{"name": "sda", "model": "Extreme 64GB"}]}});
        assert_eq!(GroupBy::Fs.label(&record, None), "ext4");
        assert_eq!(GroupBy::Fs.label(&check, None), "vfat");
        assert_eq!(GroupBy::Device.label(&record, None), "/dev/mmcblk0p1");
        assert_eq!(GroupBy::Device.label(&check, None), "Extreme 64GB");
        assert_eq!(GroupBy::Host.label(&check, None), "cam2");
        assert_eq!(GroupBy::Dir.label(&check, Some("board-3")), "board-3");
    }

    #[test]
    fn a_run_without_the_field_is_labelled_so() {
        let v = json!({"host": null, "n": 3});
        assert_eq!(GroupBy::Host.label(&v, None), "(no host)");
        assert_eq!(GroupBy::Dir.label(&v, None), "(no folder)");
        assert_eq!(GroupBy::Pointer("/n".into()).label(&v, None), "3");
        assert_eq!(GroupBy::Pointer("/m".into()).label(&v, None), "(no /m)");
    }
}
