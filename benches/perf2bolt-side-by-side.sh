#!/usr/bin/env bash
# `profmill perf2bolt` vs `perf2bolt` (LLVM 22), end to end, on a generated LBR capture of a
# real binary with more than 10 MB of code, with peak RSS and a check that the fdata agree.
# usage: benches/perf2bolt-side-by-side.sh [SIZE_MB] [WORKDIR] [BINARY]
# BINARY defaults to the Rust toolchain's `cargo` (24 MB of .text, symbols kept).
set -euo pipefail
size=${1:-600}
work=${2:-/tmp/profmill-bench}
binary=${3:-$(rustc --print sysroot)/bin/cargo}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$work"
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
bin="$work/big-target"
cp "$binary" "$bin"
size -A "$bin" | awk '$1 == ".text" { printf "binary: %s, .text %.1f MB\n", "'"$binary"'", $2 / 1e6 }'
capture="$work/big-$size.perf.data"
[ -f "$capture" ] || "$target/release/examples/gen_lbr" "$capture" "$size" --stacks 100000 --processes 4 "$bin"
cat "$capture" > /dev/null   # warm the page cache
ours="$target/release/profmill perf2bolt $bin -p $capture -o $work/ours.fdata"
theirs="/usr/lib/llvm-22/bin/perf2bolt $bin -p $capture -o $work/ref.fdata"
hyperfine --warmup 1 --runs 5 --export-markdown "$work/ours-$size.md" "$ours"
hyperfine --runs 3 --export-markdown "$work/perf2bolt-$size.md" "$theirs"
/usr/bin/time -f "profmill peak RSS %M KB, %e s" $ours
/usr/bin/time -f "perf2bolt peak RSS %M KB, %e s" $theirs > /dev/null
sort "$work/ref.fdata" > "$work/ref.sorted"
sort "$work/ours.fdata" > "$work/ours.sorted"
echo "fdata: $(wc -l < "$work/ours.sorted") lines ours, $(wc -l < "$work/ref.sorted") perf2bolt;" \
  "$(comm -23 "$work/ref.sorted" "$work/ours.sorted" | wc -l) only in perf2bolt's," \
  "$(comm -13 "$work/ref.sorted" "$work/ours.sorted" | wc -l) only in ours"
