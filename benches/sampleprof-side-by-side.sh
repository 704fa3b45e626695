#!/usr/bin/env bash
# Sample profiles: text → ExtBinary → text, profmill vs llvm-profdata-19, on one generated
# text profile (corpus::sampleprof), with peak RSS; then the GCOV v3 / v4 / v4-compact size table.
# usage: benches/sampleprof-side-by-side.sh [SIZE_MB] [WORKDIR]
set -euo pipefail
size=${1:-110}
work=${2:-/tmp/profmill-sampleprof-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
llvm=/usr/lib/llvm-19/bin/llvm-profdata
mkdir -p "$work"
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill-corpus --example gen_sampleprof
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill-benches --example v4_sizes
pm="$target/release/profmill"
in="$work/gen-$size.txt"
[ -f "$in" ] || "$target/release/examples/gen_sampleprof" "$in" "$size" 1
cat "$in" > /dev/null   # warm the page cache
"$llvm" merge --sample --extbinary "$in" -o "$work/ref.extbin"
hyperfine --warmup 1 --runs 7 --export-markdown "$work/to-extbinary.md" --export-json "$work/to-extbinary.json" \
  "$pm convert $in --to extbinary -o $work/pm.extbin" \
  "$llvm merge --sample --extbinary $in -o $work/ref.extbin"
hyperfine --warmup 1 --runs 7 --export-markdown "$work/to-text.md" --export-json "$work/to-text.json" \
  "$pm convert $work/ref.extbin --to text -o $work/pm.txt" \
  "$llvm merge --sample --text $work/ref.extbin -o $work/ref.txt"
# Medians (the machine may be shared: the mean suffers more from other jobs).
for j in "$work/to-extbinary.json" "$work/to-text.json"; do
  python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))["results"]
for x in r: print("median %.3f s  %s" % (x["median"], x["command"]))
print("ratio of medians: %.2fx" % (r[1]["median"] / r[0]["median"]))' "$j"
done
for cmd in "$pm convert $in --to extbinary -o $work/pm.extbin" \
           "$llvm merge --sample --extbinary $in -o $work/ref.extbin" \
           "$pm convert $work/ref.extbin --to text -o $work/pm.txt" \
           "$llvm merge --sample --text $work/ref.extbin -o $work/ref.txt"; do
  /usr/bin/time -f "%M KB peak RSS, %e s: $cmd" $cmd
done
cmp "$work/pm.extbin" "$work/ref.extbin" && echo "ExtBinary: identical"
cmp "$work/pm.txt" "$work/ref.txt" && echo "text: identical"
# Size table: every sample profile of the shared corpus gcov can hold, plus a generated one.
"$target/release/examples/gen_sampleprof" "$work/gen-8.txt" 8 7
corpus="$root/../shared/corpus/llvm-profdata"
"$target/release/examples/v4_sizes" $(find "$corpus" -type f | sort) "$work/gen-8.txt" 2>/dev/null
