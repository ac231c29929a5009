#!/bin/sh
# Deterministic replay of the checked-in fuzz corpus (no libFuzzer needed),
# built with ASan/UBSan: once as recorded, once with systematic allocator
# fault injection at every allocation of every operation. Then each input
# of fuzz/known/<target>/ (a library bug the fuzzer found, see its README)
# on its own: still failing is a SKIP naming it; passing means fixed, and
# the step fails until the input joins the corpus. Last, a short libFuzzer
# run of each page-table target that meets inputs the corpus does not hold,
# yet cannot flake: a fixed seed, a fixed number of executions, a fixed
# start (the corpus inputs whose names begin with 0), and no mutation fed
# by compared values or by time (-use_cmp=0: they hold heap addresses,
# which move with libFuzzer's own timed output; -reload=0), so a given tree
# and compiler always run the same inputs. (fuzz_clear's thread counts make
# its coverage depend on scheduling: its corpus replay covers it.)
set -u
. scripts/check-step.sh
b=build/fuzz-replay
if ! make --no-print-directory -f mk/build.mk B=$b ARCH="${ARCH:-x86_64}" CC="${CC_REPLAY:-gcc}" \
    VFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" fuzz > $b.log 2>&1; then
    tail -20 $b.log
    ko "building the fuzz replays"
    step_results
    exit 1
fi
run=
[ "${ARCH:-$(uname -m)}" = "$(uname -m)" ] || run=${QEMU_AARCH64:-qemu-aarch64-static}
for t in $b/fuzz/fuzz_*; do
    n=${t##*/fuzz_}
    modes=recorded
    # Only the page-table target injects allocation failures.
    [ "$n" = pt ] && modes="recorded systematic"
    for mode in $modes; do
        sys=0; [ $mode = systematic ] && sys=1
        t0=$(date +%s)
        if out=$( (MMPORT_FUZZ_SYSTEMATIC=$sys $run "$t" "fuzz/corpus/$n"; exit $?) 2>&1); then
            ok "fuzz $n replay ($mode, $(( $(date +%s) - t0 )) s): $(echo "$out" | tr '\n' ' ')"
        else
            echo "$out" | tail -5
            ko "fuzz $n replay ($mode)"
        fi
    done
    for k in fuzz/known/$n/*; do
        [ -f "$k" ] || continue
        if out=$( ($run "$t" "$k"; exit $?) 2>&1); then
            ko "fuzz $n: known-bug input $k passes now: move it into fuzz/corpus/$n (and out of fuzz/known/README)"
        else
            echo "SKIP: fuzz $n: known library bug ${k##*/} (fuzz/known/README): $(echo "$out" | grep 'fuzz_pt:\|fuzz_' | head -1 | cut -c1-160)"
            skip=$((skip + 1))
        fi
    done
done
# Executions per target (about 20 s in all on one idle core).
det_runs() {
    case $1 in
    pt) echo 500 ;;
    pt_mem) echo 2000 ;;
    esac
}
if [ "${ARCH:-$(uname -m)}" != "$(uname -m)" ]; then
    echo "SKIP: fuzz deterministic runs: libFuzzer runs on the host arch only; this configuration targets $ARCH"
    skip=$((skip + 1))
elif ! ${MAKE:-make} --no-print-directory fuzz-build > build/fuzz-det.log 2>&1; then
    tail -20 build/fuzz-det.log
    ko "building the libFuzzer targets (make fuzz-build)"
else
    for n in pt pt_mem; do
        t=build/fuzz/fuzz/fuzz_$n
        d=build/fuzz/det/$n
        rm -rf "$d" && mkdir -p "$d/work" "$d/seed"
        cp fuzz/corpus/$n/0* "$d/seed/" 2>/dev/null
        runs=$(det_runs "$n")
        t0=$(date +%s)
        if "$t" -seed=1 -runs="$runs" -max_len=400 -timeout=60 -use_cmp=0 -reload=0 \
            -print_final_stats=1 -artifact_prefix="$d/" "$d/work" "$d/seed" > "$d.log" 2>&1; then
            ok "fuzz $n deterministic run (seed 1, $runs executions from $(ls "$d/seed" | wc -l) corpus inputs, $(( $(date +%s) - t0 )) s): $(grep -o 'cov: [0-9]*' "$d.log" | tail -1), $(ls "$d/work" | wc -l) new inputs"
        else
            grep "fuzz_$n:\|ERROR\|SUMMARY" "$d.log" | head -5
            ko "fuzz $n deterministic run found a failing input: $(ls "$d"/crash-* "$d"/timeout-* "$d"/oom-* 2>/dev/null | head -1) (see $d.log; reproduce with $t on it; a library bug goes to fuzz/known/$n until fixed, then into fuzz/corpus/$n)"
        fi
    done
fi
step_results
