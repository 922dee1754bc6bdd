#!/usr/bin/env bash
# End-to-end test of the browser app: builds dist/ (web/build.sh), holds it to its size budget
# (web/e2e/size.mjs), builds the CLI, serves dist/ on
# 127.0.0.1, and drives Debian's headless Chromium through web/e2e/app.test.mjs, then prints the
# bench's figures (web/e2e/bench.mjs). Screenshots and the request log land in target/web-e2e/.
#
#   web/e2e.sh               build, then test
#   SKIP_BUILD=1 web/e2e.sh  test the dist/ already built
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SKIP_BUILD:-}" ]; then
  ./web/build.sh
else
  ./web/build.sh --tools-only
fi
printf '\n==> transfer size (fails over the 576 KiB gzipped budget)\n'
node web/e2e/size.mjs
printf '\n==> building the CLI the test compares with\n'
cargo build -p pdlaunch --locked
# Wherever cargo puts it (CARGO_TARGET_DIR, a config's target-dir).
export PDLAUNCH="${PDLAUNCH:-$(cargo metadata --format-version 1 --no-deps --locked \
  | node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => console.log(JSON.parse(s).target_directory))')/debug/pdlaunch}"
printf '\n==> end-to-end test in headless Chromium\n'
node --test --test-reporter=spec web/e2e/app.test.mjs
# The bench's figures (size, start-up on localhost and on a throttled network, edit latency) are
# printed for the log; timings are figures, not assertions (the size budget is held above).
printf '\n==> bench (web/e2e/bench.mjs)\n'
node web/e2e/bench.mjs
