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
#
# What it runs, each on the CUDA backend (`--backend cuda`: no GPU is exit 2, not a CPU run):
#   1. correctness with negative controls, Llama-3.1-8B geometry (32 layers, 8 KV heads x 128,
#      bf16, TP 1 -> 1), page sizes 1, 16 and 64; GQA TP 2 -> 4 (head slices); DeepSeek-V3 MLA
#      page 64;
#   2. bandwidth: the same Llama pools with BW_TOKENS tokens, page sizes 1, 16 and 64, 5 timed
#      repetitions: per-descriptor DMA and the gather kernel against one device-to-device copy
#      of the same bytes (the ratio column).
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

mkdir -p "$OUT_DIR"
if [[ ! -x "$BIN" ]]; then
    echo "gpu-smoke: no pdlaunch binary at $BIN; build it on a CPU machine with 'cargo build --release -p pdlaunch' and pass its path" >&2
    exit 2
fi
{ nvidia-smi || echo "nvidia-smi not available"; } >"$OUT_DIR/nvidia-smi.txt" 2>&1
"$BIN" --version >"$OUT_DIR/version.txt" 2>&1

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

status=0
run() { # name extra-args...
    local name=$1
    shift
    echo "gpu-smoke: $name" >&2
    timeout "$LIMIT" "$BIN" smoke "$OUT_DIR/$name.yaml" --backend cuda --color never --timeout $((LIMIT - 10)) \
        --json "$OUT_DIR/$name.json" "$@" >"$OUT_DIR/$name.txt" 2>"$OUT_DIR/$name.err"
    local rc=$?
    echo "$rc" >"$OUT_DIR/$name.rc"
    {
        echo "== $name (exit $rc)"
        sed -n '/^engines/,/^$/p;/^negative controls/,/^$/p;/^verdict/p' "$OUT_DIR/$name.txt"
        [[ $rc -eq 0 ]] || tail -n 5 "$OUT_DIR/$name.err"
    } >>"$OUT_DIR/summary.txt"
    ((rc > status)) && status=$rc
    return 0
}

: >"$OUT_DIR/summary.txt"
for page in 1 16 64; do
    deployment "llama-p$page" "$page" 1 1 gqa
    run "llama-p$page" --tokens "$TOKENS" --negative-control
done
deployment llama-tp2-tp4 16 2 4 gqa
run llama-tp2-tp4 --tokens "$TOKENS" --negative-control
deployment deepseek-p64 64 2 2 mla
run deepseek-p64 --tokens "$TOKENS" --negative-control

for page in 1 16 64; do
    cp "$OUT_DIR/llama-p$page.yaml" "$OUT_DIR/bw-p$page.yaml"
    run "bw-p$page" --tokens "$BW_TOKENS" --iterations 5
done

cat "$OUT_DIR/summary.txt"
exit $status
