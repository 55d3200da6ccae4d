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
# every later run until removed) must not change what the tests' runs print. Each lane of
# tests/it below has a directory of its own here, and killed runs in a lane are still swept
# by the runs after them, which share it.
state_dir="$PWD/target/test-state"
export SINKRATE_STATE_DIR="$state_dir"

# What the checkout holds before the tests (besides target/): a test or fio that leaves a
# file in it fails the run below.
checkout_state() { git status --porcelain --ignored 2>/dev/null | grep -v '^!! target/$' || true; }
checkout_before=$(checkout_state)

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo test"
# Every cargo command below selects the whole workspace: cargo resolves features per
# selection of packages, so `-p sinkrate` after `--exclude sinkrate` would build every
# shared crate a second time.
lanes_dir="$PWD/target/test-lanes"
rm -rf "$lanes_dir"
mkdir -p "$lanes_dir"
# The cross builds start at once, beside the host's build (two cargo builds at once keep
# both cores busy, and beside other work on the machine take a fair share of it), in a
# target directory of their own so that they and the host's builds never wait for each
# other's cargo lock: the ARM binaries of tests/it/qemu.rs, then, below the tests' priority
# and beside the lanes, the x86_64 board binary as shipped. A lane waits for the ARM
# binaries (`@arm-binaries`) before qemu's tests, which run them.
cross_log="$PWD/target/cross-builds.log"
arm_rc="$PWD/target/arm-binaries.rc"
board_rc_file="$PWD/target/board.rc"
host_built="$PWD/target/host-built"
rm -f "$arm_rc" "$board_rc_file" "$host_built"
checks_log="$PWD/target/checks.log"
checks_rc="$PWD/target/checks.rc"
unit_rc_file="$PWD/target/unit-tests.rc"
rm -f "$checks_rc" "$unit_rc_file"
(
  export CARGO_TARGET_DIR="$PWD/target/cross"
  rc=0
  # The ARM test binaries first: a lane's qemu tests wait for them (`@arm-binaries`).
  # Each step is one && list: inside a group whose status is tested, `set -e` stops
  # nothing, and a failure followed by an echo would pass.
  {
    echo "== ARM test binaries (tests/it/qemu.rs runs them under qemu-user), at $SECONDS s" &&
      bash scripts/cross.sh --test-build &&
      echo "   ARM test binaries built, at $SECONDS s"
  } >"$cross_log" 2>&1 || rc=$?
  echo "$rc" >"$arm_rc"
  # From here on beside the lanes: below the tests' priority.
  renice -n 3 -p "$BASHPID" >/dev/null
  # The board build as shipped, of the largest of the board targets: static, smoke-run and
  # within the 5 MB budget (scripts/cross.sh builds all three). Its pages come from the
  # suite's own host binary.
  rc=0
  # (the host binary is the suite's: built by the time the ARM binaries are, or waited for)
  while [ ! -e "$host_built" ] && kill -0 "$$" 2>/dev/null; do sleep 2; done
  {
    echo "== board build of x86_64-unknown-linux-musl (the 5 MB budget), at $SECONDS s" &&
      SINKRATE_DOCS_BIN="$PWD/target/test-release/sinkrate" bash scripts/cross.sh x86_64-unknown-linux-musl &&
      echo "   board build ended at $SECONDS s"
  } >>"$cross_log" 2>&1 || rc=$?
  echo "$rc" >"$board_rc_file"
) &
cross_pid=$!
# A run that ends early (a build failed) stops the cross builds it started.
stop_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'stop_tree "$cross_pid"' EXIT
# The soaks (tests/soak, lane D: ten minutes of recording) first, as soon as their small
# binary, the sinkrate binary they run and sinkrate's nbdkit plugin (a card that wears out)
# are built, beside every build and run after them: the longest run of the suite, mostly
# waiting on its paced camera. Each lane's binary is run directly: cargo would wait for the
# build directory that the builds and checks after it hold. `--lib` builds every crate's
# library, the plugin's cdylib among them.
cargo build --locked --workspace --profile test-release --lib
cargo test --locked --workspace --profile test-release --test soak --no-run
soak_bin=$(cargo test --locked --workspace --profile test-release --test soak --no-run \
  --message-format=json 2>/dev/null | grep '"kind":\["test"\]' | grep '"name":"soak"' |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -x "$soak_bin" ] || { echo "FAIL: the tests/soak binary was not built" >&2; exit 1; }
soak_listed=$("$soak_bin" --list 2>/dev/null | grep -c ': test$')
(
  export SINKRATE_STATE_DIR="$state_dir/D"
  log="$lanes_dir/D.log"
  start=$SECONDS
  rc=0
  # Stopped after 20 minutes, as a hung run of the lanes below is (the soaks take ten).
  if timeout --kill-after=30 1200 "$soak_bin" --test-threads=2 >"$log" 2>&1; then
    echo "== tests/soak, lane D ($((SECONDS - start)) s, ended at $SECONDS s)"
  else
    echo "== tests/soak, lane D FAILED ($((SECONDS - start)) s, ended at $SECONDS s):"
    cat "$log"
    rc=1
  fi
  sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log" |
    awk '{s+=$1+$2+$3} END {print s+0}' >"$log.count"
  : >"$lanes_dir/D.done"
  exit "$rc"
) &
pid_d=$!
# Everything else the tests run, beside the soak: this also builds the nbdkit plugin behind
# emulate's device models (a cdylib that cargo test does not link; emulate finds it beside
# the sinkrate binary the tests run).
cargo build --locked --workspace --profile test-release
# The integration tests' binary.
cargo test --locked --workspace --profile test-release --test it --no-run
it_bin=$(cargo test --locked --workspace --profile test-release --test it --no-run \
  --message-format=json 2>/dev/null | grep '"kind":\["test"\]' | grep '"name":"it"' |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -x "$it_bin" ] || { echo "FAIL: the tests/it binary was not built" >&2; exit 1; }
echo "== the sinkrate binary and tests/it built, at $SECONDS s"
: >"$host_built"
# The integration tests are one binary (tests/it), run in three lanes at once (A to C,
# beside the soaks of lane D), each lane a list of runs one after another. Most tests wait
# on paced writers and emulated cards, so lanes overlap those waits on two cores. Every
# test that changes a setting of the whole machine runs in lane A, one run after another:
# the writeback sysctls through the settings journal (tune apply and search, also in
# faults; suite's page-cache and power-cut suites; record --ram-limit and --dirty-limit),
# fs.protected_symlinks, watch's throttling test; the stall causes' per-device limits, which
# the kernel keeps as a share of the machine's dirty limit; and what is planned or judged from the
# settings in force (a tune dry run, check's note on the first writeback, sync_file_range's
# control run, which lane A's lowered dirty limits would flush, bench's warning that a
# buffered job fit under the dirty limit, emulate's buffered writes that the page cache
# absorbs). Two of them at once would see each other's values as the originals, or find a
# setting held by the other. A run is a module (`tune`), or a module with tests left out
# (`-suite::page_cache_`), or test names (`suite::page_cache_`). A module's filter skips
# the modules whose names end in its own (verify:: would also select bench_verify::). The
# power cuts (power_cut, suite's power-cut) take turns in lane A too: a card cut off fails
# its I/O in the kernel's log, which a recording on a loop device of the same name next
# would take for its own card's failure. record's tests run in lane A too: beside lane A's
# tune tests, a recording at 40% of its own emulated card's rate dropped frames in three
# of four runs (the cause not found yet), and not in its one run in lane A. tune's prediction
# search (a card with GC pauses) runs after the rest, and last, once every other lane has
# ended (`@alone`), the two tests of a card's own dirty limit that need the page cache to
# themselves.
lane_a=("tune -tune::a_search_predicts_ -tune::a_throttled_baseline_ -tune::the_sized_card_limit_" "record" "suite::page_cache_ suite::power_cut_" "watch"
  "adversarial::a_second_interrupt_ adversarial::a_default_report_name_planted_"
  "faults::check_and_tune_ faults::tune_search_on_ faults::verify_and_tune_"
  "round_trip::tune_results_" "check" "bench_fio_sync_range"
  "bench_devices::honest_numbers_" "emulate::buffered_writes_" "endurance::check_on_"
  "power_cut" "fleet::a_recording_at_risk_" "lab::the_tune_play_" "causes"
  "tune::a_search_predicts_" "@alone" "tune::a_throttled_baseline_ tune::the_sized_card_limit_")
lane_b=("suite -suite::page_cache_ -suite::power_cut_"
  "faults -faults::check_and_tune_ -faults::tune_search_on_ -faults::verify_and_tune_"
  "leftovers" "old_kernels" "verify"
  "emulate -emulate::buffered_writes_" "profiles" "audit" "docs_links"
  "bench_fio_pacing" "bench_input" "bench_pacing" "lab -lab::the_tune_play_ -lab::an_aarch64_board_"
  "capture -capture::gstreamer_ -capture::ffmpeg_" "capture::ffmpeg_" "capture::gstreamer_")
lane_c=("capacity" "class" "report"
  "adversarial -adversarial::a_second_interrupt_ -adversarial::a_default_report_name_planted_"
  "board" "round_trip -round_trip::tune_results_" "compare"
  "bench_devices -bench_devices::honest_numbers_"
  "bench_fio_behaviour" "bench_fio_compat" "bench_fio_coordination" "bench_fio_engines"
  "bench_fio_errors" "bench_fio_logs" "bench_fio_newer" "bench_fio_offsets"
  "bench_fio_trim" "bench_nbd" "bench_output" "bench_signals"
  "bench_verify" "endurance -endurance::check_on_" "fleet -fleet::a_recording_at_risk_" "@arm-binaries" "qemu"
  "lab::an_aarch64_board_")
modules=$(sed -n 's/^mod \([a-z_0-9]*\);$/\1/p' tests/it/main.rs | grep -vx common)
listed=$(($("$it_bin" --list 2>/dev/null | grep -c ': test$') + soak_listed))
# Every module is in a lane (a new module must be given one); the count of tests run, checked
# below, finds a test left out of every lane or run twice.
for m in $modules; do
  n=$(printf '%s\n' "${lane_a[@]}" "${lane_b[@]}" "${lane_c[@]}" | tr ' ' '\n' | sed 's/::.*//' | grep -cx -- "$m" || true)
  if [ "$n" = 0 ]; then
    echo "FAIL: tests/it/$m.rs is in no lane of scripts/test.sh" >&2
    exit 1
  fi
done
# Runs one lane's runs in order; writes each run's output and the count of tests it ran.
# A failed run does not stop the lane (every failure of the suite is shown at once); the
# lane's status is then 1.
run_limit_s=1200
# What may hold a run that hangs: tasks waiting in the kernel (with their stacks), the
# processes of emulated cards and of the tools the tests run, the mounts they made and the
# writeback settings in force.
what_hangs() {
  echo "== what the machine held at $SECONDS s, as a run neared its limit:"
  ps -eo pid,ppid,stat,etime,time,wchan:32,args |
    awk 'NR == 1 || $3 ~ /D/ || /sinkrate|nbdkit|nbdfuse|fusefat|fuse|losetup|mkfs|mount|fio|chrom/' |
    grep -v ' awk ' | cut -c1-240
  local t
  for t in /proc/[0-9]*; do
    if [ "$(awk '/^State:/ {print $2}' "$t/status" 2>/dev/null)" = D ]; then
      echo "-- in the kernel: $(cat "$t/comm" 2>/dev/null) (pid ${t#/proc/})"
      cat "$t/stack" 2>/dev/null || true
    fi
  done
  grep -E 'fuse|nbd|loop' /proc/self/mountinfo || true
  sysctl vm.dirty_bytes vm.dirty_ratio vm.dirty_background_bytes vm.dirty_background_ratio \
    vm.dirty_expire_centisecs vm.dirty_writeback_centisecs 2>/dev/null || true
  grep -E '^(Dirty|Writeback):' /proc/meminfo || true
}
# Takes down every emulated card a state directory still lists (each within a minute).
take_down_cards() {
  local mp
  for mp in $(SINKRATE_STATE_DIR="$1" timeout --kill-after=10 60 target/test-release/sinkrate emulate list \
    --output-format=json 2>/dev/null | sed -n 's/^ *"mountpoint": "\(.*\)",$/\1/p'); do
    echo "   taking down the emulated card left at $mp"
    SINKRATE_STATE_DIR="$1" timeout --kill-after=10 60 target/test-release/sinkrate emulate down "$mp" || true
  done
}
run_lane() {
  local lane=$1
  shift
  local k=0 lane_rc=0
  for run in "$@"; do
    k=$((k + 1))
    local args=()
    if [ "$run" = "@alone" ]; then
      # The runs after this need the machine's page cache to themselves (their tests say
      # why): they wait for the other lanes and the soaks to end.
      local other
      for other in A B C D; do
        [ "$other" = "$lane" ] && continue
        while [ ! -e "$lanes_dir/$other.done" ] && kill -0 "$$" 2>/dev/null; do sleep 2; done
      done
      continue
    fi
    if [ "$run" = "@arm-binaries" ]; then
      while [ ! -s "$arm_rc" ] && kill -0 "$cross_pid" 2>/dev/null; do sleep 2; done
      # (the cross builds' shell writes the status as the ARM builds end)
      sleep 1
      if [ "$(cat "$arm_rc" 2>/dev/null)" != 0 ]; then
        echo "== tests/it lane $lane: the ARM test binaries were not built; qemu's tests need them"
        return 1
      fi
      continue
    fi
    for word in $run; do
      case "$word" in
        -*) args+=(--skip "${word#-}") ;;
        *::*) args+=("$word") ;;
        *)
          args+=("$word::")
          for o in $modules; do
            if [ "$o" != "$word" ] && [[ "$o" == *"$word" ]]; then args+=(--skip "$o::"); fi
          done
          ;;
      esac
    done
    local log="$lanes_dir/$lane.$k.log"
    # Each lane keeps its runs' journals and emulated devices apart: a test that counts the
    # devices or settings sinkrate holds sees its own lane's.
    export SINKRATE_STATE_DIR="$state_dir/$lane"
    local start=$SECONDS
    # A run that hangs fails within its limit, with its log (libtest names each test still
    # running after 60 s), rather than holding CI until its own limit; `timeout` signals
    # the run's whole process group, the sinkrate runs and servers its tests started too.
    timeout --kill-after=30 "$run_limit_s" "$it_bin" "${args[@]}" --test-threads=2 >"$log" 2>&1 &
    local run_pid=$!
    # Shortly before the limit, what the machine is doing goes in the log: a hang's cause
    # (a task waiting in the kernel, and where) is gone once the run is killed.
    (
      sleep $((run_limit_s - 20))
      if kill -0 "$run_pid" 2>/dev/null; then what_hangs >"$log.hang" 2>&1; fi
    ) &
    local watch_pid=$!
    if wait "$run_pid"; then
      echo "== tests/it lane $lane: $run ($((SECONDS - start)) s, ended at $SECONDS s)"
    else
      echo "== tests/it lane $lane: $run FAILED ($((SECONDS - start)) s, ended at $SECONDS s; a run is stopped after $run_limit_s s):"
      cat "$log"
      [ -s "$log.hang" ] && cat "$log.hang"
      # A run killed at its limit leaves its emulated cards up (their servers are daemons,
      # outside the run's process group): down before the lane's next run, which would
      # otherwise meet them, hung or not, in its own state directory.
      take_down_cards "$SINKRATE_STATE_DIR"
      lane_rc=1
    fi
    kill "$watch_pid" 2>/dev/null || true
    wait "$watch_pid" 2>/dev/null || true
    sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log" |
      awk '{s+=$1+$2+$3} END {print s+0}' >"$log.count"
  done
  # (a lane's `@alone` runs wait for this)
  : >"$lanes_dir/$lane.done"
  return $lane_rc
}
# The crates' own integration tests, each run by the unit tests' step below (tests/it and
# tests/soak run in the lanes): a new one must be named here, or this fails.
crate_tests=(corpus capture)
for f in crates/*/tests/*.rs; do
  if ! printf '%s\n' "${crate_tests[@]}" | grep -qx "$(basename "$f" .rs)"; then
    echo "FAIL: $f is run by no step of scripts/test.sh (add it to crate_tests)" >&2
    exit 1
  fi
done
crate_test_args=()
for t in "${crate_tests[@]}"; do crate_test_args+=(--test "$t"); done
# The host's checks that no test needs (the unit tests, clippy, the POSIX port's check) run
# beside the integration tests, one after another, as the board build does: at a slightly
# lower priority than the tests (nice 3: the tests mostly wait on paced writers and emulated
# cards), not a low one: beside other work at the normal priority (the busy loops of a
# shared runner) a low priority left them almost no CPU (nice 10: the ARM binaries took some
# 2,200 s), and the suite waited on them. Their output is shown when they all end.
(
  renice -n 3 -p "$BASHPID" >/dev/null
  rc=0
  # Each step is one && list (see the cross builds'): a failed clippy followed by the
  # FreeBSD check, each in one group, passed before.
  {
    # The crates' unit tests, their own integration tests (the fuzz corpus replay, the
    # capture of real programs) and the binary's unit tests.
    echo "== unit tests, at $SECONDS s" &&
      cargo test --locked --workspace --profile test-release --lib --bins "${crate_test_args[@]}" \
        -- --test-threads=2 &&
      echo "   unit tests ended at $SECONDS s"
  } >"$checks_log" 2>&1 || { rc=1; echo 1 >"$unit_rc_file"; }
  {
    echo "== cargo clippy, at $SECONDS s" &&
      cargo clippy --locked --workspace --all-targets -- -D warnings
  } >>"$checks_log" 2>&1 || rc=1
  {
    echo "== cargo check --target x86_64-unknown-freebsd (the stand-in for QNX and other POSIX ports), at $SECONDS s" &&
      CARGO_TARGET_X86_64_UNKNOWN_FREEBSD_RUSTFLAGS="-D warnings" \
        cargo check --locked --workspace --target x86_64-unknown-freebsd &&
      echo "   the checks ended at $SECONDS s"
  } >>"$checks_log" 2>&1 || rc=1
  echo "$rc" >"$checks_rc"
) &
checks_pid=$!
run_lane A "${lane_a[@]}" &
pid_a=$!
run_lane B "${lane_b[@]}" &
pid_b=$!
run_lane C "${lane_c[@]}" &
pid_c=$!
failed=0
for pid in $pid_a $pid_b $pid_c; do
  wait "$pid" || failed=1
done
wait "$pid_d" || failed=1
wait "$cross_pid" || true
trap - EXIT
wait "$checks_pid" || true
cat "$cross_log" "$checks_log"
# Skipped tests are listed whatever else failed: a run that fails for one reason still shows
# what it did not test.
if [ -s "$SINKRATE_SKIP_LOG" ]; then
  echo "== skipped tests:"
  cat "$SINKRATE_SKIP_LOG"
fi
if [ -s "$unit_rc_file" ]; then
  echo "FAIL: the unit tests failed (their output is above)" >&2
  exit 1
fi
if [ "$(cat "$checks_rc" 2>/dev/null)" != 0 ]; then
  echo "FAIL: the checks beside the tests failed (their output is above)" >&2
  exit 1
fi
if [ "$failed" != 0 ]; then
  echo "FAIL: a lane of tests/it failed (its output is above)" >&2
  exit 1
fi
if [ "$(cat "$board_rc_file" 2>/dev/null)" != 0 ]; then
  echo "FAIL: the board build failed or is over its budget (its output is above)" >&2
  exit 1
fi
ran=$(cat "$lanes_dir"/*.count | awk '{s+=$1} END {print s+0}')
rm -rf "$lanes_dir"
if [ "$ran" != "$listed" ]; then
  echo "FAIL: tests/it and tests/soak list $listed tests, the lanes ran $ran" >&2
  exit 1
fi

checkout_after=$(checkout_state)
if [ "$checkout_after" != "$checkout_before" ]; then
  echo "FAIL: the tests changed the checkout:" >&2
  diff <(echo "$checkout_before") <(echo "$checkout_after") >&2 || true
  exit 1
fi

if [ -s "$SINKRATE_SKIP_LOG" ] && [ "$(id -u)" = 0 ]; then
  echo "FAIL: tests were skipped although running as root (listed above)" >&2
  exit 1
fi
if [ -s "$SINKRATE_SKIP_LOG" ]; then
  echo "== all tests that ran passed; $(wc -l < "$SINKRATE_SKIP_LOG") root-only test(s) skipped, not passed (listed above)"
else
  echo "== all tests passed, in $SECONDS s"
fi
