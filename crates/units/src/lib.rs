//! Sizes, rates, durations and counts: parsed and printed in one place. Two spellings, each
//! chosen here once: fio's (`fio`: `4k` is 4096 unless `kb_base` says otherwise, times in
//! fio's units, figures printed as fio prints them), which `bench` and its job files use,
//! and the product's (`product`: dd's convention, `20M` is 20 MiB and `20MB` 20 MB), which
//! every other command's flags use. `serde_seconds` writes durations with the unit in the
//! key. No I/O.

/// Text from outside (a recorder's file name, a trace's value) as a line may show it: each
/// control character (a newline, a NUL, an escape sequence) as `\xNN`, never sent raw.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

pub mod fio;
pub mod product;
pub mod serde_seconds;
