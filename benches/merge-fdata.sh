#!/usr/bin/env bash
# profmill merge-fdata against LLVM 22's merge-fdata on generated fdata files, with peak RSS.
# usage: benches/merge-fdata.sh [FILES] [LINES_PER_FILE] [DISTINCT_KEYS] [WORKDIR]
set -euo pipefail
files=${1:-500}
lines=${2:-20000}
keys=${3:-200000}
work=${4:-/tmp/profmill-bench-merge}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill-corpus --example gen_fdata
data="$work/fdata-$files-$lines-$keys"
[ -d "$data" ] || "$target/release/examples/gen_fdata" "$data" "$files" "$lines" "$keys"
cat "$data"/* > /dev/null   # warm the page cache
pm="$target/release/profmill merge-fdata $data -o $work/pm.fdata"
llvm="/usr/lib/llvm-22/bin/merge-fdata $data -o $work/llvm.fdata"
hyperfine --warmup 1 --runs 5 --export-markdown "$work/hyperfine-merge.md" "$pm" "$llvm"
/usr/bin/time -f "profmill peak RSS %M KB" $pm 2>&1 | grep RSS
/usr/bin/time -f "merge-fdata peak RSS %M KB" $llvm 2>&1 | grep RSS
if diff -q <(LC_ALL=C sort "$work/pm.fdata") <(LC_ALL=C sort "$work/llvm.fdata") > /dev/null; then
  echo "merged fdata: identical (sorted), $(wc -l < "$work/pm.fdata") lines"
else
  echo "merged fdata: DIFFERENT"; exit 1
fi
