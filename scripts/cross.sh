#!/usr/bin/env bash
# Static sinkrate binaries for the boards recorders run on.
#
#   scripts/cross.sh                 release binaries in target/<triple>/release/ for aarch64,
#                                    armv7 and x86_64, each smoke-run (under qemu-user for ARM), checked
#                                    static and within the 5 MB budget, and release tarballs
#                                    with the man page, completions and SHA256SUMS in target/tarballs/
#   scripts/cross.sh --test-build    unoptimised ARM binaries for the test suite's qemu-user
#                                    tests; their list goes to target/cross-test-bins.txt
#   scripts/cross.sh TRIPLE...       only these targets (release)
#
# SINKRATE_DOCS_BIN=PATH: the host sinkrate (of this checkout) that writes the tarballs' man
# page and completions; without it the host's release binary is built for them.
# CARGO_TARGET_DIR: where the binaries are built (default target/; the test suite builds
# them apart, so that these builds and its own never wait for each other's lock).
#
# armv7: Rust's armv7-unknown-linux-musleabihf is used when rustup can install its standard
# library; where it cannot (rustup's server does not always carry it), the binary is a fully
# static armv7-unknown-linux-gnueabihf build linked with Debian's cross gcc and glibc
# (crt-static). The script says which one it built.
set -euo pipefail
cd "$(dirname "$0")/.."
for d in "$HOME/.cargo/bin" /root/.cargo/bin; do [ -d "$d" ] && export PATH="$d:$PATH"; done

mode=release
targets=()
for a in "$@"; do
  case "$a" in
    --test-build) mode=test ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "cross.sh: unknown option '$a' (accepted: --test-build, target triples)" >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done

bash scripts/install-deps.sh --cross

# The armv7 triple: musl where its standard library can be had, else static glibc.
armv7_triple() {
  if rustup target list --installed 2>/dev/null | grep -qx armv7-unknown-linux-musleabihf \
    || rustup target add armv7-unknown-linux-musleabihf >/dev/null 2>&1; then
    echo armv7-unknown-linux-musleabihf
  else
    echo armv7-unknown-linux-gnueabihf
  fi
}

if [ "${#targets[@]}" = 0 ]; then
  arm32=$(armv7_triple)
  if [ "$mode" = test ]; then
    targets=(aarch64-unknown-linux-musl "$arm32")
  else
    targets=(aarch64-unknown-linux-musl "$arm32" x86_64-unknown-linux-musl)
  fi
  if [ "$arm32" = armv7-unknown-linux-gnueabihf ]; then
    echo "cross.sh: armv7: rustup cannot install armv7-unknown-linux-musleabihf here; building a static armv7-unknown-linux-gnueabihf binary (Debian's arm-linux-gnueabihf gcc, glibc linked in)"
  fi
fi

# How each target links, and how to run its binary on this host.
linker_for() {
  case "$1" in
    aarch64-*) echo aarch64-linux-gnu-gcc ;;
    armv7-*) echo arm-linux-gnueabihf-gcc ;;
    x86_64-*) echo cc ;;
    *) echo "cross.sh: unsupported target '$1' (supported: aarch64-unknown-linux-musl, armv7-unknown-linux-musleabihf, armv7-unknown-linux-gnueabihf, x86_64-unknown-linux-musl)" >&2; return 2 ;;
  esac
}
runner_for() {
  case "$1" in
    aarch64-*) echo qemu-aarch64 ;;
    armv7-*) echo qemu-arm ;;
    *) echo "" ;;
  esac
}

# Board binaries are built small: whole-program LTO, one codegen unit, no debug info, symbols
# stripped, and optimised for size ("z": the 5 MB budget; bench/README.md has the sizes)
# except verify's crc32c on the checking path, which keeps full optimisation (the engine's
# levels below, with what they cost). A panic aborts instead of unwinding:
# no unwind tables or landing pads (680 KB of the x86_64 binary). A panic is a bug either
# way; after one, as after kill -9, the next sinkrate run removes the files the run made,
# restores its sysctls and takes its devices down (docs/safety.md), and the exit status
# says it failed. A job that panics then ends the run instead of failing alone.
# The host's own release profile keeps its faster build. The test binaries skip optimisation
# so that CI builds them in little time: 70 s for aarch64 on two idle cores (127 s of CPU).
if [ "$mode" = test ]; then
  profile=debug
  # Except the two loops over every byte of a frame (its fill and its crc32c): unoptimised
  # under qemu-user they made 3 frames of 500 KB a second, too few to load a card.
  # With the board build's features (no PNG charts, no page generators): the tests run what
  # the boards get, and the charts' plotting, font and encoder crates are not built twice
  # more for them.
  # Not incremental: a clean clone builds them once, and the incremental caches cost time.
  cargo_profile=(--profile dev --config profile.dev.debug=0 --config profile.dev.incremental=false
    --no-default-features
    --config profile.dev.package.crc32c.opt-level=3
    --config profile.dev.package.sinkrate-platform.opt-level=3)
else
  profile=release
  # Without `png-report`: the PNG charts' plotting, font and encoder would not fit the
  # budget beside the rest; `sinkrate report` on a board writes the HTML report, and says so
  # to --png.
  cargo_profile=(--release --no-default-features
    --config 'profile.release.lto="fat"' --config profile.release.codegen-units=1
    --config profile.release.debug=0 --config profile.release.strip=true
    --config 'profile.release.opt-level="z"' --config 'profile.release.panic="abort"')
  # (record and the sampler wait on I/O and clocks, not on their own code: size-optimised
  # since capture and replay joined them. stats too since the capture's interposer did: the
  # null engine's 4 KiB writes ran at 8.08 M/s against 8.13 M/s with stats at level 3.
  # verify too since the observer's fixes did (28 KB): its read-and-check of 1 GiB ran at a
  # median 1,060 MB/s against 958 MB/s at level 3, five rounds each, dd at 1.0-1.1 GB/s: the
  # device's rate either way; its crc32c keeps level 3. The engine is optimised for speed
  # at level "s" since the kernel's account of stalls joined (78 KB): 4 KiB random writes
  # to tmpfs ran at 469-569 k/s psync and 399-485 k/s io_uring (qd 16) against 459-548 k/s
  # and 290-461 k/s at level 3, the null engine at 5.2 M/s against 5.4 M/s, alternating
  # runs, noise +-8%. Since per-device limits and the pool sizes joined (53 KB over level
  # "s"'s budget) the engine is size-optimised like the rest: measured on the x86_64 board
  # binary, three alternating rounds, the null engine ran 4 KiB writes at 5.1-5.3 M/s
  # against 7.1-7.5 M/s at "s", psync to tmpfs at 570-604 k/s against 611-629 k/s, io_uring
  # qd 16 at 452-499 k/s against 382-791 k/s (noise): the engine's own overhead, not a
  # device's rate. The host's release build keeps level 3.)
  for hot in crc32c; do
    cargo_profile+=(--config "profile.release.package.$hot.opt-level=3")
  done
fi

tdir=${CARGO_TARGET_DIR:-target}
list=target/cross-test-bins.txt
[ "$mode" = test ] && : > "$list.tmp"
budget=$((5 * 1000 * 1000))
built=()
for t in "${targets[@]}"; do
  linker=$(linker_for "$t")
  rustup target list --installed | grep -qx "$t" || rustup target add "$t"
  var=$(echo "$t" | tr 'a-z-' 'A-Z_')
  flags="-C target-feature=+crt-static"
  # Release binaries are classic fully static executables, not static-PIE: no relocation
  # table to carry (112 KB of the x86_64 binary) and nothing for a loader to do at start;
  # the stack, heap and mappings are still placed at random by the kernel.
  [ "$mode" = release ] && flags="$flags -C relocation-model=static"
  # The io-uring crate ships kernel bindings for 64-bit targets only; the io_uring ABI uses
  # fixed-width fields alone, and the engine asserts the entry sizes at compile time.
  case "$t" in armv7-*) flags="$flags --cfg=io_uring_skip_arch_check" ;; esac
  echo "== cargo build --$profile --target $t (linker $linker)"
  env "CARGO_TARGET_${var}_LINKER=$linker" "CARGO_TARGET_${var}_RUSTFLAGS=$flags" \
    cargo build --locked "${cargo_profile[@]}" --target "$t" --bin sinkrate
  bin="$tdir/$t/$profile/sinkrate"
  if readelf -l "$bin" | grep -q "Requesting program interpreter"; then
    echo "cross.sh: $bin is not static (it asks for a program interpreter)" >&2
    exit 1
  fi
  runner=$(runner_for "$t")
  # shellcheck disable=SC2086
  version=$($runner "$bin" --version | tr '\n' ' ')
  echo "   $bin: $version"
  if [ "$mode" = test ]; then
    echo "$t $(realpath "$bin") $runner" >> "$list.tmp"
    continue
  fi
  # Built without the PNG charts: --png is refused in one line (exit 2) before anything,
  # the HTML report included, is written.
  png_dir=$(mktemp -d)
  png_rc=0
  # shellcheck disable=SC2086
  png_err=$($runner "$bin" report tests/fixtures/results/record.json -o "$png_dir/r.html" \
    --png "$png_dir/png" 2>&1 >/dev/null) || png_rc=$?
  png_left=$(ls -A "$png_dir")
  rm -rf "$png_dir"
  if [ "$png_rc" != 2 ] || [ "$(printf '%s\n' "$png_err" | wc -l)" != 1 ] ||
    [[ "$png_err" != *"no PNG charts"* ]] || [ -n "$png_left" ]; then
    echo "cross.sh: $bin report --png: exit $png_rc, wrote [$png_left]: $png_err" >&2
    exit 1
  fi
  size=$(stat -c %s "$bin")
  echo "   $size bytes, budget $budget"
  if [ "$size" -gt "$budget" ]; then
    echo "cross.sh: $bin is $size bytes, over the 5 MB budget" >&2
    exit 1
  fi
  built+=("$t")
done

if [ "$mode" = test ]; then
  mv "$list.tmp" "$list"
  echo "cross.sh: test binaries listed in $list"
  exit 0
fi

# Release tarballs: the binary, its man page and completions, and one SHA256SUMS for them
# all. The board binaries leave out the generators (the `docs` feature, for the 5 MB
# budget): a host build of the same source writes the pages, and each board binary is run
# (under qemu-user for ARM) to prove it starts and names its version.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
# SINKRATE_DOCS_BIN: a host binary of this checkout already built (the test suite's), whose
# pages are the same: no second build of the whole program just to print them.
if [ -n "${SINKRATE_DOCS_BIN:-}" ]; then
  docs_bin=$SINKRATE_DOCS_BIN
  "$docs_bin" --version | grep -qx "sinkrate $version.*" \
    || { echo "cross.sh: SINKRATE_DOCS_BIN=$docs_bin is not sinkrate $version" >&2; exit 1; }
else
  cargo build --locked --release --bin sinkrate
  docs_bin=$tdir/release/sinkrate
fi
mkdir -p target/tarballs
for t in "${built[@]}"; do
  runner=$(runner_for "$t")
  name="sinkrate-$version-$t"
  stage="target/tarballs/$name"
  rm -rf "$stage"
  mkdir -p "$stage/completions"
  cp "$tdir/$t/release/sinkrate" "$stage/sinkrate"
  # shellcheck disable=SC2086
  $runner "$stage/sinkrate" --version | grep -qx "sinkrate $version.*" \
    || { echo "cross.sh: $t: the binary does not name version $version" >&2; exit 1; }
  "$docs_bin" man > "$stage/sinkrate.1"
  for shell in bash zsh fish; do
    "$docs_bin" completions "$shell" > "$stage/completions/sinkrate.$shell"
  done
  cp README.md "$stage/README.md"
  tar -C target/tarballs -czf "target/tarballs/$name.tar.gz" "$name"
  rm -rf "$stage"
done
(cd target/tarballs && sha256sum -- *.tar.gz > SHA256SUMS)
echo "== target/tarballs"
for t in "${built[@]}"; do
  printf '   %-34s %9s bytes  %s\n' "$t" "$(stat -c %s "$tdir/$t/release/sinkrate")" "$tdir/$t/release/sinkrate"
done
cat target/tarballs/SHA256SUMS
