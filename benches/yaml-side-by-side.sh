#!/usr/bin/env bash
# `profmill perf2bolt --profile-format=yaml` vs `perf2bolt --profile-format=yaml` (LLVM 22) on
# the issue-3 benchmark (the toolchain's `cargo` and its generated 629 MB capture, as
# benches/perf2bolt-side-by-side.sh makes them), runs alternated (ours, theirs, ours, …) so that
# both see the same load; prints each run, the medians, their ratio, and whether the outputs
# are byte-identical (and how many lines differ if not).
# usage: benches/yaml-side-by-side.sh [RUNS] [WORKDIR]   (RUNS pairs, default 3)
# env: BINARY, CAPTURE, TAG (output and log names) to compare on another binary and capture
#      (benches/bat-yaml-side-by-side.sh passes a BOLTed one).
set -euo pipefail
runs=${1:-3}
work=${2:-/tmp/pmbench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
ours_bin="$target/release/profmill"
theirs_bin=/usr/lib/llvm-22/bin/perf2bolt
binary=${BINARY:-$work/big-target}
capture=${CAPTURE:-$work/big-600.perf.data}
tag=${TAG:-}
[ -f "$capture" ] || "$root/benches/perf2bolt-side-by-side.sh" 600 "$work"
[ -x "$ours_bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p profmill
cat "$capture" > /dev/null   # warm the page cache
log="$work/${tag}yaml-runs.txt"
ours="$work/${tag}ours.yaml"
ref="$work/${tag}ref.yaml"
: > "$log"
uptime
for i in $(seq "$runs"); do
  /usr/bin/time -f "ours %e s %M KB" -a -o "$log" \
    "$ours_bin" perf2bolt "$binary" -p "$capture" -o "$ours" --profile-format=yaml 2> /dev/null
  /usr/bin/time -f "perf2bolt %e s %M KB" -a -o "$log" \
    "$theirs_bin" "$binary" -p "$capture" -o "$ref" --profile-format=yaml > /dev/null 2>&1
  tail -2 "$log"
  uptime
done
median() { grep "^$1 " "$log" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
rss() { grep "^$1 " "$log" | awk '{print $4}' | sort -n | tail -1; }
o=$(median ours); t=$(median perf2bolt)
echo "median wall: profmill ${o} s, perf2bolt ${t} s, ratio $(awk "BEGIN {printf \"%.1f\", $t / $o}")x"
echo "peak RSS: profmill $(rss ours) KB, perf2bolt $(rss perf2bolt) KB"
if cmp -s "$ours" "$ref"; then
  echo "YAML: byte-identical"
else
  echo "YAML: $(diff "$ours" "$ref" | grep -c '^<') of $(wc -l < "$ref") lines differ"
fi
