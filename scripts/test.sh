#!/usr/bin/env bash
# The whole test suite: style, lints, unit and integration tests (root-only tests run for
# real when root, and must not be skipped then).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
for d in "$HOME/.cargo/bin" /root/.cargo/bin; do [ -d "$d" ] && export PATH="$d:$PATH"; done

export SINKRATE_SKIP_LOG="$PWD/target/skipped-tests.txt"
mkdir -p target
: > "$SINKRATE_SKIP_LOG"
# The tests' runs keep their journals and emulated devices' state here, not under
# /run/sinkrate: a sinkrate killed on this machine before the suite (its files named by
# every later run until removed) must not change what the tests' runs print. Killed runs
# inside the suite are still swept by the runs after them, which share this directory.
export SINKRATE_STATE_DIR="$PWD/target/test-state"

# What the checkout holds before the tests (besides target/): a test or fio that leaves a
# file in it fails the run below.
checkout_state() { git status --porcelain --ignored 2>/dev/null | grep -v '^!! target/$' || true; }
checkout_before=$(checkout_state)

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --workspace --all-targets -- -D warnings
echo "== cargo check --target x86_64-unknown-freebsd (the stand-in for QNX and other POSIX ports)"
CARGO_TARGET_X86_64_UNKNOWN_FREEBSD_RUSTFLAGS="-D warnings" \
  cargo check --locked --workspace --target x86_64-unknown-freebsd
echo "== ARM test binaries (tests/it/qemu.rs runs them under qemu-user)"
bash scripts/cross.sh --test-build
echo "== cargo test"
# Everything the tests run is built once, by one command over the whole workspace: cargo
# resolves features per selection of packages, so `-p sinkrate` after `--exclude sinkrate`
# would build every shared crate a second time (every cargo command below selects the
# whole workspace for that reason). This also builds the nbdkit plugin behind
# emulate's device models (a cdylib that cargo test does not link; emulate finds it beside
# the sinkrate binary the tests run).
cargo build --locked --workspace --profile test-release
cargo test --locked --workspace --profile test-release --no-run
# The crates' unit tests, the fuzz corpus replay and the binary's own unit tests.
cargo test --locked --workspace --profile test-release --lib --bins --test corpus -- --test-threads=2
# The integration tests are one binary (tests/it), run a module at a time: a module's tests
# that use loop devices, emulated cards or the machine's settings serialise themselves, and
# no other module's tests run beside them. A module's filter skips the modules whose names
# end in its own (verify:: would also select bench_verify::).
modules=$(sed -n 's/^mod \([a-z_0-9]*\);$/\1/p' tests/it/main.rs | grep -vx common)
listed=$(cargo test --locked --workspace --profile test-release --test it -- --list 2>/dev/null | grep -c ': test$')
ran=0
for m in $modules; do
  skips=()
  for o in $modules; do
    if [ "$o" != "$m" ] && [[ "$o" == *"$m" ]]; then skips+=(--skip "$o::"); fi
  done
  echo "== tests/it: $m"
  out=$(mktemp)
  # (pipefail: a failing module ends the script here)
  cargo test --locked --workspace --profile test-release --test it -- "$m::" "${skips[@]}" --test-threads=2 2>&1 | tee "$out"
  n=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$out" | awk '{s+=$1+$2+$3} END {print s+0}')
  rm -f "$out"
  ran=$((ran + n))
done
if [ "$ran" != "$listed" ]; then
  echo "FAIL: tests/it lists $listed tests, the module runs ran $ran" >&2
  exit 1
fi

checkout_after=$(checkout_state)
if [ "$checkout_after" != "$checkout_before" ]; then
  echo "FAIL: the tests changed the checkout:" >&2
  diff <(echo "$checkout_before") <(echo "$checkout_after") >&2 || true
  exit 1
fi

if [ -s "$SINKRATE_SKIP_LOG" ]; then
  echo "== skipped tests:"
  cat "$SINKRATE_SKIP_LOG"
  if [ "$(id -u)" = 0 ]; then
    echo "FAIL: tests were skipped although running as root" >&2
    exit 1
  fi
fi
if [ -s "$SINKRATE_SKIP_LOG" ]; then
  echo "== all tests that ran passed; $(wc -l < "$SINKRATE_SKIP_LOG") root-only test(s) skipped, not passed (listed above)"
else
  echo "== all tests passed"
fi
