#!/usr/bin/env bash
# Renders a sinkrate HTML report in headless Chromium, as a person would open it from disk:
#   scripts/render-report.sh REPORT.html OUTDIR [WIDTHxHEIGHT]
# writes OUTDIR/screenshot.png (the page as drawn), OUTDIR/dom.html (the page after its
# scripts ran, opened with #selftest so it records its own measurements), OUTDIR/console.log
# (Chromium's log, console messages included) and OUTDIR/netlog.json (every request the
# browser made). The tests and the README's screenshot use this one renderer.
set -euo pipefail
html=$(realpath "$1")
out=$2
size=${3:-1280x2400}
mkdir -p "$out"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "render-report: no chromium on PATH (scripts/install-deps.sh --test installs it)" >&2
  exit 3
fi
# A profile of its own (runs can overlap), and none of the browser's own background traffic,
# so the network log holds what the page asked for.
common=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-default-apps --user-data-dir="$out/profile")
url="file://$html"
timeout 120 "$browser" "${common[@]}" --window-size="${size/x/,}" \
  --screenshot="$out/screenshot.png" "$url" >/dev/null 2>"$out/screenshot.log"
timeout 120 "$browser" "${common[@]}" --window-size=1280,1000 --enable-logging=stderr --v=0 \
  --log-net-log="$out/netlog.json" --dump-dom "$url#selftest" >"$out/dom.html" 2>"$out/console.log"
rm -rf "$out/profile"
