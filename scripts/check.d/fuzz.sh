#!/bin/sh
# Deterministic replay of the checked-in fuzz corpus (no libFuzzer needed),
# built with ASan/UBSan: once as recorded, once with systematic allocator
# fault injection at every allocation of every operation. Then each input
# of fuzz/known/<target>/ (a library bug the fuzzer found, see its README)
# on its own: still failing is a SKIP naming it; passing means fixed, and
# the step fails until the input joins the corpus.
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
step_results
