#!/bin/sh
# The native check suites once more under valgrind memcheck, for what the
# asan step (clang, ASan + LSan + UBSan) cannot see:
# - reads of uninitialised memory (ASan has no definedness tracking);
# - the gcc -O2 build as shipped, uninstrumented;
# - accesses made by inline assembly (the clearing kernels' rep stos and
#   non-temporal stores), which ASan does not instrument.
# Leaks are the asan step's (LSan) and the example step's (guest_mm under
# valgrind --leak-check=full), so none are looked for here.
# (Suites that are slow under valgrind may be left out with VALGRIND_SKIP.)
set -u
. scripts/check-step.sh
step_needs_host_arch "valgrind runs host-arch binaries only"
b=build/$(uname -m)
bin=$b/tests/mmport-test
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }
# libcheck forks a child per test; valgrind follows forks by itself.
# --fair-sched=yes: valgrind runs one thread at a time, and with its default
# lock a thread spinning on a flag (a test's reader) can keep the writer it
# waits for from ever running.
MMPORT_UNDER_VALGRIND=1 CK_DEFAULT_TIMEOUT=600 CK_EXCLUDE_SUITE="${VALGRIND_SKIP:-}" \
    valgrind -q --fair-sched=yes --error-exitcode=1 --leak-check=no --track-origins=no "$bin"
