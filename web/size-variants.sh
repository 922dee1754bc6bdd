#!/usr/bin/env bash
# What each of the core's hand-written stand-ins for standard code saves in the app's download:
# builds the app as it is, then once per stand-in with that stand-in's body replaced by the
# standard library's, and prints each build's gzipped transfer size (web/e2e/size.mjs). The
# figures go in the stand-ins' module docs. Builds in a scratch git worktree of HEAD, so the
# checkout is never touched; each build is a full release build (minutes).
#
#   web/size-variants.sh [baseline|float|sort ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
./web/build.sh --tools-only >/dev/null
export PATH="$repo/web/e2e/node_modules/.bin:$PATH"

work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach -q "$work/tree" HEAD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"

core="$work/tree/crates/pdlaunch-core/src"
variant() {
  git -C "$work/tree" checkout -q -- .
  case "$1" in
    baseline) ;;
    # `str::parse::<f64>` in place of float.rs's parser (which stays, unused).
    float)
      perl -0pi -e 's/pub fn parse\(/pub fn parse(text: &str) -> Option<f64> {\n    text.parse().ok()\n}\n\n#[allow(dead_code)]\nfn hand_parse(/' "$core/float.rs"
      ;;
    # The standard stable sorts in place of sort.rs's one merge sort.
    sort)
      perl -0pi -e 's/pub fn sort_by<T>\(/pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl FnMut(&T, &T) -> Ordering) {\n    v.sort_by(cmp)\n}\n\n#[allow(dead_code)]\nfn hand_sort_by<T>(/; s/pub fn sort_by_key<T, K: Ord>\(v: &mut Vec<T>, mut key: impl FnMut\(&T\) -> K\) \{\n    sort_by\(v, \|a, b\| key\(a\).cmp\(&key\(b\)\)\);/pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, key: impl FnMut(&T) -> K) {\n    v.sort_by_key(key);/; s/pub fn sort<T: Ord>\(v: &mut Vec<T>\) \{\n    sort_by\(v, T::cmp\);/pub fn sort<T: Ord>(v: &mut Vec<T>) {\n    v.sort();/' "$core/sort.rs"
      ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
  git -C "$work/tree" diff --stat | tail -1
  (cd "$work/tree" && trunk build --release --offline --dist "$work/dist-$1" >/dev/null 2>&1) \
    || { echo "$1: the build failed" >&2; exit 1; }
  # size.mjs fails a build over the budget; here every size is a figure to print.
  { DIST="$work/dist-$1" node "$repo/web/e2e/size.mjs" || true; } | sed "s/^/$1: /" | grep -E 'total|wasm'
}

for v in "${@:-baseline float sort}"; do
  for one in $v; do variant "$one"; done
done
