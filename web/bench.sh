#!/usr/bin/env bash
# Bench of the browser app, measured in Debian's headless Chromium: gzipped size of dist/
# (wasm + js + css + html), navigation to first rendered output on localhost and on a throttled
# network, and field edit to updated output and findings (budgets: 576 KiB, 300 ms, 1 s, 16 ms). Builds dist/ first unless SKIP_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SKIP_BUILD:-}" ]; then
  ./web/build.sh
else
  ./web/build.sh --tools-only
fi
printf '\n==> bench (web/e2e/bench.mjs)\n'
node web/e2e/bench.mjs
