#!/bin/sh
# The checks' own test: build the engine with a deliberately planted bug
# (-DMMP_TEST_PLANT=n, see core/pt_engine.h) and require the fuzz-corpus
# replay to catch it. A check that passes a broken engine has no teeth.
#   1: unmap forgets to free one emptied table (a leak)
#   2: a contiguous run is marked when it is one entry short
set -u
pass=0 fail=0
for n in 1 2; do
    b=build/planted-$n
    if ! make --no-print-directory -f mk/build.mk B=$b ARCH="$(uname -m)" CC=gcc \
        VFLAGS="-DMMP_TEST_PLANT=$n" fuzz > $b.log 2>&1; then
        tail -5 $b.log; echo "FAIL: building planted bug $n"; fail=$((fail + 1)); continue
    fi
    if out=$($b/fuzz/fuzz_pt fuzz/corpus/pt 2>&1); then
        echo "FAIL: planted bug $n went unnoticed by the fuzz replay"; fail=$((fail + 1))
    else
        echo "PASS: planted bug $n caught: $(echo "$out" | grep 'fuzz_pt:' | head -1 | cut -c1-200)"
        pass=$((pass + 1))
    fi
done
[ -n "${MMPORT_TEST_RESULTS:-}" ] && echo "$pass $fail 0" > "$MMPORT_TEST_RESULTS"
[ $fail = 0 ]
