# Sourced by every scripts/check.d/*.sh step: PASS/FAIL counting and the
# "passed failed skipped" line scripts/check.sh reads from
# $MMPORT_TEST_RESULTS.
pass=0 fail=0 skip=0
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
ko() { echo "FAIL: $1"; fail=$((fail + 1)); }
step_results() {
    [ -z "${MMPORT_TEST_RESULTS:-}" ] || echo "$pass $fail $skip" > "$MMPORT_TEST_RESULTS"
    [ "$fail" = 0 ]
}
# Skips the whole step (saying why) unless the configuration targets the host.
step_needs_host_arch() { # <why>
    if [ "${ARCH:-$(uname -m)}" != "$(uname -m)" ]; then
        echo "SKIP: $1; this configuration targets $ARCH"
        skip=1
        step_results
        exit 0
    fi
}
