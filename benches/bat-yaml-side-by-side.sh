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
ours_bin="$target/release/profmill"
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
cat "$capture" > /dev/null   # warm the page cache
log="$work/bat-yaml-runs.txt"
: > "$log"
uptime
for i in $(seq "$runs"); do
  /usr/bin/time -f "ours %e s %M KB" -a -o "$log" \
    "$ours_bin" perf2bolt "$bolted" -p "$capture" -o "$work/bat-ours.yaml" --profile-format=yaml 2> /dev/null
  /usr/bin/time -f "perf2bolt %e s %M KB" -a -o "$log" \
    "$theirs_bin" "$bolted" -p "$capture" -o "$work/bat-ref.yaml" --profile-format=yaml > /dev/null 2>&1
  tail -2 "$log"
  uptime
done
median() { grep "^$1 " "$log" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
rss() { grep "^$1 " "$log" | awk '{print $4}' | sort -n | tail -1; }
o=$(median ours); t=$(median perf2bolt)
echo "median wall: profmill ${o} s, perf2bolt ${t} s, ratio $(awk "BEGIN {printf \"%.1f\", $t / $o}")x"
echo "peak RSS: profmill $(rss ours) KB, perf2bolt $(rss perf2bolt) KB"
if cmp -s "$work/bat-ours.yaml" "$work/bat-ref.yaml"; then
  echo "YAML: byte-identical"
else
  echo "YAML: $(diff "$work/bat-ours.yaml" "$work/bat-ref.yaml" | grep -c '^<') of $(wc -l < "$work/bat-ref.yaml") lines differ"
fi
