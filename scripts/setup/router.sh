#!/usr/bin/env bash
# Installs SGLang's router (sglang-router 0.3.2, the Rust router; it runs on a CPU) in a virtual
# environment cached under ${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}/router-venv, once, and prints
# the path of its launcher: `$(scripts/setup/router.sh) --pd-disaggregation ...` starts a router.
# The probe's end-to-end test runs it against stand-in servers (PDLAUNCH_TEST_ROUTER).
set -euo pipefail
cache="${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}"
venv="$cache/router-venv"
version=0.3.2
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('sglang-router') != '$version')" 2>/dev/null; then
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "sglang-router==$version" >&2
fi
launcher="$venv/bin/pdlaunch-router"
if [ ! -x "$launcher" ]; then
  printf '#!/bin/sh\nexec "%s" -m sglang_router.launch_router "$@"\n' "$venv/bin/python" > "$launcher"
  chmod +x "$launcher"
fi
echo "$launcher"
