#!/usr/bin/env bash
# Alternated runs of two `profmill autofdo` builds (and optionally the reference tools) on
# one capture: wall time and peak RSS of each run, then medians and ratios. For a shared
# host: the runs interleave, so load changes hit both builds alike.
# usage: benches/autofdo-alternate.sh BASE_PROFMILL NEW_PROFMILL BINARY CAPTURE [ROUNDS] [WORKDIR]
# With REFS=1 in the environment, llvm-profgen 19 and create_llvm_prof also run once each,
# in the first round (they take minutes on a large capture). STYLE=autofdo in the environment
# runs both builds with `--style autofdo` (create_llvm_prof's conversion).
set -euo pipefail
base=$1 new=$2 bin=$3 capture=$4 rounds=${5:-3} work=${6:-/tmp/profmill-afdo-alt}
mkdir -p "$work"
times="$work/times.tsv"
: > "$times"
run() { # NAME CMD...
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/$name.err"
  read -r wall kb < "$work/t"
  printf '%s\t%s\t%s\n' "$name" "$wall" "$kb" | tee -a "$times"
}
echo "load before: $(uptime)"
for round in $(seq "$rounds"); do
  for which in base new; do
    exe=$base
    [ "$which" = new ] && exe=$new
    run "$which" "$exe" autofdo -b "$bin" -p "$capture" -o "$work/$which.txt" --format text \
      ${STYLE:+--style "$STYLE"}
  done
  if [ "${REFS:-0}" = 1 ] && [ "$round" = 1 ]; then
    run llvm-profgen llvm-profgen-19 --binary="$bin" --perfdata="$capture" \
      --output="$work/llvm-profgen.txt" --format=text
    run create_llvm_prof create_llvm_prof --format=text --binary="$bin" \
      --profile="$capture" --out="$work/create_llvm_prof.txt"
  fi
done
echo "load after: $(uptime)"
cmp -s "$work/base.txt" "$work/new.txt" && echo "base and new profiles: byte-identical" \
  || echo "base and new profiles DIFFER"
awk -F'\t' '
  { wall[$1] = wall[$1] " " $2; rss[$1] = rss[$1] " " $3 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (k in wall) { w[k] = median(wall[k]); r[k] = median(rss[k]) / 1024
      printf "%-16s median wall %8.2f s   median peak RSS %7.0f MB   (runs:%s)\n", k, w[k], r[k], wall[k] }
    if (w["base"] > 0) printf "new / base: wall %.2f, peak RSS %.2f\n", w["new"] / w["base"], r["new"] / r["base"]
    for (k in w) if (k != "base" && k != "new") printf "%s / new: wall %.1fx, peak RSS %.2fx\n", k, w[k] / w["new"], r[k] / r["new"]
  }' "$times"
