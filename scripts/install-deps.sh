#!/usr/bin/env bash
# Installs what sinkrate needs to build and what its tests use, on Debian, as root.
#   scripts/install-deps.sh          build dependencies only
#   scripts/install-deps.sh --cross  also what scripts/cross.sh needs: Debian's aarch64 and armhf
#                                    cross gcc, qemu-user, and rustup's musl, armv7 and FreeBSD
#                                    standard libraries
#   scripts/install-deps.sh --test   also fio, mkfs tools, nbdkit/nbdfuse, fuse3, headless
#                                    Chromium (renders the HTML reports), Prometheus' promtool
#                                    and node_exporter, ansible-core and sshd (their services
#                                    left stopped and disabled), strace, GStreamer and ffmpeg
#                                    (real recorders for capture's tests), and all of --cross
#                                    (the tests run the ARM binaries under qemu-user)
set -euo pipefail

want_test=0
want_cross=0
case "${1:-}" in
  --test) want_test=1; want_cross=1 ;;
  --cross) want_cross=1 ;;
  "") ;;
  *) echo "install-deps.sh: unknown option '$1' (accepted: --test, --cross)" >&2; exit 2 ;;
esac

packages=(build-essential pkg-config util-linux)
if [ "$want_test" = 1 ]; then
  packages+=(fio time e2fsprogs xfsprogs btrfs-progs dosfstools f2fs-tools exfatprogs exfat-fuse fusefat nbdkit libnbd-bin fuse3 fdisk procps chromium fonts-dejavu-core prometheus prometheus-node-exporter ansible-core openssh-server openssh-client strace gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly ffmpeg trace-cmd)
fi
if [ "$want_cross" = 1 ]; then
  packages+=(gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-armhf-cross binutils qemu-user)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "sinkrate: these Debian packages are missing: ${missing[*]}" >&2
    echo "sinkrate: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
  echo "installing: ${missing[*]}"
  # Prometheus, node_exporter, Ansible and sshd are installed for the tests' binaries, not
  # as services of this machine: a service they bring is not started now (policy-rc.d, read
  # by invoke-rc.d and deb-systemd-invoke, where the machine has none of its own) nor at
  # boot (disabled, and stopped), and without what they only recommend (Ansible's hundreds
  # of collections). Only packages this script installs are touched.
  services=()
  lean=()
  full=()
  for p in "${missing[@]}"; do
    case "$p" in
      prometheus | prometheus-node-exporter) services+=("$p"); lean+=("$p") ;;
      openssh-server) services+=(ssh); lean+=("$p") ;;
      ansible-core) lean+=("$p") ;;
      # A recorder's command line, not a desktop's codecs and fonts.
      gstreamer1.0-* | ffmpeg) lean+=("$p") ;;
      *) full+=("$p") ;;
    esac
  done
  policy=""
  if [ "${#services[@]}" -gt 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  if [ "${#full[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${full[@]}" >/dev/null
  fi
  if [ "${#lean[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
  fi
  if [ -n "$policy" ]; then
    rm -f "$policy"
    trap - EXIT
  fi
  if [ "${#services[@]}" -gt 0 ] && command -v systemctl >/dev/null 2>&1; then
    for svc in "${services[@]}"; do
      systemctl disable --now --quiet "$svc" >/dev/null 2>&1 || true
    done
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  for d in "$HOME/.cargo/bin" /root/.cargo/bin /usr/local/cargo/bin; do
    [ -x "$d/cargo" ] && export PATH="$d:$PATH" && break
  done
fi
if ! command -v cargo >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "sinkrate: no Rust toolchain (cargo) on PATH: install one (rustup, or as root: apt-get install cargo rustc)" >&2
    exit 2
  fi
  echo "sinkrate: no Rust toolchain found; installing Debian's cargo" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc >/dev/null
fi
need="1.85.0"
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
  echo "sinkrate: rustc $have is older than the $need sinkrate needs (rustup update, or a newer Debian)" >&2
  exit 2
fi

if [ "$want_cross" = 1 ]; then
  if ! command -v rustup >/dev/null 2>&1; then
    echo "sinkrate: cross builds need rustup (its targets carry the standard libraries for the boards); install Rust with rustup" >&2
    exit 2
  fi
  # armv7's musl library is tried by scripts/cross.sh, which falls back to glibc without it.
  for t in aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf x86_64-unknown-linux-musl x86_64-unknown-freebsd; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
  done
fi
