#!/usr/bin/env bash
# The profile store's fleet path against perf2bolt-style files: N generated captures of one
# binary (different seeds), each aggregated to a store; then
#   merge:  `profmill merge` of the N stores vs `merge-fdata` (LLVM 22) of the same N profiles
#           as fdata (exported from each store, which equals perf2bolt's fdata; see
#           cli/tests/it/store.rs), with peak RSS;
#   fleet:  aggregate each capture to a store + merge + export fdata, vs perf2bolt on each
#           capture + merge-fdata (only for the first FLEET captures: perf2bolt is slow).
# Each is timed in ROUNDS (default 5) alternated rounds; medians and ratios are printed.
# BASE=/path/to/profmill also times another build's merge (and compares its output bytes).
# PROFMILL=/path/to/profmill uses that build instead of building this tree.
# usage: benches/store-merge.sh [N] [CAPTURE_MB] [FLEET] [WORKDIR] [BINARY]
set -euo pipefail
n=${1:-1000}
mb=${2:-1}
fleet=${3:-20}
work=${4:-/tmp/profmill-store-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
# PROFMILL=path/to/profmill times that build without building (the inputs must exist then).
if [ -z "${PROFMILL:-}" ]; then
  cargo build --release --manifest-path "$root/Cargo.toml" -p profmill -p profmill-corpus --example gen_lbr
fi
binary=${5:-$target_dir/release/examples/gen_lbr}
pm=${PROFMILL:-$target_dir/release/profmill}
gen="$target_dir/release/examples/gen_lbr"
mkdir -p "$work/captures" "$work/stores" "$work/fdata"
bin="$work/target"
# The profiled binary: copied once; the captures in WORKDIR were made of it, so a rebuilt
# generator (the default BINARY) must not replace it. Another binary needs another WORKDIR.
if [ ! -f "$bin" ]; then
  cp "$binary" "$bin"
elif [ -n "${5:-}" ] && ! cmp -s "$binary" "$bin"; then
  echo "store-merge.sh: $work holds captures of another binary than $binary; use another WORKDIR" >&2
  exit 1
fi
for i in $(seq 1 "$n"); do
  c="$work/captures/c$i.perf.data"
  [ -f "$c" ] || "$gen" "$c" "$mb" --stacks 3000 --processes 2 --seed "$i" "$bin" 2>/dev/null
  s="$work/stores/c$i.pms"
  [ -f "$s" ] || "$pm" aggregate "$c" -b "$bin" --format store -o "$s" 2>/dev/null
  f="$work/fdata/c$i.fdata"
  [ -f "$f" ] || "$pm" export "$s" -b "$bin" --format fdata -o "$f" 2>/dev/null
done
echo "inputs: $n stores ($(du -sh "$work/stores" | cut -f1)), $n fdata ($(du -sh "$work/fdata" | cut -f1))"
# Alternated rounds (ours, theirs, ours, ...), so that a busy host slows both alike; medians and
# their ratio printed at the end. BASE=path/to/another/profmill adds that build to each round.
# Each timed command starts PAUSE seconds (default 5) after the previous one ended, so that none
# pays for the previous one's teardown: merge-fdata frees 1.1 GB as it exits, and a merge
# started at once sometimes took 0.85-1.01 s instead of 0.60-0.66 s (PERF.md, tenth session).
rounds=${ROUNDS:-5}
pause=${PAUSE:-5}
base=${BASE:-}
echo "host: $(nproc) cores, $(uptime)"
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
timed() { # label, command...: appends "wall peak-RSS CPU" to $work/t-label
  local label=$1; shift
  sleep "$pause"
  /usr/bin/time -f "%e %M %U %S" -o "$work/t-one" "$@" >/dev/null 2>&1
  awk '{print $1, $2, $3 + $4}' "$work/t-one" >> "$work/t-$label"
}
rm -f "$work"/t-*
# With BASE, the two builds take turns at running first in a round, right after the previous
# round's merge-fdata (the slot that pays for the memory it freed).
for r in $(seq 1 "$rounds"); do
  if [ -n "$base" ] && [ $((r % 2)) = 0 ]; then
    timed base "$base" merge "$work/stores" -o "$work/merged-base.pms"
    timed ours "$pm" merge "$work/stores" -o "$work/merged.pms"
  else
    timed ours "$pm" merge "$work/stores" -o "$work/merged.pms"
    [ -z "$base" ] || timed base "$base" merge "$work/stores" -o "$work/merged-base.pms"
  fi
  timed theirs /usr/lib/llvm-22/bin/merge-fdata "$work"/fdata/*.fdata -o "$work/merged.fdata"
done
summary() { # label: median wall, median peak RSS, median CPU (user + system)
  echo "$(cut -d' ' -f1 "$work/t-$1" | median) $(cut -d' ' -f2 "$work/t-$1" | median) $(cut -d' ' -f3 "$work/t-$1" | median)"
}
read -r ours_s ours_kb ours_cpu < <(summary ours)
read -r theirs_s theirs_kb theirs_cpu < <(summary theirs)
echo "merge of $n: profmill $(tr '\n' ' ' < <(cut -d' ' -f1 "$work/t-ours")) s (median $ours_s s, CPU $ours_cpu s, peak RSS $((ours_kb / 1024)) MB)"
echo "merge of $n: merge-fdata $(tr '\n' ' ' < <(cut -d' ' -f1 "$work/t-theirs")) s (median $theirs_s s, CPU $theirs_cpu s, peak RSS $((theirs_kb / 1024)) MB)"
if [ -n "$base" ]; then
  read -r base_s base_kb base_cpu < <(summary base)
  echo "merge of $n: base build $(tr '\n' ' ' < <(cut -d' ' -f1 "$work/t-base")) s (median $base_s s, CPU $base_cpu s, peak RSS $((base_kb / 1024)) MB)"
  cmp "$work/merged.pms" "$work/merged-base.pms" && echo "base and this build merge to identical bytes"
fi
echo "MERGE RATIO (median merge-fdata / median profmill merge): $(echo "$theirs_s / $ours_s" | bc -l | cut -c1-5)x (target 20x)"
echo "merge CPU ratio (merge-fdata's CPU / ours; steadier on a busy host, but not the target): $(echo "$theirs_cpu / $ours_cpu" | bc -l | cut -c1-5)x"
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
ours() { # [profmill] [output suffix]
  local pm=${1:-$pm} tag=${2:-}
  # As a fleet host does it: no binary at hand, every mapped file profiled.
  for i in $list; do "$pm" aggregate "$work/captures/c$i.perf.data" --format store -o "$work/f$i$tag.pms" 2>/dev/null; done
  "$pm" merge $(for i in $list; do echo "$work/f$i$tag.pms"; done) -o "$work/fleet$tag.pms" 2>/dev/null
  "$pm" export "$work/fleet$tag.pms" -b "$bin" --format fdata -o "$work/fleet-ours$tag.fdata" 2>/dev/null
}
theirs() {
  for i in $list; do /usr/lib/llvm-22/bin/perf2bolt "$bin" -p "$work/captures/c$i.perf.data" -o "$work/p$i.fdata" >/dev/null 2>&1; done
  /usr/lib/llvm-22/bin/merge-fdata $(for i in $list; do echo "$work/p$i.fdata"; done) -o "$work/fleet-ref.fdata" 2>/dev/null
}
now() { date +%s.%N; }
timed_fleet() { # label, then the command
  local label=$1 t0 t1; shift
  t0=$(now); "$@"; t1=$(now)
  echo "$t1 - $t0" | bc -l >> "$work/t-fleet-$label"
}
# Whichever runs right after perf2bolt and merge-fdata pays for the memory they freed (fresh
# pages; PERF.md, twelfth session): with BASE, this build and the base take turns at that place.
for r in $(seq 1 "$rounds"); do
  if [ -n "$base" ] && [ $((r % 2)) = 0 ]; then
    timed_fleet base ours "$base" -base; timed_fleet theirs theirs; timed_fleet ours ours
  else
    timed_fleet ours ours; timed_fleet theirs theirs
    [ -z "$base" ] || timed_fleet base ours "$base" -base
  fi
done
fo=$(median < "$work/t-fleet-ours")
ft=$(median < "$work/t-fleet-theirs")
echo "fleet of $fleet: ours $(tr '\n' ' ' < <(cut -c1-6 "$work/t-fleet-ours")) s (median $fo s)"
echo "fleet of $fleet: perf2bolt + merge-fdata $(tr '\n' ' ' < <(cut -c1-6 "$work/t-fleet-theirs")) s (median $ft s)"
[ -z "$base" ] || echo "fleet of $fleet: base build $(tr '\n' ' ' < <(cut -c1-6 "$work/t-fleet-base")) s (median $(median < "$work/t-fleet-base") s)"
echo "FLEET RATIO (median theirs / median ours): $(echo "$ft / $fo" | bc -l | cut -c1-5)x (target 30x)"
echo "host after: $(uptime)"
# Exactness: the fleet path gives perf2bolt's fdata of the summed profile (perf2bolt --pa on the
# merged store's pre-aggregated export), byte for byte after sorting.
"$pm" export "$work/fleet.pms" -b "$bin" --format preagg -o "$work/fleet.preagg" 2>/dev/null
/usr/lib/llvm-22/bin/perf2bolt "$bin" --pa -p "$work/fleet.preagg" -o "$work/fleet-pa.fdata" >/dev/null 2>&1
if cmp -s <(sort "$work/fleet-ours.fdata") <(sort "$work/fleet-pa.fdata"); then
  echo "fleet path equals perf2bolt 22 on the summed profile (sorted fdata identical)"
else
  echo "fleet path DIFFERS from perf2bolt 22 on the summed profile"; exit 1
fi
# perf2bolt per capture summed by merge-fdata can differ from perf2bolt on the sum (BOLT's
# symbolization is not linear in the profile: PERF.md, issue 17); report, do not fail.
if cmp -s <(sort "$work/fleet-ours.fdata") <(sort "$work/fleet-ref.fdata"); then
  echo "fleet path agrees with perf2bolt + merge-fdata (sorted fdata identical)"
else
  echo "fleet path and perf2bolt per capture + merge-fdata differ in $(diff <(sort "$work/fleet-ours.fdata") <(sort "$work/fleet-ref.fdata") | grep -c '^[<>]') lines (perf2bolt is not linear in the profile)"
fi
