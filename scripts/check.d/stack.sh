#!/bin/sh
# Stack use of the page-table calls (issue 17, item 5; a hypervisor's stack
# may be one 4 KiB page): the core and the descriptor formats are compiled
# with gcc -O2 -fstack-usage -fcallgraph-info=su, for x86_64 and (with a
# cross compiler) aarch64, and scripts/stack-usage.py checks
#  - every function's own frame against 1 KiB,
#  - every public call's deepest call chain (an upper bound) against 2 KiB.
# The real depth is measured on a painted stack by the pt_stack suite
# (tests/test_pt_stack.c), in the native and aarch64 runs.
set -u
. scripts/check-step.sh
out=build/stack
FRAME=1024 CHAIN=2048
if [ ! -e build/include-ao/atomic_ops.h ]; then
    ao=$(sed -n 's/^AO_DIR = //p' config.mak)
    mkdir -p build/include-ao && ln -sfn "$ao/atomic_ops.h" "$ao/atomic_ops" build/include-ao/
fi
for a in x86_64 ${CROSS_CC:+aarch64}; do
    case $a in
    x86_64) cc=gcc dir=x86 ;;
    aarch64) cc=aarch64-linux-gnu-gcc dir=arm64 ;;
    esac
    [ "$a" = "$(uname -m)" ] && cc=gcc
    d=$out/$a
    rm -rf "$d"
    mkdir -p "$d"
    built=1
    for f in core/*.c arch/*/pt_*.c; do
        o=$d/$(echo "$f" | tr / _ | sed 's/\.c$//')
        # -fcallgraph-info writes <object>.ci next to the object
        if ! $cc -std=c11 -O2 -fPIC -fvisibility=hidden -Iinclude -Icore -Iarch/$dir \
            -Ibuild/include-ao -DNDEBUG -fstack-usage -fcallgraph-info=su -c "$f" -o "$o.o" \
            > "$d/cc.log" 2>&1; then
            cat "$d/cc.log"
            built=0
            break
        fi
    done
    if [ $built = 0 ]; then
        ko "stack $a: building the core with -fstack-usage -fcallgraph-info ($cc)"
        continue
    fi
    echo "-- $a ($cc -O2)"
    python3 scripts/stack-usage.py $FRAME $CHAIN "$d"/*.ci > "$d/report.txt"
    rc=$?
    sed "s|$(pwd)/||g" "$d/report.txt"
    if [ $rc = 0 ]; then
        ok "stack $a: every frame <= $FRAME bytes, every public call's deepest chain <= $CHAIN bytes"
    else
        ko "stack $a: a frame or a public call's chain is over budget (above)"
    fi
done
step_results
