#!/usr/bin/env bash
# The profile store's fleet path against perf2bolt-style files: N generated captures of one
# binary (different seeds), each aggregated to a store; then
#   merge:  `profmill merge` of the N stores vs `merge-fdata` (LLVM 22) of the same N profiles
#           as fdata (exported from each store, which equals perf2bolt's fdata; see
#           cli/tests/it/store.rs), with peak RSS;
#   fleet:  aggregate each capture to a store + merge + export fdata, vs perf2bolt on each
#           capture + merge-fdata (only for the first FLEET captures: perf2bolt is slow).
# usage: benches/store-merge.sh [N] [CAPTURE_MB] [FLEET] [WORKDIR] [BINARY]
set -euo pipefail
n=${1:-1000}
mb=${2:-1}
fleet=${3:-20}
work=${4:-/tmp/profmill-store-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
target_dir=${CARGO_TARGET_DIR:-$root/target}
binary=${5:-$target_dir/release/examples/gen_lbr}
pm="$target_dir/release/profmill"
gen="$target_dir/release/examples/gen_lbr"
mkdir -p "$work/captures" "$work/stores" "$work/fdata"
bin="$work/target"
cp "$binary" "$bin"
for i in $(seq 1 "$n"); do
  c="$work/captures/c$i.perf.data"
  [ -f "$c" ] || "$gen" "$c" "$mb" --stacks 3000 --processes 2 --seed "$i" "$bin" 2>/dev/null
  s="$work/stores/c$i.pms"
  [ -f "$s" ] || "$pm" aggregate "$c" -b "$bin" --format store -o "$s" 2>/dev/null
  f="$work/fdata/c$i.fdata"
  [ -f "$f" ] || "$pm" export "$s" -b "$bin" --format fdata -o "$f" 2>/dev/null
done
echo "inputs: $n stores ($(du -sh "$work/stores" | cut -f1)), $n fdata ($(du -sh "$work/fdata" | cut -f1))"
hyperfine --runs 3 \
  "$pm merge $work/stores -o $work/merged.pms" \
  "/usr/lib/llvm-22/bin/merge-fdata $work/fdata/*.fdata -o $work/merged.fdata"
/usr/bin/time -f "profmill merge: peak RSS %M KB, %e s" "$pm" merge "$work/stores" -o "$work/merged.pms"
/usr/bin/time -f "merge-fdata: peak RSS %M KB, %e s" /usr/lib/llvm-22/bin/merge-fdata "$work"/fdata/*.fdata -o "$work/merged.fdata"
"$pm" export "$work/merged.pms" -b "$bin" --format fdata -o "$work/exported.fdata" 2>/dev/null
if cmp -s <(sort "$work/exported.fdata") <(sort "$work/merged.fdata"); then
  echo "merged profiles agree (sorted fdata identical)"
else
  # BOLT's symbolization is not linear in the profile: perf2bolt on the summed profile (what the
  # store exports) can differ from perf2bolt per capture summed by merge-fdata (PERF.md, issue
  # 17: one line at 1,000 partials). Report the size of the difference, and go on.
  echo "merged profiles differ in $(diff <(sort "$work/exported.fdata") <(sort "$work/merged.fdata") | grep -c '^[<>]') lines"
fi
# The fleet path, end to end, on the first $fleet captures.
list=$(seq 1 "$fleet")
ours() {
  # As a fleet host does it: no binary at hand, every mapped file profiled.
  for i in $list; do "$pm" aggregate "$work/captures/c$i.perf.data" --format store -o "$work/f$i.pms" 2>/dev/null; done
  "$pm" merge $(for i in $list; do echo "$work/f$i.pms"; done) -o "$work/fleet.pms" 2>/dev/null
  "$pm" export "$work/fleet.pms" -b "$bin" --format fdata -o "$work/fleet-ours.fdata" 2>/dev/null
}
theirs() {
  for i in $list; do /usr/lib/llvm-22/bin/perf2bolt "$bin" -p "$work/captures/c$i.perf.data" -o "$work/p$i.fdata" >/dev/null 2>&1; done
  /usr/lib/llvm-22/bin/merge-fdata $(for i in $list; do echo "$work/p$i.fdata"; done) -o "$work/fleet-ref.fdata" 2>/dev/null
}
export -f ours theirs; export pm bin work list
hyperfine --runs 3 "bash -c ours" "bash -c theirs"
if cmp -s <(sort "$work/fleet-ours.fdata") <(sort "$work/fleet-ref.fdata"); then
  echo "fleet path agrees with perf2bolt + merge-fdata (sorted fdata identical)"
else
  echo "fleet path DIFFERS from perf2bolt + merge-fdata"; exit 1
fi
