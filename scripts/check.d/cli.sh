#!/bin/sh
# The mmport command's contract: every subcommand answers --help on stdout
# with exit 0; a bad option or argument exits 2 with exactly one line on
# stderr and nothing on stdout; ptdump prints the leaves its --map
# arguments call for; a small demo verifies; JSON outputs parse.
set -u
. scripts/check-step.sh
step_needs_host_arch "the CLI contract is checked on host-arch builds"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
finish() {
    step_results
    exit
}

make --no-print-directory all > "$tmp/log" 2>&1 || { cat "$tmp/log"; ko "make all"; finish; }
M=build/$(uname -m)/mmport

# run <args...>: stdout in $tmp/out, stderr in $tmp/err, exit code in $rc
run() { "$M" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?; }
lines() { wc -l < "$1" | tr -d ' '; }

# Help: exit 0, text on stdout, nothing on stderr.
help_ok() { # help_ok <args...>
    run "$@"
    if [ $rc = 0 ] && [ -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then
        ok "mmport $*: exit 0, $(lines "$tmp/out") lines on stdout"
    else
        ko "mmport $*: exit $rc, stdout $(lines "$tmp/out") lines, stderr: $(head -2 "$tmp/err")"
    fi
}
help_ok help
help_ok --help
cmds=$("$M" help | awk '/^  [a-z]/ && $1 !~ /^-/ { print $1 }')
[ -n "$cmds" ] && ok "mmport help lists: $(echo $cmds)" || ko "mmport help lists no command"
for c in $cmds; do
    help_ok "$c" --help
    help_ok "$c" -h
    help_ok help "$c"
done
for b in clear map; do
    help_ok bench "$b" --help
done
run --version
if [ $rc = 0 ] && grep -qx 'mmport [0-9][0-9.]*' "$tmp/out"; then
    ok "mmport --version: $(cat "$tmp/out")"
else
    ko "mmport --version: exit $rc, '$(cat "$tmp/out")'"
fi

# Usage errors: exit 2, one line on stderr naming the command, stdout empty.
bad() { # bad <args...>
    run "$@"
    if [ $rc = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] &&
        grep -q '^mmport' "$tmp/err"; then
        ok "mmport $*: exit 2, '$(cat "$tmp/err")'"
    else
        ko "mmport $*: exit $rc (want 2), stderr $(lines "$tmp/err") lines: $(head -3 "$tmp/err" | tr '\n' '|'), stdout $(lines "$tmp/out") lines"
    fi
}
for c in $cmds; do
    [ "$c" = bench ] || bad "$c" --no-such-option
done
bad nosuchcommand
bad help nosuchcommand
bad bench
bad bench nosuchbench
bad bench clear --no-such-option
bad bench map --no-such-option
bad demo --ram
bad demo --ram 3M
bad demo --ram lots
bad demo --threads 0
bad ptdump --format nosuchformat --map 0:0:4K
bad ptdump --map 1:2
bad ptdump --map 0x1000:0x1000:4K:zz
run ptdump --map 0x1000:0x1000:4K --map 0x1000:0x1000:4K
if [ $rc = 1 ] && [ "$(lines "$tmp/err")" = 1 ]; then
    ok "ptdump overlapping maps: exit 1, '$(cat "$tmp/err")'"
else
    ko "ptdump overlapping maps: exit $rc (want 1), stderr: $(cat "$tmp/err")"
fi

# ptdump: the leaves follow from alignment.
expect() { # expect <description> <grep -E pattern>...
    d=$1; shift
    for pat in "$@"; do
        grep -Eq -- "$pat" "$tmp/out" || { ko "$d: no line matches '$pat'"; cat "$tmp/out"; return; }
    done
    ok "$d"
}
run ptdump --format arm64-4k --map 0x40000000:0x80000000:4M --map 0x9000000:0x9000000:64K:rw,device
[ $rc = 0 ] || ko "ptdump arm64-4k: exit $rc: $(cat "$tmp/err")"
expect "ptdump arm64-4k: 2M blocks for 4M, one contiguous run for 64K device" \
    '^format arm64-4k: 4 levels from level 0' \
    '^0x0000000040000000-0x00000000403fffff -> 0x0000080000000 4M block\(2M L2\) rw--- normal-wb$' \
    '^0x0000000009000000-0x000000000900ffff -> 0x0000009000000 64K cont\(4K L3\) rw--- device$' \
    '^total: 4160K mapped, 16 pages, 1 contiguous runs, 2 blocks, 5 table pages$'
run ptdump --format x86-64 --map 0:0:1G --map 0x40200000:0x80000000:8K:rx
[ $rc = 0 ] || ko "ptdump x86-64: exit $rc: $(cat "$tmp/err")"
expect "ptdump x86-64: a 1G block and 4K pages" \
    '^0x0000000000000000-0x000000003fffffff -> 0x0000000000000 1G block\(1G L3\) rw--- normal-wb$' \
    '^0x0000000040200000-0x0000000040201fff -> 0x0000080000000 8K page\(4K L1\) r-x-- normal-wb$' \
    '^total: 1048584K mapped, 2 pages, 0 contiguous runs, 1 blocks, '
run ptdump --format x86-ept --map 0:0:1G --map 0x40200000:0x80000000:8K:rx,wc
[ $rc = 0 ] || ko "ptdump x86-ept: exit $rc: $(cat "$tmp/err")"
expect "ptdump x86-ept: a 1G block, WC pages" \
    '^format x86-ept: 4 levels from level 4' \
    '^0x0000000040200000-0x0000000040201fff -> 0x0000080000000 8K page\(4K L1\) r-x-- wc$'
run ptdump --format x86-npt --map 0x800000000000:0:4K:rw
expect "ptdump x86-npt: guest-physical 2^47 (no canonical form)" \
    '^0x0000800000000000-0x0000800000000fff -> 0x0000000000000 4K page\(4K L1\) rw--- normal-wb$'
run ptdump --format arm64-s2-4k --no-blocks --map 0x40000000:0x80000000:2M
expect "ptdump arm64-s2-4k --no-blocks: 2M as contiguous runs" \
    '^format arm64-s2-4k: 3 levels from level 1' \
    '2M cont\(4K L3\)' '512 pages, 32 contiguous runs, 0 blocks'

# The demo, small: verification passes, text and JSON.
run demo --ram 64M
if [ $rc = 0 ] && grep -q '^verification passed' "$tmp/out"; then
    ok "demo --ram 64M: $(grep -c 'all as laid out' "$tmp/out") tables as laid out, RAM zero"
else
    ko "demo --ram 64M: exit $rc: $(tail -3 "$tmp/out") $(cat "$tmp/err")"
fi
run demo --ram 64M --json --threads 1
if [ $rc = 0 ] && python3 -m json.tool "$tmp/out" > /dev/null &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verify"]["ok"] is True and len(d["tables"]) == 3 and all(t["verify"]["bad"] == 0 and t["lazy"]["barriers"] <= 1 and t["balloon"]["lazy"]["flushes"] <= t["balloon"]["per_call"]["flushes"] for t in d["tables"])' "$tmp/out"; then
    ok "demo --json: parses, verify.ok, one barrier per lazy build, balloon flushes batched"
else
    ko "demo --json: exit $rc: $(head -c 300 "$tmp/out") $(cat "$tmp/err")"
fi

# JSON from info.
for a in "info --json" "info --json --stats"; do
    # shellcheck disable=SC2086
    run $a
    if [ $rc = 0 ] && python3 -m json.tool "$tmp/out" > /dev/null; then
        ok "mmport $a: valid JSON"
    else
        ko "mmport $a: exit $rc, not JSON: $(head -c 200 "$tmp/out")"
    fi
done
finish
