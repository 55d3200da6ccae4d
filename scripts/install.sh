#!/usr/bin/env bash
# Builds sinkrate, installs the binary, its man page and shell completions (as root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
for d in "$HOME/.cargo/bin" /root/.cargo/bin; do [ -d "$d" ] && export PATH="$d:$PATH"; done
prefix="${PREFIX:-/usr/local}"
cargo build --release --locked -p sinkrate -p sinkrate-nbdkit
install -D -m 0755 target/release/sinkrate "$prefix/bin/sinkrate"
# The nbdkit plugin behind emulate's device models; sinkrate finds it in ../lib/sinkrate.
install -D -m 0644 target/release/libsinkrate_nbdkit.so "$prefix/lib/sinkrate/libsinkrate_nbdkit.so"
mkdir -p "$prefix/share/man/man1"
target/release/sinkrate man > "$prefix/share/man/man1/sinkrate.1"
# bash-completion also looks under the prefix ($prefix/share/bash-completion/completions).
mkdir -p "$prefix/share/bash-completion/completions"
target/release/sinkrate completions bash > "$prefix/share/bash-completion/completions/sinkrate"
echo "installed $prefix/bin/sinkrate ($("$prefix/bin/sinkrate" -V))"
