#!/usr/bin/env bash
# Runs every check of the project on a fresh machine: installs what is missing (the wasm32 target,
# rustfmt, clippy, cargo-nextest, NIXL and Mooncake for the transport tests, NVRTC and ptxas from
# PyPI for the CUDA kernel checks, and for the web app Trunk, wasm-bindgen-cli, wasm-opt and
# Chromium), then formatting, lints, all tests (built with NIXL: `--features pdlaunch/nixl`), the
# core's wasm32 build, and the web app's build and browser test.
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

step "transfer libraries for the transport tests (NIXL, Mooncake)"
source scripts/setup/transports.sh
if [ -z "${PDLAUNCH_TEST_NIXL_LIB:-}" ] || [ -z "${PDLAUNCH_TEST_MOONCAKE_PYTHON:-}" ]; then
  echo "the transport tests need NIXL and Mooncake, whose install failed above" >&2
  exit 1
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked --features pdlaunch/nixl -- -D warnings

step "CUDA compilers from PyPI (no GPU): the embedded cubins are current; the tests assemble the PTX"
cuda_tools=$(scripts/setup/cuda-tools.sh) # an assignment, so that set -e sees a failed install
eval "$cuda_tools"
"$PDLAUNCH_CUDA_PY" tools/gen_kernels.py --check

step "SGLang's router for the probe's test (sglang-router 0.3.2, cached)"
PDLAUNCH_TEST_ROUTER="$(scripts/setup/router.sh)"; export PDLAUNCH_TEST_ROUTER

step "tests (nextest)"
cargo nextest run --workspace --locked --no-fail-fast --features pdlaunch/nixl

step "doc tests"
cargo test --workspace --doc --locked

step "core builds for wasm32-unknown-unknown (no I/O, no threads)"
cargo build -p pdlaunch-core --target wasm32-unknown-unknown --locked

step "benches compile"
cargo bench --workspace --no-run --locked --features pdlaunch/nixl >/dev/null

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
