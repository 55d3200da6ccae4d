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

/// A list as a line shows it: the first `shown` names, then "and N more" for the rest, so a
/// line about thousands of files stays a line.
pub fn a_few(names: impl ExactSizeIterator<Item = String>, shown: usize) -> String {
    let total = names.len();
    let listed: Vec<String> = names.take(shown.max(1)).collect();
    if total > listed.len() {
        format!("{} and {} more", listed.join(", "), total - listed.len())
    } else {
        listed.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_list_is_cut_with_a_count_of_the_rest() {
        let names = |n: usize| {
            (0..n)
                .map(|k| format!("f{k}"))
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(super::a_few(names(0), 5), "");
        assert_eq!(super::a_few(names(2), 5), "f0, f1");
        assert_eq!(super::a_few(names(5), 5), "f0, f1, f2, f3, f4");
        assert_eq!(super::a_few(names(7), 5), "f0, f1, f2, f3, f4 and 2 more");
        assert_eq!(super::a_few(names(3), 1), "f0 and 2 more");
    }
}

pub mod fio;
pub mod product;
pub mod serde_seconds;
