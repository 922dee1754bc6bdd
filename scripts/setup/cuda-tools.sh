#!/usr/bin/env bash
# Installs the CUDA compilers the kernel checks use, from PyPI, with no GPU and no CUDA toolkit:
# NVRTC (tools/gen_kernels.py makes the embedded cubins with it) and ptxas (a test assembles the
# embedded PTX with it). Idempotent: a second run only checks what is there.
#
# The virtual environment lives in ${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}/cuda-tools. Progress
# and the paths go to stderr; stdout carries only the `export` lines, so a caller takes them with
#     eval "$(scripts/setup/cuda-tools.sh)"
# PDLAUNCH_PTXAS      the ptxas binary
# PDLAUNCH_CUDA_PY    the environment's python, which has NVRTC (run tools/gen_kernels.py with it)
set -euo pipefail

# Pinned: the cubins in crates/pdlaunch-kv/kernels/ are what this NVRTC makes, byte for byte.
NVRTC=nvidia-cuda-nvrtc-cu12==12.9.86
NVCC=nvidia-cuda-nvcc-cu12==12.9.86

venv=${PDLAUNCH_CACHE:-$HOME/.cache/pdlaunch}/cuda-tools
py=$venv/bin/python
stamp=$venv/.installed
want="$NVRTC $NVCC"

if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "cuda-tools: installing $want into $venv" >&2
    python3=$(command -v python3 || true)
    if [[ -z $python3 ]]; then
        echo "cuda-tools: python3 is missing (Debian: apt-get install python3 python3-venv)" >&2
        exit 2
    fi
    if [[ ! -x $py ]]; then
        if ! "$python3" -m venv "$venv" >/dev/null 2>&1; then
            if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
                apt-get install -y -qq python3-venv >/dev/null
                rm -rf "$venv"
                "$python3" -m venv "$venv"
            else
                echo "cuda-tools: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2
                exit 2
            fi
        fi
    fi
    "$py" -m pip install --quiet --disable-pip-version-check --no-input $want >&2
    echo "$want" >"$stamp"
fi

site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ptxas=$site/nvidia/cuda_nvcc/bin/ptxas
nvrtc=$(ls "$site"/nvidia/cuda_nvrtc/lib/libnvrtc.so.* 2>/dev/null | grep -v builtins | head -n 1 || true)
for f in "$ptxas" "$nvrtc"; do
    if [[ -z $f || ! -e $f ]]; then
        echo "cuda-tools: ${f:-libnvrtc} is missing from $venv; remove that folder and run again" >&2
        exit 2
    fi
done
"$ptxas" --version >/dev/null
echo "cuda-tools: ptxas $ptxas" >&2
echo "cuda-tools: nvrtc $nvrtc" >&2
echo "cuda-tools: python $py" >&2
printf 'export PDLAUNCH_PTXAS=%q\nexport PDLAUNCH_CUDA_PY=%q\n' "$ptxas" "$py"
