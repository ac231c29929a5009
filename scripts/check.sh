#!/bin/sh
# `make check`: builds every configuration, runs every step, and ends with
# one line "N passed, N failed, N skipped" over all of them. Each step
# records its counts in build/results/<label> as "passed failed skipped".
#
# The native build comes first (most steps use its library and command);
# then the steps run as jobs of a generated makefile, CHECK_JOBS at a time
# (default: the number of CPUs), longest first. A job's output is printed
# whole when it ends, so steps never interleave.
#
# CHECK_ONLY="native cross" runs a subset (step names; a wrong one is an
# error that lists them). `scripts/check.sh --step NAME` runs one step
# alone (what each job does).
# Expects ARCH, CROSS_CC and QEMU_AARCH64 from the Makefile (config.mak).
set -u
R=build/results
MAKE=${MAKE:-make}
status=0

# Step names: the built-in ones and one per scripts/check.d/*.sh, in the
# order jobs start (the longest first, so that the last to finish starts
# early).
builtin="native asan tsan cross freestanding exports"
extras=
for extra in scripts/check.d/*.sh; do extras="$extras $(basename "$extra" .sh)"; done
steps="$builtin$extras"
first="guest mmu planted fuzz valgrind asan cross genregs"

want() { [ -z "${CHECK_ONLY:-}" ] || case " $CHECK_ONLY " in *" $1 "*) ;; *) return 1 ;; esac; }

# A step that is not a check suite (a build, a script) counts as one check.
record() { # record <label> <rc>
    if [ "$2" = 0 ]; then echo "1 0 0" > "$R/$1"; else echo "0 1 0" > "$R/$1"; status=1; fi
}

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

# run_step <name>: one step, its results in $R; exits non-zero on failure.
run_step() {
    case $1 in
    native)
        [ -s "$R/build-native" ] && [ "$(cut -d' ' -f2 "$R/build-native")" = 0 ] &&
            suite native $native_runner build/$ARCH/tests/mmport-test ;;
    asan)
        if [ -n "$native_runner" ]; then
            echo "== asan: skipped: the sanitizer runtimes exist for the host arch only"
        elif build asan build-asan; then
            ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
                suite asan build/$ARCH-asan/tests/mmport-test
        fi ;;
    tsan)
        # The suites with threads (concurrent walkers, parallel clearing,
        # readers beside splits, tracking, shared-mode writers).
        if [ -z "$native_runner" ] && build tsan build-tsan; then
            for s in concurrency clear clear_shutdown pt_outage pt_track_mt pt_shared pt_fault pt_call pt_call_mt; do
                CK_RUN_SUITE=$s TSAN_OPTIONS=halt_on_error=1 \
                    suite tsan-$s build/$ARCH-tsan/tests/mmport-test
            done
        fi ;;
    cross)
        if [ -n "${CROSS_CC:-}" ] && build cross build-cross; then
            for cpu in max cortex-a57; do
                QEMU_CPU=$cpu suite "aarch64-$cpu" $QEMU_AARCH64 build/aarch64/tests/mmport-test
            done
        fi ;;
    freestanding)
        for a in $ARCH ${CROSS_CC:+aarch64}; do
            for c in gcc clang; do
                echo "== freestanding: $a $c"
                scripts/check-freestanding.sh "$a" "$c" "build/freestanding-$a-$c"
                record "freestanding-$a-$c" $?
            done
        done ;;
    exports)
        if [ -f build/$ARCH/libmmport.so ]; then
            echo "== exports: only mmp_* leave libmmport.so"
            scripts/check-exports.sh build/$ARCH/libmmport.so
            record exports $?
        fi ;;
    *)
        echo "== $1"
        t0=$(date +%s)
        MMPORT_TEST_RESULTS="$R/$1" sh "scripts/check.d/$1.sh"
        rc=$?
        echo "   ($1: $(( $(date +%s) - t0 )) s)"
        [ -s "$R/$1" ] || record "$1" $rc
        [ $rc = 0 ] || status=1 ;;
    esac
    return $status
}

if [ "${1:-}" = --step ]; then
    run_step "$2"
    exit
fi

for w in ${CHECK_ONLY:-}; do
    case " $steps " in
    *" $w "*) ;;
    *) echo "check: CHECK_ONLY: no step '$w'; the steps are: $steps" >&2; exit 2 ;;
    esac
done
rm -rf "$R"; mkdir -p "$R"
t_start=$(date +%s)

# configure records the test tools it did not find; `make check` installs
# them and configures again first, so a tool still missing here is a failure
# (not a silent skip).
if [ -n "${MISSING_TOOLS:-}" ]; then
    echo "== tools: missing:$MISSING_TOOLS (scripts/install-deps.sh as root installs them)"
    record tools 1
fi

# Built once before the jobs: the native library, command and suites, and
# the libatomic_ops include directory the freestanding builds share.
build native build-native
if [ ! -e build/include-ao/atomic_ops.h ]; then
    ao=$(sed -n 's/^AO_DIR = //p' config.mak)
    mkdir -p build/include-ao && ln -sfn "$ao/atomic_ops.h" "$ao/atomic_ops" build/include-ao/
fi

jobs=
for s in $first $steps; do
    want "$s" || continue
    case " $jobs " in *" $s "*) continue ;; esac
    jobs="$jobs $s"
done
# One target per step; each job runs outside the outer make (no jobserver
# is passed down: the builds inside a step run their own -j2).
{
    echo ".PHONY: all$jobs"
    echo "all:$jobs"
    for s in $jobs; do
        printf '%s:\n\t@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL sh scripts/check.sh --step %s\n' "$s" "$s"
    done
} > "$R/jobs.mk"
n=${CHECK_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $MAKE --no-print-directory -k -O -j"$n" -f "$R/jobs.mk" all ||
    status=1

echo "== summary ($(( $(date +%s) - t_start )) s, $n jobs at a time)"
p=0 f=0 s=0
for r in "$R"/*; do
    case $r in *.log|*.mk|*.skips) continue ;; esac
    read -r rp rf rs < "$r"
    printf '  %-28s %4d passed %3d failed %3d skipped\n' "$(basename "$r")" "$rp" "$rf" "$rs"
    p=$((p + rp)) f=$((f + rf)) s=$((s + rs))
done
echo "$p passed, $f failed, $s skipped"
[ $f = 0 ] && [ $status = 0 ]
