#!/usr/bin/env bash
# `profmill autofdo` vs llvm-profgen (LLVM 19) and create_llvm_prof (AutoFDO 0.19) on a
# generated LBR capture of a binary with > 10 MB of code and full debug information, with peak
# RSS, and (llvm-profgen style) a check that the profiles agree.
# usage: benches/autofdo-side-by-side.sh [SIZE_MB] [WORKDIR] [BINARY] [REF_SIZE_MB]
# BINARY defaults to a debug build of profmill itself (17 MB of .text, 37 MB of .debug_info,
# DWARF 4 from rustc); the reference tools run on a REF_SIZE_MB capture (default 60) of the
# same program and stack pool, because on the full one they take many minutes.
set -euo pipefail
size=${1:-600}
work=${2:-/tmp/profmill-afdo-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
ref_size=${4:-60}
mkdir -p "$work"
if [ -z "${3:-}" ]; then
  cargo build --manifest-path "$root/Cargo.toml" -p profmill
  binary=$target/debug/profmill
else
  binary=$3
fi
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
bin="$work/subject"
cp "$binary" "$bin"
size -A "$bin" | awk '$1 == ".text" || $1 == ".debug_info" { printf "%s %.1f MB\n", $1, $2 / 1e6 }'
for n in "$size" "$ref_size"; do
  c="$work/big-$n.perf.data"
  [ -f "$c" ] || "$target/release/examples/gen_lbr" "$c" "$n" --stacks 100000 --processes 4 "$bin"
done
ours() { "$target/release/profmill" autofdo -b "$bin" -p "$1" -o "$2" --format text "${@:3}"; }
timed() { /usr/bin/time -f "$1: %e s wall, peak RSS %M KB" "${@:2}" > /dev/null 2>> "$work/times.txt"; }
: > "$work/times.txt"
# Alternated: ours on both captures, then each reference tool on the small one.
for round in 1 2 3; do
  timed "ours $size MB" ours "$work/big-$size.perf.data" "$work/ours-$size.txt"
  timed "ours --style autofdo $size MB" ours "$work/big-$size.perf.data" "$work/ours-af-$size.txt" --style autofdo
  timed "ours $ref_size MB" ours "$work/big-$ref_size.perf.data" "$work/ours-$ref_size.txt"
  timed "ours --style autofdo $ref_size MB" ours "$work/big-$ref_size.perf.data" "$work/ours-af-$ref_size.txt" --style autofdo
  if [ "$round" = 1 ]; then
    timed "llvm-profgen-19 $ref_size MB" llvm-profgen-19 --binary="$bin" --perfdata="$work/big-$ref_size.perf.data" \
      --output="$work/ref-$ref_size.txt" --format=text
    timed "create_llvm_prof $ref_size MB" create_llvm_prof --format=text --binary="$bin" \
      --profile="$work/big-$ref_size.perf.data" --out="$work/ref-cl-$ref_size.txt"
  fi
done
cat "$work/times.txt"
for f in ours-$ref_size ref-$ref_size; do
  llvm-profdata-19 merge --sample --text "$work/$f.txt" -o "$work/$f.norm.txt"
done
cmp "$work/ours-$ref_size.norm.txt" "$work/ref-$ref_size.norm.txt" && echo "llvm-profgen style: profiles equal"
