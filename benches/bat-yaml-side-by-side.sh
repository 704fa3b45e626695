#!/usr/bin/env bash
# `profmill perf2bolt --profile-format=yaml` vs `perf2bolt --profile-format=yaml` (LLVM 22) on a
# BOLTed binary with BAT: the issue-3 benchmark's `cargo` (benches/perf2bolt-side-by-side.sh
# makes it and its 629 MB capture), BOLTed by llvm-bolt 22 with `--enable-bat
# --reorder-blocks=ext-tsp --split-functions --split-all-cold` from perf2bolt's own profile of
# that capture (about 160 s and 4 GB once), and a 629 MB generated capture of the BOLTed binary.
# Runs alternate (ours, theirs, ours, …) so that both see the same load; prints each run, the
# medians, their ratio, and whether the outputs are byte-identical (how many lines differ if not).
# usage: benches/bat-yaml-side-by-side.sh [RUNS] [WORKDIR]   (RUNS pairs, default 3)
set -euo pipefail
runs=${1:-3}
work=${2:-/tmp/pmbench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
theirs_bin=/usr/lib/llvm-22/bin/perf2bolt
binary="$work/big-target"
bolted="$work/big-target.bolt"
capture="$work/bolt-600.perf.data"
[ -f "$work/big-600.perf.data" ] || "$root/benches/perf2bolt-side-by-side.sh" 600 "$work"
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
if [ ! -f "$bolted" ]; then
  [ -f "$work/base.fdata" ] || "$theirs_bin" "$binary" -p "$work/big-600.perf.data" -o "$work/base.fdata"
  /usr/lib/llvm-22/bin/llvm-bolt "$binary" -o "$bolted" --data "$work/base.fdata" --enable-bat \
    --reorder-blocks=ext-tsp --split-functions --split-all-cold
fi
[ -f "$capture" ] || "$target/release/examples/gen_lbr" "$capture" 600 --stacks 100000 --processes 4 "$bolted"
# The runs themselves: the plain script on the BOLTed binary and its capture.
BINARY="$bolted" CAPTURE="$capture" TAG=bat- exec "$root/benches/yaml-side-by-side.sh" "$runs" "$work"
