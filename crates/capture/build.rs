//! Builds the interposer (preload/interpose.c) for the target, as a shared object without a
//! C library, and leaves it in OUT_DIR for `include_bytes!`. A target the capture does not
//! run on (not Linux, or another architecture) gets an empty file: there, capture says it
//! cannot run, or runs with ptrace alone.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("interpose.so");
    let source = "preload/interpose.c";
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-env-changed=SINKRATE_PRELOAD_CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let cross = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu-gcc",
        "aarch64" => "aarch64-linux-gnu-gcc",
        "arm" => "arm-linux-gnueabihf-gcc",
        _ => "",
    };
    if os != "linux" || cross.is_empty() {
        std::fs::write(&so, b"").expect("OUT_DIR is writable");
        return;
    }
    // The compiler: SINKRATE_PRELOAD_CC, else the host's own for a build for the host's
    // architecture, else Debian's cross gcc (what scripts/cross.sh links with).
    let compiler = std::env::var("SINKRATE_PRELOAD_CC").unwrap_or_else(|_| {
        if host.starts_with(&format!("{arch}-")) {
            "cc".to_string()
        } else {
            cross.to_string()
        }
    });
    let mut words = compiler.split_whitespace();
    let mut cc = Command::new(words.next().unwrap_or("cc"));
    cc.args(words);
    if arch == "arm" {
        // The system call goes through r7, which Thumb code keeps as its frame pointer.
        cc.arg("-marm");
    }
    cc.args([
        "-shared",
        "-fPIC",
        "-nostdlib",
        "-ffreestanding",
        "-fno-builtin",
        "-fno-stack-protector",
        "-fno-asynchronous-unwind-tables",
        "-Os",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-Wl,--hash-style=gnu",
        "-Wl,-z,noexecstack",
        "-Wl,-z,noseparate-code",
        "-Wl,-z,norelro",
        "-Wl,--build-id=none",
        "-s",
        "-o",
    ]);
    cc.arg(&so).arg(source);
    let status = cc.status().unwrap_or_else(|e| {
        panic!("cannot run {compiler} to build the capture's interposer: {e} (install gcc, or the cross gcc: scripts/install-deps.sh --cross; or set SINKRATE_PRELOAD_CC)")
    });
    assert!(status.success(), "{compiler} failed on {source}");
}
