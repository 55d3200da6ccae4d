//! What this binary is: its version, the target it was built for and what was compiled in,
//! for `sinkrate --version` (a board user copying a binary over needs to know which one).

/// The target triple the binary was built for (set by build.rs from cargo's `TARGET`).
pub const TARGET: &str = env!("SINKRATE_TARGET");

/// What this build carries, in the words `--version` prints.
pub fn features() -> Vec<&'static str> {
    let mut features = vec![if cfg!(target_feature = "crt-static") {
        "static"
    } else {
        "dynamically linked"
    }];
    if cfg!(target_os = "linux") {
        features.push("io_uring");
    }
    features.push("html-report");
    if cfg!(feature = "png-report") {
        features.push("png-report");
    }
    features.extend(["watch-tui", "emulate (needs nbdkit)"]);
    features
}

/// `sinkrate --version`'s text after the program name.
pub fn long_version() -> String {
    format!(
        "{}\ntarget: {TARGET}\nfeatures: {}",
        env!("CARGO_PKG_VERSION"),
        features().join(", ")
    )
}
