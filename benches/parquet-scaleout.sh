#!/usr/bin/env bash
# The Parquet interchange and the Spark merge against `profmill merge`: N generated captures of
# one binary (different seeds), each aggregated to a store and exported as Parquet; then
#   sizes:  bytes per record of one partial and of the merged profile as store, Parquet and
#           pre-aggregated text;
#   merge:  `profmill merge` of the N stores vs `spark-submit --master local[2]
#           scaleout/merge_profiles.py` of the N Parquet files + `profmill import` (wall, peak
#           RSS), and the two stores compared byte for byte.
# usage: benches/parquet-scaleout.sh [N] [CAPTURE_MB] [WORKDIR] [PYTHON]
# PYTHON: a Python with pyspark (default: $PROFMILL_PYTHON, else python3); spark-submit beside it.
set -euo pipefail
n=${1:-1000}
mb=${2:-1}
work=${3:-/tmp/profmill-parquet-bench}
python=${4:-${PROFMILL_PYTHON:-python3}}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill
cargo build --release --manifest-path "$root/Cargo.toml" -p profmill-corpus --example gen_lbr
target_dir=${CARGO_TARGET_DIR:-$root/target}
pm="$target_dir/release/profmill"
gen="$target_dir/release/examples/gen_lbr"
submit="$(dirname "$python")/spark-submit"
[ -x "$submit" ] || submit=spark-submit
mkdir -p "$work/captures" "$work/stores" "$work/parquet"
bin="$work/target"
cp "$gen" "$bin"
for i in $(seq 1 "$n"); do
  c="$work/captures/c$i.perf.data"
  s="$work/stores/c$i.pms"
  p="$work/parquet/c$i.parquet"
  [ -f "$s" ] || {
    "$gen" "$c" "$mb" --stacks 3000 --processes 2 --seed "$i" "$bin" 2>/dev/null
    "$pm" aggregate "$c" -b "$bin" --format store -o "$s" 2>/dev/null
    rm -f "$c"
  }
  [ -f "$p" ] || "$pm" export "$s" --format parquet -o "$p" 2>/dev/null
done
echo "inputs: $n stores ($(du -sh "$work/stores" | cut -f1)), $n Parquet files ($(du -sh "$work/parquet" | cut -f1))"

# Bytes per record: rows of the store's tables (`show --json`), against each form's size.
per_record() {
  local store=$1 parquet=$2 preagg=$3
  local rows
  rows=$("$pm" show "$store" --json | grep -o '"rows":[0-9]*' | cut -d: -f2 | paste -sd+ | bc)
  printf '%s records: store %.2f B/record, Parquet %.2f, preagg text %.2f\n' "$rows" \
    "$(echo "$(stat -c %s "$store") / $rows" | bc -l)" \
    "$(echo "$(stat -c %s "$parquet") / $rows" | bc -l)" \
    "$(echo "$(stat -c %s "$preagg") / $rows" | bc -l)"
}
"$pm" export "$work/stores/c1.pms" -b "$bin" -o "$work/c1.preagg" 2>/dev/null
echo -n "one partial: "; per_record "$work/stores/c1.pms" "$work/parquet/c1.parquet" "$work/c1.preagg"

/usr/bin/time -f "profmill merge: %e s, peak RSS %M KB" \
  "$pm" merge "$work/stores" -o "$work/merged.pms" 2>&1 | grep -v '^profmill:'
"$pm" export "$work/merged.pms" --format parquet -o "$work/merged.parquet" 2>/dev/null
"$pm" export "$work/merged.pms" -b "$bin" -o "$work/merged.preagg" 2>/dev/null
echo -n "merged: "; per_record "$work/merged.pms" "$work/merged.parquet" "$work/merged.preagg"

rm -rf "$work/spark"
start=$(date +%s.%N)
/usr/bin/time -f "spark-submit local[2]: %e s, peak RSS %M KB (the driver JVM, executors inside it)" \
  env PYSPARK_PYTHON="$python" "$submit" --master 'local[2]' --conf spark.ui.enabled=false \
  --conf spark.sql.shuffle.partitions=4 "$root/scaleout/merge_profiles.py" \
  --input "$work/parquet" --output "$work/spark" 2>&1 | grep -v ' INFO \| WARN ' | grep 'spark-submit' || true
/usr/bin/time -f "profmill import: %e s, peak RSS %M KB" \
  "$pm" import "$work/spark" -o "$work/spark.pms" 2>&1 | grep -v '^profmill:'
end=$(date +%s.%N)
printf 'Spark end to end (merge + import): %.1f s\n' "$(echo "$end - $start" | bc -l)"
echo "Spark output: $(du -sh "$work/spark" | cut -f1)"
if cmp -s "$work/spark.pms" "$work/merged.pms"; then
  echo "Spark's merge, imported, equals profmill merge byte for byte"
else
  echo "Spark's merge DIFFERS from profmill merge"; exit 1
fi
