//! Records the target triple the binary is built for, for `sinkrate --version`: a board user
//! copying a binary over needs to see which one they have.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=SINKRATE_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
