#!/usr/bin/env bash
# Times the whole `pdlaunch check` process (start-up included) on the DeepSeek example and prints
# the minimum, median and maximum wall time over N runs. Usage: scripts/bench-check.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
cargo build --release -p pdlaunch --locked >/dev/null 2>&1
bin=target/release/pdlaunch
file=examples/deepseek-v3-dp-deepep.yaml
"$bin" check "$file" >/dev/null   # warm the page cache
times=()
for _ in $(seq "$n"); do
  start=$(date +%s%N)
  "$bin" check "$file" >/dev/null
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000 )))
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
min=$(echo "$sorted" | head -1)
max=$(echo "$sorted" | tail -1)
med=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
printf 'pdlaunch check %s, %d runs: min %s ms, median %s ms, max %s ms (goal: 10 ms)\n' \
  "$file" "$n" "$(ms "$min")" "$(ms "$med")" "$(ms "$max")"
