#!/usr/bin/env bash
# Runs every check of the project on a fresh machine: installs what is missing (the wasm32 target,
# rustfmt, clippy, cargo-nextest, and for the web app Trunk, wasm-bindgen-cli, wasm-opt and
# Chromium), then formatting, lints, all tests, the core's wasm32 build, and the web app's build and
# browser test.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components"
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install cargo-nextest --locked
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "SGLang's router for the probe's test (sglang-router 0.3.2, cached)"
PDLAUNCH_TEST_ROUTER="$(scripts/setup/router.sh)"; export PDLAUNCH_TEST_ROUTER

step "tests (nextest)"
cargo nextest run --workspace --locked --no-fail-fast

step "doc tests"
cargo test --workspace --doc --locked

step "core builds for wasm32-unknown-unknown (no I/O, no threads)"
cargo build -p pdlaunch-core --target wasm32-unknown-unknown --locked

step "benches compile"
cargo bench --workspace --no-run --locked >/dev/null

# ---- web app ---------------------------------------------------------------------------------
# Installs what is missing (Trunk, wasm-bindgen-cli, wasm-opt, chromium), runs
# `trunk build --release --offline`, then the end-to-end test in headless Chromium. On a fresh
# machine building Trunk and wasm-bindgen-cli from source comes first (about 15 minutes on two
# cores). PDLAUNCH_WEB=0 skips this part for a quick local run.
if [ "${PDLAUNCH_WEB:-1}" != 0 ]; then
  step "web app: trunk build --release --offline, then the end-to-end test in headless Chromium"
  ./web/e2e.sh
fi
# ---- end web app ---------------------------------------------------------------------------------

printf '\nall checks passed\n'
