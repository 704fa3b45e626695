#!/usr/bin/env bash
# Whole-command comparison against perf2bolt (LLVM 22) on one generated capture, with peak RSS.
# usage: benches/side-by-side.sh [SIZE_MB] [WORKDIR]
set -euo pipefail
size=${1:-600}
work=${2:-/tmp/profmill-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$work"
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
bin="$work/pm-target"
cp "$target/release/profmill" "$bin"    # a real 16 MB binary to profile
"$target/release/examples/gen_lbr" "$work/lbr-$size.perf.data" "$size" --stacks 100000 --processes 4 "$bin"
cat "$work/lbr-$size.perf.data" > /dev/null   # warm the page cache
hyperfine --warmup 1 --runs 3 --export-markdown "$work/hyperfine-$size.md" \
  "$target/release/profmill aggregate $work/lbr-$size.perf.data -b $bin -o $work/pm.preagg" \
  "/usr/lib/llvm-22/bin/perf2bolt $bin -p $work/lbr-$size.perf.data -o $work/ref.fdata"
/usr/bin/time -f "profmill peak RSS %M KB" "$target/release/profmill" aggregate "$work/lbr-$size.perf.data" -b "$bin" -o "$work/pm.preagg"
/usr/bin/time -f "perf2bolt peak RSS %M KB" /usr/lib/llvm-22/bin/perf2bolt "$bin" -p "$work/lbr-$size.perf.data" -o "$work/ref.fdata" > /dev/null
/usr/lib/llvm-22/bin/perf2bolt "$bin" -p "$work/pm.preagg" --pa -o "$work/ours.fdata" > /dev/null
if diff -q <(sort "$work/ref.fdata") <(sort "$work/ours.fdata") > /dev/null; then echo "fdata: identical (sorted)"; else echo "fdata: DIFFERENT"; exit 1; fi
