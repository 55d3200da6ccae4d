//! The one sysctl.d file sinkrate's persistent advice goes into, and how a setting merges
//! into it: its own line and its `_bytes`/`_ratio` companion's replaced (a later line would
//! override it), every other line kept, so that one fix never overwrites another. Plain
//! text; the settings journal writes the file, watch and audit print the command.

/// The one file sinkrate's persistent sysctl advice writes.
pub const FILE: &str = "/etc/sysctl.d/60-sinkrate.conf";

/// The `_bytes`/`_ratio` form of the same sysctl: the kernel keeps them as one setting, and
/// writing one zeroes the other.
pub fn companion(name: &str) -> Option<String> {
    if let Some(base) = name.strip_suffix("_bytes") {
        Some(format!("{base}_ratio"))
    } else {
        name.strip_suffix("_ratio")
            .map(|base| format!("{base}_bytes"))
    }
}

/// The keys a sysctl line replaces: its own, and its `_bytes`/`_ratio` companion.
fn keys_of(settings: &[(&str, String)]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (name, _) in settings {
        let slash = name.replace('.', "/");
        for k in std::iter::once(slash.clone()).chain(companion(&slash)) {
            let dotted = k.replace('/', ".");
            if !keys.contains(&dotted) {
                keys.push(dotted);
            }
        }
    }
    keys
}

/// `text` (a sysctl.d file) with `settings` merged in: their lines and their companions'
/// removed, the new ones appended, every other line kept.
pub fn merge_sysctl_conf(text: &str, settings: &[(&str, String)]) -> String {
    let keys = keys_of(settings);
    let mut out: String = text
        .lines()
        .filter(|l| {
            let key = l.split('=').next().unwrap_or_default().trim();
            !keys.iter().any(|k| k == key)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    for (name, value) in settings {
        out.push_str(&format!("{name} = {value}\n"));
    }
    out
}

/// A shell command that merges `settings` (dotted names such as `vm.dirty_bytes`) into
/// `file`: their lines, and those of their `_bytes`/`_ratio` companions (which a later line
/// would override), are removed, then the new lines appended; the rest of the file stays.
pub fn merge_command(file: &str, settings: &[(&str, String)]) -> String {
    let keys = keys_of(settings);
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
