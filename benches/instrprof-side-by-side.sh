#!/usr/bin/env bash
# `profmill llvm-profdata merge` against llvm-profdata-19 on COUNT generated raw profiles of one
# program (FUNCTIONS functions each, ~2 MB for 20,000), with peak RSS and a byte comparison.
# usage: benches/instrprof-side-by-side.sh [COUNT] [FUNCTIONS] [WORKDIR]
set -euo pipefail
count=${1:-200}
functions=${2:-20000}
work=${3:-/tmp/profmill-instrprof-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
llvm=/usr/lib/llvm-19/bin/llvm-profdata
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill-corpus --example gen_profraw
rm -rf "$work/in" && mkdir -p "$work"
"$target/release/examples/gen_profraw" "$work/in" "$count" "$functions"
du -sh "$work/in"
cat "$work"/in/* > /dev/null   # warm the page cache
hyperfine -N --warmup 1 --runs 5 --export-markdown "$work/hyperfine.md" \
  "$llvm merge $work/in -o $work/ref.profdata" \
  "$target/release/profmill llvm-profdata merge $work/in -o $work/ours.profdata"
/usr/bin/time -f "llvm-profdata peak RSS %M KB" "$llvm" merge "$work/in" -o "$work/ref.profdata"
/usr/bin/time -f "profmill peak RSS %M KB" "$target/release/profmill" llvm-profdata merge "$work/in" -o "$work/ours.profdata"
cmp "$work/ref.profdata" "$work/ours.profdata" && echo "outputs: byte-identical"
