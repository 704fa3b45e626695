#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (one after the other: the machine's cores are
# shared), on the stable toolchain without sanitizers, from a seed corpus of
#   * the committed seeds and past crash inputs (fuzz/seeds/<target>),
#   * the real captures and profiles of ../shared/corpus that fit the target,
#   * inputs our generators make (corpus/examples: LBR captures of a small binary, in file
#     and pipe mode, with memory samples and zstd; fdata; raw, indexed and sample profiles;
#     pre-aggregated text written by `profmill aggregate` from a generated capture).
# Crash inputs land in fuzz/artifacts/<target>/; copy each into fuzz/seeds/<target>/ so that
# the normal tests replay it (formats/tests/it/fuzz_seeds.rs, engine/tests/it/fuzz_seeds.rs).
# A target that finds something does not stop the others: the script names the targets that
# failed at the end, and exits 1. libFuzzer's `-timeout` counts wall time, so a run that was
# paused or starved of CPU reports timeouts that are not; replay the artifact alone
# (`cargo fuzz run --sanitizer none TARGET ARTIFACT`) before calling it a finding.
#
# usage: fuzz/run.sh SECONDS [TARGET...]     (default: every target)
# env:   FUZZ_MAX_LEN (default 65536), FUZZ_WORK (working corpus, default fuzz/corpus)
set -euo pipefail
seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=$(cd "$root/../shared" 2>/dev/null && pwd || true)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
work=${FUZZ_WORK:-$here/corpus}
gen=$work/generated
mkdir -p "$gen"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd "$here" && cargo fuzz list)
fi

binary=$shared/corpus/perf/autofdo-propeller_sample_1.bin
# Debug builds: they only make a few small seeds.
profmill=$CARGO_TARGET_DIR/debug/profmill
examples=$CARGO_TARGET_DIR/debug/examples

generate() {
    [ -f "$gen/.done" ] && return
    echo "run.sh: generating seeds into $gen" >&2
    (cd "$root" && cargo build -q -p profmill && cargo build -q -p profmill-corpus --examples)
    local i=0
    for opts in "" "--compress" "--mem-loads 3" "--depth 4 --processes 1" "--attr-size 112 --kernel 40"; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        "$examples/gen_lbr" "$gen/lbr$i.perf.data" 0.02 --stacks 40 --seed $i $opts "$binary" >/dev/null
        if command -v perf >/dev/null; then
            perf inject -i "$gen/lbr$i.perf.data" -o - > "$gen/lbr$i.pipe.perf.data" 2>/dev/null \
                || rm -f "$gen/lbr$i.pipe.perf.data"
        fi
        for format in preagg preagg-legacy; do
            "$profmill" aggregate "$gen/lbr$i.perf.data" -b "$binary" --format $format \
                -o "$gen/lbr$i.$format" 2>/dev/null || true
        done
        "$profmill" aggregate "$gen/lbr$i.perf.data" -b "$binary" --basic \
            -o "$gen/lbr$i.basic.preagg" 2>/dev/null || true
        "$profmill" aggregate "$gen/lbr$i.perf.data" -b "$binary" --format fdata \
            -o "$gen/lbr$i.fdata" 2>/dev/null || true
    done
    # Sample profiles in every encoding `convert` writes, from the shared text profiles.
    for text in "$shared"/corpus/llvm-profdata/*/sample-profile.proftext; do
        i=$((i + 1))
        for to in binary extbinary gcov gcov-v1 gcov-v2 gcov-v3 gcov-v4 gcov-v4-compact gcov-v4-text; do
            "$profmill" convert "$text" --to $to -o "$gen/sample.$to.$i" 2>/dev/null || true
        done
    done
    touch "$gen/.done"
}

# Seeds for one target: committed ones, then shared and generated inputs that fit it.
seed_dirs() {
    local target=$1 dir=$work/$target
    mkdir -p "$dir"
    [ -d "$here/seeds/$target" ] && cp -n "$here/seeds/$target"/* "$dir/" 2>/dev/null || true
    local -a files=()
    case $target in
        capture_file | perf_data)
            files=("$gen"/lbr?.perf.data)
            for f in "$shared"/corpus/perf/*.perf.data; do
                [ "$(stat -c %s "$f")" -le 65536 ] && files+=("$f")
            done ;;
        capture_pipe)
            files=("$gen"/lbr?.pipe.perf.data "$shared"/corpus/perf/*pipe*.perf.data) ;;
        preagg_fdata | preagg)
            files=("$gen"/*.preagg "$gen"/*.preagg-legacy) ;;
        fdata) files=("$gen"/*.fdata) ;;
        instrprof_raw) files=("$shared"/corpus/llvm-profdata/*/*.profraw) ;;
        instrprof_indexed) files=("$shared"/corpus/llvm-profdata/*/*.profdata*) ;;
        instrprof_text) files=("$shared"/corpus/llvm-profdata/*/*.proftext) ;;
        sampleprof_text) files=("$shared"/corpus/llvm-profdata/*/*sample*.proftext) ;;
        sampleprof_binary) files=("$shared"/corpus/llvm-profdata/*/*.profdata* "$gen"/sample.*binary.*) ;;
        sampleprof_gcov) files=("$shared"/corpus/llvm-profdata/*/*.gcov "$shared"/corpus/llvm-profdata/*/*.afdo "$gen"/sample.gcov*) ;;
        sampleprof_gcov_v4) files=("$gen"/sample.gcov-v4*) ;;
    esac
    for f in "${files[@]}"; do
        [ -f "$f" ] && cp -n "$f" "$dir/" 2>/dev/null || true
    done
    echo "$dir"
}

generate
failed=()
for target in "${targets[@]}"; do
    dir=$(seed_dirs "$target")
    echo "run.sh: $target for ${seconds}s from $(ls "$dir" | wc -l) inputs" >&2
    (cd "$here" && cargo fuzz run --sanitizer none "$target" "$dir" -- \
        -max_total_time="$seconds" -max_len="${FUZZ_MAX_LEN:-65536}" \
        -print_final_stats=1 -timeout=20) || failed+=("$target")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh: findings in: ${failed[*]} (see fuzz/artifacts/)" >&2
    exit 1
fi
