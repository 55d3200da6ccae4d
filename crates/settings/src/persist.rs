//! Settings made to last: every fix sinkrate advises goes into one file, each key merged in
//! (its old line, and its companion's, replaced; every other line kept), so that one fix
//! never overwrites another's.

/// The one file sinkrate's persistent sysctl advice writes.
pub const FILE: &str = "/etc/sysctl.d/60-sinkrate.conf";

/// A shell command that merges `settings` (dotted names such as `vm.dirty_bytes`) into
/// `file`: their lines, and those of their `_bytes`/`_ratio` companions (which a later line
/// would override), are removed, then the new lines appended; the rest of the file stays.
pub fn merge_command(file: &str, settings: &[(&str, String)]) -> String {
    let mut keys: Vec<String> = Vec::new();
    for (name, _) in settings {
        let slash = name.replace('.', "/");
        for k in std::iter::once(slash.clone()).chain(crate::companion(&slash)) {
            let dotted = k.replace('/', ".");
            if !keys.contains(&dotted) {
                keys.push(dotted);
            }
        }
    }
    let deletes: Vec<String> = keys
        .iter()
        .map(|k| {
            format!(
                "-e '/^[[:space:]]*{}[[:space:]]*=/d'",
                k.replace('.', "\\.")
            )
        })
        .collect();
    let lines: String = settings
        .iter()
        .map(|(name, value)| format!("{name} = {value}\\n"))
        .collect();
    format!(
        "touch {file} && sed -i {} {file} && printf '{lines}' >> {file}",
        deletes.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
