# Sourced by scripts/test.sh: installs what `pdlaunch smoke --transport nixl|mooncake` needs for
# its tests (tests/transport.rs), once, cached under ${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}, and
# exports where they are:
#   PDLAUNCH_TEST_NIXL_LIB         NIXL 1.5.1's libnixl_capi.so (wheel nixl-cu12, UCX inside)
#   PDLAUNCH_TEST_MOONCAKE_PYTHON  a Python that imports Mooncake 0.3.13 (non-CUDA wheel)
#   PDLAUNCH_TEST_NIXL_PYTHON      a Python that imports NIXL 1.5.1 (`nixl._api`)
# Both Pythons get numpy, which the agent for the deployment's own nodes (host_agent.py) uses, as
# SGLang's images have it.
# Debian packages: libclang-dev (bindgen, for nixl-sys), libibverbs1 (Mooncake loads it even over
# TCP), iproute2 (network namespaces), python3-venv. Quiet unless something is installed.

pdlaunch_transports() {
  local cache="${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}"
  local want=() p
  for p in libclang-dev libibverbs1 iproute2 python3-venv; do
    dpkg -s "$p" >/dev/null 2>&1 || want+=("$p")
  done
  if [ "${#want[@]}" -gt 0 ]; then
    printf '  apt-get install %s\n' "${want[*]}"
    if [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}") >/dev/null
    else
      echo "  not root: install ${want[*]} yourself (the transport tests skip without them)" >&2
    fi
  fi
  mkdir -p "$cache"
  if [ ! -f "$cache/nixl-venv/.installed-1.5.1" ]; then
    echo "  pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1 (into $cache/nixl-venv)"
    python3 -m venv "$cache/nixl-venv" &&
      "$cache/nixl-venv/bin/pip" install -q --disable-pip-version-check --no-deps nixl==1.5.1 nixl-cu12==1.5.1 &&
      touch "$cache/nixl-venv/.installed-1.5.1"
  fi
  if [ ! -f "$cache/mooncake-venv/.installed-0.3.13.post1" ]; then
    echo "  pip install mooncake-transfer-engine-non-cuda==0.3.13.post1 (into $cache/mooncake-venv)"
    python3 -m venv "$cache/mooncake-venv" &&
      "$cache/mooncake-venv/bin/pip" install -q --disable-pip-version-check mooncake-transfer-engine-non-cuda==0.3.13.post1 &&
      touch "$cache/mooncake-venv/.installed-0.3.13.post1"
  fi
  for p in nixl-venv mooncake-venv; do
    if [ -x "$cache/$p/bin/python" ] && ! "$cache/$p/bin/python" -c 'import numpy' 2>/dev/null; then
      echo "  pip install numpy (into $cache/$p)"
      "$cache/$p/bin/pip" install -q --disable-pip-version-check numpy==2.4.6 >/dev/null 2>&1 || true
    fi
  done
  local lib
  lib="$(ls "$cache"/nixl-venv/lib/python3*/site-packages/.nixl_cu12.mesonpy.libs/libnixl_capi.so 2>/dev/null | head -n 1)"
  if [ -n "$lib" ]; then
    export PDLAUNCH_TEST_NIXL_LIB="$lib"
    export PDLAUNCH_TEST_NIXL_PYTHON="$cache/nixl-venv/bin/python"
  fi
  if [ -x "$cache/mooncake-venv/bin/python" ]; then
    export PDLAUNCH_TEST_MOONCAKE_PYTHON="$cache/mooncake-venv/bin/python"
  fi
}
pdlaunch_transports
