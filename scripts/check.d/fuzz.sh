#!/bin/sh
# Deterministic replay of the checked-in fuzz corpus (no libFuzzer needed),
# built with ASan/UBSan: once as recorded, once with systematic allocator
# fault injection at every allocation of every operation.
set -u
pass=0 fail=0
b=build/fuzz-replay
if ! make --no-print-directory -f mk/build.mk B=$b ARCH="${ARCH:-x86_64}" CC="${CC_REPLAY:-gcc}" \
    VFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" fuzz > $b.log 2>&1; then
    tail -20 $b.log; echo "FAIL: building the fuzz replays"
    [ -n "${MMPORT_TEST_RESULTS:-}" ] && echo "0 1 0" > "$MMPORT_TEST_RESULTS"
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
        if out=$(MMPORT_FUZZ_SYSTEMATIC=$sys $run "$t" "fuzz/corpus/$n" 2>&1); then
            echo "PASS: fuzz $n replay ($mode): $(echo "$out" | tr '\n' ' ')"
            pass=$((pass + 1))
        else
            echo "$out" | tail -5
            echo "FAIL: fuzz $n replay ($mode)"
            fail=$((fail + 1))
        fi
    done
done
[ -n "${MMPORT_TEST_RESULTS:-}" ] && echo "$pass $fail 0" > "$MMPORT_TEST_RESULTS"
[ $fail = 0 ]
