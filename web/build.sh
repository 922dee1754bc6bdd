#!/usr/bin/env bash
# Builds the browser app into dist/ with `trunk build --release --offline`, installing on a fresh
# machine whatever is missing: the wasm32 target, Trunk 0.21.14, the wasm-bindgen CLI matching
# Cargo.lock, wasm-opt (npm package `binaryen`, pinned in web/e2e/package-lock.json, with the
# test's playwright-core and axe-core), and
# Debian's chromium + chromium-driver for the end-to-end test and the bench.
#
#   web/build.sh              install what is missing, then build
#   web/build.sh --tools-only install what is missing
set -euo pipefail
cd "$(dirname "$0")/.."

TRUNK_VERSION=0.21.14
step() { printf '\n==> %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PATH"

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(trunk --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]; then
  step "installing trunk $TRUNK_VERSION (takes several minutes)"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

# The CLI must be the exact version of the wasm-bindgen crate in Cargo.lock.
BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$BINDGEN_VERSION" ]; then
  echo "no wasm-bindgen in Cargo.lock; run \`cargo generate-lockfile\` first" >&2
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $BINDGEN_VERSION" ]; then
  step "installing wasm-bindgen-cli $BINDGEN_VERSION"
  # --locked first; the registry mirror may lack a locked dependency version, then let cargo pick.
  cargo install wasm-bindgen-cli --version "$BINDGEN_VERSION" --locked \
    || cargo install wasm-bindgen-cli --version "$BINDGEN_VERSION"
fi

APT_UPDATED=
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "please install: $*" >&2
    return 1
  fi
  [ -n "$APT_UPDATED" ] || { apt-get update -qq; APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v npm >/dev/null; then
  step "installing node and npm"
  apt_install nodejs npm
fi
# wasm-opt (binaryen) and playwright-core, exactly as locked; no browser is downloaded.
if ! cmp -s web/e2e/package-lock.json web/e2e/node_modules/.installed-lock.json; then
  step "installing wasm-opt, playwright-core and axe-core from npm (web/e2e/package-lock.json)"
  (cd web/e2e && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.installed-lock.json)
fi
export PATH="$PWD/web/e2e/node_modules/.bin:$PATH"
# So that a plain `trunk build --release --offline` finds it too, link it beside trunk (where
# `cargo install` put trunk and wasm-bindgen).
if [ -d "$HOME/.cargo/bin" ]; then
  ln -sf "$PWD/web/e2e/node_modules/binaryen/bin/wasm-opt" "$HOME/.cargo/bin/wasm-opt"
fi

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  step "installing Debian's chromium and chromium-driver"
  apt_install chromium chromium-driver
fi

[ "${1:-}" = "--tools-only" ] && exit 0

step "trunk build --release --offline ($(wasm-bindgen --version), $(wasm-opt --version | cut -d' ' -f1-3))"
trunk build --release --offline
ls -l dist
