#!/bin/sh
# `make check`: builds every configuration, runs every suite, and ends with
# one line "N passed, N failed, N skipped" over all of them. Each step
# records its counts in build/results/<label> as "passed failed skipped".
# CHECK_ONLY="native cross" runs a subset (step names; a wrong one is an
# error that lists them).
# Expects ARCH, CROSS_CC and QEMU_AARCH64 from the Makefile (config.mak).
set -u
R=build/results
rm -rf "$R"; mkdir -p "$R"
MAKE=${MAKE:-make}
status=0

want() { [ -z "${CHECK_ONLY:-}" ] || case " $CHECK_ONLY " in *" $1 "*) ;; *) return 1 ;; esac; }

# CHECK_ONLY names: the built-in steps and one per scripts/check.d/*.sh.
steps="native asan tsan cross freestanding exports"
for extra in scripts/check.d/*.sh; do steps="$steps $(basename "$extra" .sh)"; done
for w in ${CHECK_ONLY:-}; do
    case " $steps " in
    *" $w "*) ;;
    *) echo "check: CHECK_ONLY: no step '$w'; the steps are: $steps" >&2; exit 2 ;;
    esac
done

# A step that is not a check suite (a build, a script) counts as one check.
record() { # record <label> <rc>
    if [ "$2" = 0 ]; then echo "1 0 0" > "$R/$1"; else echo "0 1 0" > "$R/$1"; status=1; fi
}

# configure records the test tools it did not find; `make check` installs
# them and configures again first, so a tool still missing here is a failure
# (not a silent skip).
if [ -n "${MISSING_TOOLS:-}" ]; then
    echo "== tools: missing:$MISSING_TOOLS (scripts/install-deps.sh as root installs them)"
    record tools 1
fi

# Runs the check binary; it writes its own counts (tests/main.c).
suite() { # suite <label> <runner...>
    label=$1; shift
    echo "== suites: $label"
    t0=$(date +%s)
    MMPORT_TEST_RESULTS="$R/$label" "$@" || status=1
    [ -s "$R/$label" ] || { echo "0 1 0" > "$R/$label"; status=1; }
    echo "   ($label: $(( $(date +%s) - t0 )) s)"
}

build() { # build <label> <make target>
    echo "== build: $1"
    $MAKE --no-print-directory -j2 "$2" > "$R/$1.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { tail -30 "$R/$1.log"; }
    record "build-$1" $rc
    return $rc
}

# A primary build for another arch (./configure --host=...) runs emulated.
native_runner=
[ "$ARCH" = "$(uname -m)" ] || native_runner=$QEMU_AARCH64
if want native && build native build-native; then
    suite native $native_runner build/$ARCH/tests/mmport-test
fi
if [ -n "$native_runner" ]; then
    echo "== asan: skipped: the sanitizer runtimes exist for the host arch only"
elif want asan && build asan build-asan; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        suite asan build/$ARCH-asan/tests/mmport-test
fi
# The suites with threads (concurrent walkers, parallel clearing, readers
# beside splits, tracking, shared-mode writers) under TSan.
if [ -z "$native_runner" ] && want tsan && build tsan build-tsan; then
    for s in concurrency clear pt_outage pt_track_mt pt_shared pt_fault; do
        CK_RUN_SUITE=$s TSAN_OPTIONS=halt_on_error=1 \
            suite tsan-$s build/$ARCH-tsan/tests/mmport-test
    done
fi
if [ -n "${CROSS_CC:-}" ] && want cross && build cross build-cross; then
    for cpu in max cortex-a57; do
        QEMU_CPU=$cpu suite "aarch64-$cpu" $QEMU_AARCH64 build/aarch64/tests/mmport-test
    done
fi
if want freestanding; then
    for a in $ARCH ${CROSS_CC:+aarch64}; do
        for c in gcc clang; do
            echo "== freestanding: $a $c"
            scripts/check-freestanding.sh "$a" "$c" "build/freestanding-$a-$c"
            record "freestanding-$a-$c" $?
        done
    done
fi
if want exports && [ -f build/$ARCH/libmmport.so ]; then
    echo "== exports: only mmp_* leave libmmport.so"
    scripts/check-exports.sh build/$ARCH/libmmport.so
    record exports $?
fi
for extra in scripts/check.d/*.sh; do
    [ -f "$extra" ] || continue
    name=$(basename "$extra" .sh)
    want "$name" || continue
    echo "== $name"
    t0=$(date +%s)
    MMPORT_TEST_RESULTS="$R/$name" sh "$extra"
    rc=$?
    echo "   ($name: $(( $(date +%s) - t0 )) s)"
    [ -s "$R/$name" ] || record "$name" $rc
    [ $rc = 0 ] || status=1
done
echo "== summary"
p=0 f=0 s=0
for r in "$R"/*; do
    case $r in *.log) continue ;; esac
    read -r rp rf rs < "$r"
    printf '  %-28s %4d passed %3d failed %3d skipped\n' "$(basename "$r")" "$rp" "$rf" "$rs"
    p=$((p + rp)) f=$((f + rf)) s=$((s + rs))
done
echo "$p passed, $f failed, $s skipped"
[ $f = 0 ] && [ $status = 0 ]
