#!/usr/bin/env bash
# KV transfer smoke test on a GPU machine, in a few minutes, building nothing there.
#
# Usage:
#   on a CPU machine (no CUDA toolkit needed; cudarc loads the driver at run time):
#       cargo build --release -p pdlaunch
#   carry target/release/pdlaunch (and this script) to the GPU machine, then:
#       scripts/gpu-smoke.sh [path/to/pdlaunch]        (default: target/release/pdlaunch)
#
# Environment:
#   OUT      folder for the results (default: ./gpu-smoke-out); everything is written there
#   TOKENS   tokens of the correctness runs (default 2048)
#   BW_TOKENS  tokens of the bandwidth runs (default 16384)
#   LIMIT    seconds each command may take (default 150)
#   BACKEND  cuda (default), or cpu to run the same steps on a machine without a GPU (a dry run of
#            this script)
#   PDLAUNCH_NIXL_LIB  libnixl_capi.so of NIXL 1.5.1 (pip install --no-deps nixl==1.5.1
#            nixl-cu12==1.5.1); without it, or with a binary built without NIXL, step 3 is skipped
#   PDLAUNCH_GPU_MOONCAKE_PYTHON  a Python with Mooncake's CUDA wheel (pip install
#            mooncake-transfer-engine==0.3.13.post1); without it, or when it cannot import
#            mooncake.engine, step 4 is skipped
#
# What it runs, each on the CUDA backend (`--backend cuda`: no GPU is exit 2, not a CPU run):
#   1. correctness with negative controls, Llama-3.1-8B geometry (32 layers, 8 KV heads x 128,
#      bf16, TP 1 -> 1), page sizes 1, 16 and 64; GQA TP 2 -> 4 (head slices); DeepSeek-V3 MLA
#      page 64;
#   2. bandwidth: the same Llama pools with BW_TOKENS tokens, page sizes 1, 16 and 64, 5 timed
#      repetitions: per-descriptor DMA and the gather kernel against one device-to-device copy
#      of the same bytes (the ratio column);
#   3. NIXL with both pools in GPU memory (VRAM_SEG), the prefill and decode agents two processes
#      on one GPU (--gpus 0; without it a machine with two GPUs puts the decode's pools on GPU 1):
#      correctness with negative controls at page 16, bandwidth at page 64;
#   4. Mooncake with both pools in GPU memory, which its Python agents allocate themselves, two
#      processes on one GPU (--gpus 0): correctness with negative controls at page 16, bandwidth
#      at page 64; and when nvidia-smi lists two or more GPUs, the decode's pools on GPU 1
#      (--gpus 0,1), correctness with negative controls at page 16.
# Every report's effective page size (both sides, and the pools laid out) must be the one asked:
# else the run did not test what its name says, and the script fails.
# The binary is started first (--version): one that cannot start stops the script at once, with
# `ldd` of it.
# Each run leaves NAME.txt (the table), NAME.err (progress, errors), NAME.json (the report) and
# its exit status in NAME.rc; summary.txt collects the engine tables and verdicts. The script
# exits with the worst status: 0 all passed, 1 a finding, 2 no usable GPU or bad input, 124 a
# command ran past LIMIT.
set -uo pipefail

BIN=${1:-${PDLAUNCH:-target/release/pdlaunch}}
OUT_DIR=${OUT:-gpu-smoke-out}
TOKENS=${TOKENS:-2048}
BW_TOKENS=${BW_TOKENS:-16384}
LIMIT=${LIMIT:-150}
BACKEND=${BACKEND:-cuda}

mkdir -p "$OUT_DIR"
if [[ ! -e "$BIN" ]]; then
    echo "gpu-smoke: no pdlaunch binary at $BIN; build it on a CPU machine with 'cargo build --release -p pdlaunch' and pass its path" >&2
    exit 2
fi
cannot_start() { # why
    echo "gpu-smoke: $BIN cannot start: $1" >&2
    echo "gpu-smoke: ldd $BIN:" >&2
    if command -v ldd >/dev/null; then ldd "$BIN" >&2 2>&1; else echo "  (ldd is not installed)" >&2; fi
    echo "gpu-smoke: build it on a machine whose glibc is no newer than this one's, and copy it with its execute bit" >&2
    exit 2
}
[[ -x "$BIN" ]] || cannot_start "it is not executable"
if ! version=$(timeout 30 "$BIN" --version 2>&1); then
    cannot_start "'$BIN --version' failed: $version"
fi
echo "$version" >"$OUT_DIR/version.txt"
{ nvidia-smi || echo "nvidia-smi not available"; } >"$OUT_DIR/nvidia-smi.txt" 2>&1

deployment() { # name page prefill_tp decode_tp attention
    local name=$1 page=$2 ptp=$3 dtp=$4 kind=$5 geometry
    if [[ $kind == mla ]]; then
        geometry="{architecture: DeepseekV3ForCausalLM, attention: mla, layers: 61, kv_lora_rank: 512, qk_rope_head_dim: 64}"
    else
        geometry="{architecture: LlamaForCausalLM, attention: gqa, layers: 32, kv_heads: 8, head_dim: 128}"
    fi
    cat >"$OUT_DIR/$name.yaml" <<EOF
name: $name
model: {path: smoke/model, dtype: bfloat16, geometry: $geometry}
shared: {page_size: $page, kv_cache_dtype: auto, transfer_backend: mooncake}
prefill: {gpu: h200, tp: $ptp, instances: [{nodes: [{host: 127.0.0.1}]}]}
decode: {gpu: h200, tp: $dtp, instances: [{nodes: [{host: 127.0.0.1}]}]}
EOF
}

# Checks that the report NAME.json ran at the page size asked, on both sides and in the pools it
# laid out. Exit 0 as asked (or no report: the run's own status tells why), 1 otherwise.
check_page() { # name page
    local json=$OUT_DIR/$1.json
    [[ -s $json ]] || return 0
    if ! command -v python3 >/dev/null; then
        echo "  page size not checked: python3 is missing"
        return 0
    fi
    python3 - "$json" "$2" <<'PY'
import json, sys

report, asked = json.load(open(sys.argv[1])), int(sys.argv[2])
seen = {}
for part in ("sides", "layout"):
    for side in ("prefill", "decode"):
        try:
            seen["%s.%s" % (part, side)] = report[part][side]["config"]["page_size"]
        except (KeyError, TypeError):
            pass
if "sides.prefill" not in seen or "sides.decode" not in seen:
    sys.exit("  page size: the report names none (asked %d)" % asked)
off = ["%s %s" % (k, v) for k, v in seen.items() if v != asked]
if off:
    sys.exit("  page size: asked %d, but the report has %s: the run did not test that page size" % (asked, ", ".join(off)))
print("  page size: %d in %s, as asked" % (asked, ", ".join(seen)))
PY
}

status=0
run() { # name page extra-args...
    local name=$1 page=$2
    shift 2
    echo "gpu-smoke: $name" >&2
    timeout "$LIMIT" "$BIN" smoke "$OUT_DIR/$name.yaml" --backend "$BACKEND" --color never --timeout $((LIMIT - 10)) \
        --json "$OUT_DIR/$name.json" "$@" >"$OUT_DIR/$name.txt" 2>"$OUT_DIR/$name.err"
    local rc=$?
    echo "$rc" >"$OUT_DIR/$name.rc"
    {
        echo "== $name (exit $rc)"
        sed -n '/^engines/,/^$/p;/^negative controls/,/^$/p;/^verdict/p' "$OUT_DIR/$name.txt"
        [[ $rc -eq 0 ]] || tail -n 5 "$OUT_DIR/$name.err"
    } >>"$OUT_DIR/summary.txt"
    ((rc > status)) && status=$rc
    if ! check_page "$name" "$page" >>"$OUT_DIR/summary.txt" 2>&1; then
        ((status < 1)) && status=1
    fi
    return 0
}

# Why the NIXL step cannot run here, if it cannot.
nixl_missing() {
    if [[ -z ${PDLAUNCH_NIXL_LIB:-} ]]; then
        echo "PDLAUNCH_NIXL_LIB is not set (the path of libnixl_capi.so from pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1)"
    elif ! "$BIN" smoke "$OUT_DIR/llama-p16.yaml" --transport nixl --gpus 0 --help >/dev/null 2>&1; then
        # The parser refuses a flag or value it lacks before it prints the help.
        echo "$BIN was built without NIXL (its smoke refuses --transport nixl), or predates --gpus"
    fi
}

: >"$OUT_DIR/summary.txt"
for page in 1 16 64; do
    deployment "llama-p$page" "$page" 1 1 gqa
    run "llama-p$page" "$page" --tokens "$TOKENS" --negative-control
done
deployment llama-tp2-tp4 16 2 4 gqa
run llama-tp2-tp4 16 --tokens "$TOKENS" --negative-control
deployment deepseek-p64 64 2 2 mla
run deepseek-p64 64 --tokens "$TOKENS" --negative-control

for page in 1 16 64; do
    cp "$OUT_DIR/llama-p$page.yaml" "$OUT_DIR/bw-p$page.yaml"
    run "bw-p$page" "$page" --tokens "$BW_TOKENS" --iterations 5
done

why=$(nixl_missing)
if [[ -n $why ]]; then
    echo "== nixl-vram: skipped: $why" >>"$OUT_DIR/summary.txt"
else
    cp "$OUT_DIR/llama-p16.yaml" "$OUT_DIR/nixl-vram-p16.yaml"
    run nixl-vram-p16 16 --transport nixl --across local --gpus 0 --tokens "$TOKENS" --negative-control
    cp "$OUT_DIR/llama-p64.yaml" "$OUT_DIR/nixl-vram-bw-p64.yaml"
    run nixl-vram-bw-p64 64 --transport nixl --across local --gpus 0 --tokens "$BW_TOKENS" --iterations 5
fi

# Why the Mooncake step cannot run here, if it cannot.
mooncake_missing() {
    local py=${PDLAUNCH_GPU_MOONCAKE_PYTHON:-}
    if [[ -z $py ]]; then
        echo "PDLAUNCH_GPU_MOONCAKE_PYTHON is not set (a Python with Mooncake's CUDA wheel: pip install mooncake-transfer-engine==0.3.13.post1)"
    elif ! timeout 60 "$py" -c "import mooncake.engine" >/dev/null 2>&1; then
        echo "$py cannot import mooncake.engine (install Mooncake's CUDA wheel there: pip install mooncake-transfer-engine==0.3.13.post1)"
    fi
}

# GPUs the driver lists (0 without nvidia-smi).
gpu_count() {
    { nvidia-smi -L 2>/dev/null || true; } | grep -c '^GPU '
}

why=$(mooncake_missing)
if [[ -n $why ]]; then
    echo "== mooncake-vram: skipped: $why" >>"$OUT_DIR/summary.txt"
else
    py=$PDLAUNCH_GPU_MOONCAKE_PYTHON
    cp "$OUT_DIR/llama-p16.yaml" "$OUT_DIR/mooncake-vram-p16.yaml"
    run mooncake-vram-p16 16 --transport mooncake --mooncake-python "$py" --across local --gpus 0 \
        --tokens "$TOKENS" --negative-control
    cp "$OUT_DIR/llama-p64.yaml" "$OUT_DIR/mooncake-vram-bw-p64.yaml"
    run mooncake-vram-bw-p64 64 --transport mooncake --mooncake-python "$py" --across local --gpus 0 \
        --tokens "$BW_TOKENS" --iterations 5
    gpus=$(gpu_count)
    if ((gpus >= 2)); then
        cp "$OUT_DIR/llama-p16.yaml" "$OUT_DIR/mooncake-vram-2gpu-p16.yaml"
        run mooncake-vram-2gpu-p16 16 --transport mooncake --mooncake-python "$py" --across local --gpus 0,1 \
            --tokens "$TOKENS" --negative-control
    else
        echo "== mooncake-vram-2gpu: skipped: nvidia-smi -L lists $gpus GPU(s), two are needed" >>"$OUT_DIR/summary.txt"
    fi
fi

cat "$OUT_DIR/summary.txt"
exit $status
