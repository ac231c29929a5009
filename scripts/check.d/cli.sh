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
for v in --version -V; do
    run $v
    if [ $rc = 0 ] && grep -qx 'mmport [0-9][0-9.]*' "$tmp/out"; then
        ok "mmport $v: $(cat "$tmp/out")"
    else
        ko "mmport $v: exit $rc, '$(cat "$tmp/out")'"
    fi
done

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

expect() { # expect <description> <grep -E pattern>...
    d=$1; shift
    for pat in "$@"; do
        grep -Eq -- "$pat" "$tmp/out" || { ko "$d: no line matches '$pat'"; cat "$tmp/out"; return; }
    done
    ok "$d"
}

# Usage errors name the argument and the reason (GNU getopt_long style).
says() { # says <pattern> <args...>: a usage error whose message matches
    pat=$1; shift
    run "$@"
    if [ $rc = 2 ] && grep -q -- "$pat" "$tmp/err" && [ ! -s "$tmp/out" ]; then
        ok "mmport $*: '$(cat "$tmp/err")'"
    else
        ko "mmport $*: exit $rc, stderr '$(cat "$tmp/err")' (want 2 and '$pat')"
    fi
}
# A refused --map is a usage error (exit 2) with the library's reason
# (mmp_pt_reason_text): the rule and the value that broke it.
says "--map '0x1001:0:4K': input address 0x1001 is not aligned to the 4096-byte granule" ptdump --map 0x1001:0:4K
says "output address 0x800 is not aligned" ptdump --format x86-64 --map 0:0x800:4K
says "size 0x1800 is not aligned to the 65536-byte granule" ptdump --format arm64-64k --map 0:0:0x1800
says "size is 0" ptdump --map 0:0:0
says "unknown attribute in 'zz'" ptdump --map 0x1000:0x1000:4K:zz
says "--map '0:0:4K:w': EPT: WRITE needs READ" ptdump --format x86-ept --map 0:0:4K:w
says "EPT: execute without READ needs MMP_PT_EPT_XO.*x86-ept-mbec" ptdump --format x86-ept --map 0:0:4K:x
says "every leaf needs MMP_PROT_READ, attrs 0x6" ptdump --map 0:0:4K:wx
says "USER and GLOBAL are for stage-1 tables.*attrs 0xb" ptdump -f x86-npt -m 0:0:4K:rwu
says "USER and GLOBAL are for stage-1 tables.*attrs 0x11" ptdump -f arm64-s2-4k -m 0:0:4K:rg
says "MMP_PROT_UEXEC needs an EPT table made with MMP_PT_EPT_MBEC.*x86-ept-mbec" ptdump -f x86-ept -m 0:0:4K:rX
says "memory type 0x300 is not one the format has" ptdump -f x86-64 -m 0:0:4K:rw,wc
says "input range 0x7ffffffff000-0x800000000fff is not canonical for 48-bit addresses" ptdump -f x86-64 -m 0x7ffffffff000:0:8K
says "input range 0x10000000000-0x10000000fff beyond va_bits 40" ptdump -f arm64-s2-4k -m 0x10000000000:0:4K
says "output range 0x1000000000000-0x1000000000fff beyond pa_bits 48" ptdump -m 0:0x1000000000000:4K
says "input address 0xfffffffffffff000 + size 0x2000 wraps past 2^64" ptdump -f x86-64 -m 0xfffffffffffff000:0:8K
says "output address 0xfffffffffffff000 + size 0x2000 wraps past 2^64" ptdump -f x86-64 -m 0:0xfffffffffffff000:8K
says "--map '0x1000:0x1000:4K': overlaps an earlier --map" ptdump --map 0x1000:0x1000:4K --map 0x1000:0x1000:4K
run ptdump -f x86-ept-mbec -m 0:0:4K:x -m 0x1000:0x1000:4K:rX
[ $rc = 0 ] && grep -q ' --x-- ' "$tmp/out" && grep -q ' r--X- ' "$tmp/out" &&
    ok "ptdump x86-ept-mbec: execute-only and user-execute leaves are accepted" ||
    ko "ptdump x86-ept-mbec x / rX: exit $rc $(cat "$tmp/out" "$tmp/err")"
says "nothing to dump" ptdump
says "nothing to dump" ptdump --format x86-64
says "--ram '3M': out of range 4M..256G" demo --ram=3M
says "--ram '5M': not a multiple of 2M" demo --ram 5M
says "option '--ram' requires an argument" demo --ram
says "unrecognized option '--rams=4M'" demo --rams=4M
says "option '--json' doesn't allow an argument" info --json=yes
says "unexpected argument 'extra'" info extra
says "option requires an argument -- 'o'" tune -o
says "invalid option -- 'q'" tune -q
says "--size 'big': not a size" tune --size=big
says "--mode needs --pattern vmalloc" bench map --mode lazy
says "--pages '3': want 1, 4, 16, 64, 256 or 512" bench map --pattern vmalloc --pages 3
says "--heap does not apply to --pattern vmalloc" bench map --pattern vmalloc --heap
# An option that would select nothing, or that another one overrides, is an error.
says "--format 'x86-ept': --pattern vmalloc runs x86-64 or arm64-4k" bench map --pattern vmalloc --format x86-ept
says "--format 'x86-64': want arm64-s2-4k or x86-ept" bench fault --format x86-64
says "--quick and --reps exclude each other" bench clear --quick --reps 3
says "--sizes: '3K' is not a multiple of 4K" bench clear --sizes=4K,3K
says "--reps '0': want 1..100" bench clear --reps 0
says "--reps '0': want 1..100" bench clear -r 0
says "--format 'x86-64': want arm64-s2-4k or x86-ept" bench fault -f x86-64
says "--size '3G5': want a multiple of 1G" bench dirty -s 3G5
says "--threads '0': out of range 1..256" demo -t 0
run info --json --
[ $rc = 0 ] && python3 -m json.tool "$tmp/out" > /dev/null && ok "info --json --: '--' ends the options" ||
    ko "info --json --: exit $rc $(cat "$tmp/err")"
# Short options: -j everywhere JSON is, -f for a format, bundling.
run info -j
[ $rc = 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["cpu"]
assert all(isinstance(c[k], str) and c[k].startswith("0x") for k in ("midr", "hwcap", "hwcap2")), c
cm = d["clear_policy"]["cold_min"]; assert cm is None or (isinstance(cm, int) and cm < 2**53), cm' "$tmp/out" &&
    ok "info -j: JSON; midr, hwcap, hwcap2 as \"0x...\" strings; cold_min a number or null" ||
    ko "info -j: exit $rc $(head -c 300 "$tmp/out") $(cat "$tmp/err")"
run ptdump -jf x86-64 -m 0xffff800000000000:0x40000000:2M
[ $rc = 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["regions"]
assert d["format"] == "x86-64" and "root" not in d, d
assert [(x["va"], x["pa"], x["size"]) for x in r] == [("0xffff800000000000", "0x40000000", 2 << 20)], r' "$tmp/out" &&
    ok "ptdump -jf x86-64 -m: addresses above 2^53 exact as strings, no heap root" ||
    ko "ptdump -jf x86-64 -m: exit $rc $(cat "$tmp/out" "$tmp/err")"
says "invalid option -- 'x'" info -x
run tune -ho x
[ $rc = 0 ] && grep -q '^usage: mmport tune' "$tmp/out" && ok "tune -ho x: bundled short options (-h first)" ||
    ko "tune -ho x: exit $rc $(cat "$tmp/err")"

# Output that cannot be written is an error.
for a in "info" "info --json" "ptdump --map 0:0:4K" "help"; do
    # shellcheck disable=SC2086
    "$M" $a > /dev/full 2> "$tmp/err"; rc=$?
    [ $rc = 1 ] && grep -q 'write error' "$tmp/err" && ok "mmport $a > /dev/full: exit 1, '$(cat "$tmp/err")'" ||
        ko "mmport $a > /dev/full: exit $rc, '$(cat "$tmp/err")'"
done

# bench map --pattern fault / split: every format of the default run,
# exclusive and shared, a figure and a reference walk each; the counters
# say what the calls did (timing itself is not checked).
fmts=$("$M" bench map --reps 1 --json | python3 -c 'import json,sys; print(" ".join(sorted({r["format"] for r in json.load(sys.stdin)})))')
for pat in fault split; do
    run bench map --pattern $pat --reps 1 --json
    if [ $rc = 0 ] && python3 - "$tmp/out" "$pat" "$fmts" <<'PY'
import json, sys
rows, pat, fmts = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3].split()
assert sorted({r["format"] for r in rows}) == fmts, (sorted({r["format"] for r in rows}), fmts)
assert len(rows) == 2 * len(fmts), len(rows)
for r in rows:
    assert r["pattern"] == pat and r["mode"] in ("exclusive", "shared"), r
    assert r["ops"] > 0 and r["ns_per_op"] > 0 and r["ref_ns_per_op"] > 0, r
    assert abs(r["vs_ref"] - r["ns_per_op"] / r["ref_ns_per_op"]) < 0.01 * r["vs_ref"] + 0.01, r
    assert r["cpu_ns_per_op"] > 0 and r["ref_cpu_ns_per_op"] > 0, r
    assert ("vs_exclusive" in r) == (r["mode"] == "shared"), r
    if pat == "split":  # one flush per unmap: each changed a live entry
        assert r["flushes"] == r["ops"], r
    elif r["mode"] == "exclusive":  # a barrier per call, nothing flushed
        assert r["barriers"] == r["ops"] and r["flushes"] == 0, r
print(len(rows), "rows")
PY
    then ok "bench map --pattern $pat --json: exclusive and shared rows for $(echo $fmts | wc -w) formats, reference walk beside each"
    else ko "bench map --pattern $pat --json: exit $rc: $(head -c 300 "$tmp/out") $(cat "$tmp/err")"
    fi
done
says "--plot does not apply to --pattern fault" bench map --pattern fault --plot "$tmp/x.svg"
says "--heap does not apply to --pattern split" bench map --pattern split --heap
says "--pattern 'faults': unknown pattern (vmalloc, fault, split)" bench map --pattern faults
run bench map --pattern split --format arm64-4k-lpa2 --reps 1
expect "bench map --pattern split: columns aligned for the longest format name" \
    '^format +work +mode +ops +ns/op +cpu ns +ref ns +vs ref +vs exc' \
    '^arm64-4k-lpa2  split exclusive +32768 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x +- '
run bench map --reps 1 --format arm64-16k-lpa2
expect "bench map: columns aligned for arm64-16k-lpa2" \
    '^format         op       policy  ns/4K-page' '^arm64-16k-lpa2 map      pages  '

# bench map --mode M: the ratios against modes not run are '-', not a
# placeholder divided by a time.
run bench map --pattern=vmalloc --mode=lazy --pages=4 --format=x86-64 --reps=1
if [ $rc = 0 ] && grep -Eq '^x86-64 +4 lazy .* +- +-$' "$tmp/out" && ! grep -q 'e+\|[0-9]\{12\}' "$tmp/out"; then
    ok "bench map --mode lazy: no ratio against modes not measured"
else
    ko "bench map --mode lazy: exit $rc: $(cat "$tmp/out" "$tmp/err")"
fi
# Tables and text fit 100 columns (notes wrap), every command's output.
fits() { # fits <args...>
    run "$@"
    w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/out")
    [ $rc = 0 ] && [ "$w" -le 100 ] && ok "mmport $*: $w columns (<= 100)" ||
        ko "mmport $*: exit $rc, $w columns: $(awk 'length($0) > 100' "$tmp/out" | head -3)"
}
fits bench clear --quick --sizes 4K,64K
fits info
fits demo --ram 64M --threads 1
fits bench map --reps 1
fits bench map --depth --reps 1
fits bench map --pattern vmalloc --pages 4 --reps 1
fits bench map --pattern fault --reps 1
fits bench map --pattern split --reps 1
fits bench fault --faults 4K --reps 1
fits bench dirty --size 1G
fits ptdump --format x86-ept --map 0:0:1G --map 0x40200000:0x80000000:8K:rx,wc
for c in $cmds; do fits "$c" --help; done
for b in clear dirty fault map; do fits bench "$b" --help; done

# ptdump --json and --image.
run ptdump --format x86-64 --json --map 0:0:2M --map 0x200000:0x400000:8K:rx
if [ $rc = 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["regions"]
assert d["format"] == "x86-64" and d["levels"] == 4, d
assert [(x["va"], x["pa"], x["size"], x["kind"], x["leaf_size"], x["prot"]) for x in r] == [("0x0", "0x0", 2<<20, "block", 2<<20, "rw---"), ("0x200000", "0x400000", 8192, "page", 4096, "r-x--")], r
assert d["usage"]["blocks"] == 1 and d["usage"]["pages"] == 2, d' "$tmp/out"; then
    ok "ptdump --json: geometry, regions (a 2M block, two 4K pages) and usage"
else
    ko "ptdump --json: exit $rc: $(head -c 400 "$tmp/out") $(cat "$tmp/err")"
fi
# A raw image of x86-64 tables at physical 0x100000.. (Intel SDM 3A 4.5:
# P=1, R/W=2, U/S=4, PS=0x80 in a PDE, XD=bit 63): PML4 at 0x101000 ->
# PDPT 0x102000 -> PD 0x103000: PD[0] a 2M page at 0x40000000 (rwx),
# PD[1] -> PT 0x104000 with two 4K pages at 0x50000000 (read-only, XD);
# PML4[511] points outside the image.
python3 - "$tmp/img" <<'PY'
import struct, sys
img = bytearray(0x5000)
def put(pa, idx, val): struct.pack_into("<Q", img, pa - 0x100000 + 8 * idx, val)
put(0x101000, 0, 0x102000 | 3); put(0x101000, 511, 0x7f000000 | 3)
put(0x102000, 0, 0x103000 | 3)
put(0x103000, 0, 0x40000000 | 0x80 | 3)
put(0x103000, 1, 0x104000 | 3)
put(0x104000, 0, 0x50000000 | 1 | (1 << 63)); put(0x104000, 1, 0x50001000 | 1 | (1 << 63))
open(sys.argv[1], "wb").write(img)
PY
run ptdump --image "$tmp/img" --base 0x100000 --root 0x101000 --format x86-64
expect "ptdump --image: decodes a raw x86-64 image (2M page, two 4K pages, a pointer outside)" \
    '^0x0000000000000000-0x00000000001fffff -> 0x0000040000000 2M block\(2M L2\) rwx-- normal-wb$' \
    '^0x0000000000200000-0x0000000000201fff -> 0x0000050000000 8K page\(4K L1\) r---- normal-wb$' \
    '^note: 1 table pointer outside the image'
run ptdump --image "$tmp/img" --base 0x100000 --root 0x101000 --format x86-64 --json
[ $rc = 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["regions"]) == 2 and d["pointers_outside_image"] == 1 and d["root"] == "0x101000" and d["base"] == "0x100000", d' "$tmp/out" &&
    ok "ptdump --image --json: 2 regions, root \"0x101000\", base \"0x100000\", 1 pointer outside" || ko "ptdump --image --json: $(cat "$tmp/out" "$tmp/err")"
says "--root 0x50000: outside the image" ptdump --image "$tmp/img" --base 0x100000 --root 0x50000 --format x86-64
says "--image needs --root" ptdump --image "$tmp/img"
says "--root 0x101800: not aligned" ptdump --image "$tmp/img" --base 0x100000 --root 0x101800
says "--no-blocks and --no-cont only go with --map" ptdump --image "$tmp/img" --base 0x100000 --root 0x101000 --no-blocks
run ptdump --image /dev/null --root 0
[ $rc = 1 ] && [ "$(cat "$tmp/err")" = "mmport ptdump: --image '/dev/null': empty file" ] &&
    ok "ptdump --image <empty>: '$(cat "$tmp/err")'" || ko "ptdump --image <empty>: exit $rc '$(cat "$tmp/err")'"

# ptdump: the leaves follow from alignment.
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
run demo --ram=64M
if [ $rc = 0 ] && grep -q '^verification passed' "$tmp/out"; then
    ok "demo --ram 64M: $(grep -c 'all as laid out' "$tmp/out") tables as laid out, RAM zero"
else
    ko "demo --ram 64M: exit $rc: $(tail -3 "$tmp/out") $(cat "$tmp/err")"
fi
run demo --ram 64M --json --threads 1
if [ $rc = 0 ] && python3 -m json.tool "$tmp/out" > /dev/null &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verify"]["ok"] is True and len(d["tables"]) == 3 and all(t["verify"]["bad"] == 0 and t["lazy"]["barriers"] <= 1 and t["balloon"]["lazy"]["flushes"] <= t["balloon"]["per_call"]["flushes"] for t in d["tables"])
h = lambda v: isinstance(v, str) and v.startswith("0x") and int(v, 16) >= 0
assert h(d["ram"]["host"]) and all(h(r["gpa"]) and h(r["pa"]) for t in d["tables"] for r in t["regions"]) and all(h(t["balloon"]["block"]) for t in d["tables"]), d["ram"]' "$tmp/out"; then
    ok "demo --json: parses, verify.ok, one barrier per lazy build, balloon flushes batched, addresses as \"0x...\""
else
    ko "demo --json: exit $rc: $(head -c 300 "$tmp/out") $(cat "$tmp/err")"
fi

# Progress: nothing when stderr is not a terminal; on a terminal (script(1))
# a line redrawn in place at most ~10 times a second after 0.5 s, erased
# before the results.
run demo --ram 64M --threads 1
[ ! -s "$tmp/err" ] && ok "demo piped: nothing on stderr (no progress off a terminal)" ||
    ko "demo piped: stderr: $(head -c 200 "$tmp/err")"
# The step must outlast the 0.5 s delay by a margin on any machine: a fast
# one finishes the first try too soon, so the repetitions grow until it
# runs 2 s (bounded).
if command -v script > /dev/null; then
    reps=3
    while :; do
        t0=$(date +%s.%N)
        script -qfc "$M bench clear --sizes 4K,64M,256M --reps $reps" /dev/null > "$tmp/tty" 2>&1
        t1=$(date +%s.%N)
        secs=$(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }')
        awk -v s="$secs" 'BEGIN { exit !(s < 2) }' && [ $reps -lt 96 ] || break
        reps=$((reps * 4))
    done
    draws=$(tr '\r' '\n' < "$tmp/tty" | grep -c '^  bench clear \[')
    if [ "$draws" -ge 1 ] && awk -v d="$draws" -v s="$secs" 'BEGIN { exit !(d <= 10 * s + 1) }' &&
        grep -q "$(printf '\r\033\[K')" "$tmp/tty"; then
        ok "bench clear on a terminal: $draws redraws in $secs s (<= 10/s), line erased"
    else
        ko "bench clear on a terminal: $draws redraws in $secs s: $(tr '\r' '\n' < "$tmp/tty" | head -5)"
    fi
    # The demo's first touch counts bytes: done/total of the RAM, rising,
    # with a rate; more RAM when a fast machine touched it within 0.5 s.
    for ram in 256M 1G; do
        script -qfc "$M demo --ram $ram --threads 2" /dev/null > "$tmp/tty" 2>&1
        tr '\r' '\n' < "$tmp/tty" | grep '^  first touch' > "$tmp/touch"
        [ -s "$tmp/touch" ] && break
    done
    if [ ! -s "$tmp/touch" ]; then
        echo "SKIP: demo first-touch progress: the first touch of $ram ran under 0.5 s (no line due)"
        skip=$((skip + 1))
    elif awk -v ram=$ram '{ if (!match($0, /[0-9.]+\/[0-9.]+ [MG]iB [ 0-9.]+ [MG]B\/s/)) exit 1
            split(substr($0, RSTART, RLENGTH), f, /[\/ ]+/)
            if (f[2] f[3] != (ram == "1G" ? "1.0GiB" : "256MiB") || f[1] + 0 < last) exit 1
            last = f[1] + 0 }' "$tmp/touch" && grep -q '^verification passed' "$tmp/tty"; then
        ok "demo --ram $ram on a terminal: first touch shows done/total and the rate ($(wc -l < "$tmp/touch" | tr -d ' ') redraws, e.g. '$(sed -n 2p "$tmp/touch" | sed 's/\x1b\[K//')')"
    else
        ko "demo --ram $ram on a terminal: first-touch lines: $(head -3 "$tmp/touch")"
    fi
else
    echo "SKIP: progress on a terminal: no script(1)"; skip=$((skip + 1))
fi

# SVG pictures: well-formed XML with the expected series / strips.
run bench clear --sizes 4K,64K,2M --reps 1 --plot "$tmp/clear.svg"
if [ $rc = 0 ] && python3 - "$tmp/clear.svg" "$tmp/out" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
groups = list(root.iter(ns + "g"))
series = [g.get("data-name") for g in groups if g.get("class") == "series"]
markers = [g.get("data-name") for g in groups if g.get("class") == "marker"]
rows = [l.split()[0] for l in open(sys.argv[2]) if l[:1].isalpha() and len(l.split()) == 4 and l.split()[1][0].isdigit() and not l.startswith("method")]
assert set(rows) <= set(series) and len(series) >= 4, (rows, series)
for g in groups:
    if g.get("class") == "series":
        pts = g.find(ns + "polyline").get("points").split()
        assert len(pts) == 3, (g.get("data-name"), pts)
assert any(m.startswith("cold_min") for m in markers), markers
print(len(series), "series", markers)
PY
then ok "bench clear --plot: valid SVG, a 3-point line per method of the table, cold_min marked"
else
    ko "bench clear --plot: exit $rc $(cat "$tmp/err")"
fi
run bench map --pattern vmalloc --flush noop --format x86-64 --pages 16 --reps 1 --plot "$tmp/map.svg"
if [ $rc = 0 ] && python3 - "$tmp/map.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
series = {g.get("data-name"): g for g in root.iter(ns + "g") if g.get("class") == "series"}
assert sorted(series) == ["x86-64 eager", "x86-64 lazy", "x86-64 naive"], sorted(series)
for g in series.values():
    assert len(g.find(ns + "polyline").get("points").split()) == 1
PY
then ok "bench map --pattern vmalloc --plot: valid SVG, one line per mode"
else
    ko "bench map --plot: exit $rc $(cat "$tmp/err")"
fi
# Bar charts (bench map, fault, dirty --plot): $tmp/bars.py reads one back
# as {(category, series): value} from the bars' tooltips, checking on the
# way that each bar sits in its series' panel and that within a panel a
# larger value has a taller bar.
cat > "$tmp/bars.py" <<'PY'
import xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
def bars(path):
    root = ET.parse(path).getroot()
    panels, out = [], {}
    for p in root.iter(NS + "g"):
        if p.get("class") != "panel":
            continue
        panels.append(p.get("data-name"))
        heights = []
        for g in p.iter(NS + "g"):
            if g.get("class") != "series":
                continue
            name = g.get("data-name")
            for r in g.findall(NS + "rect"):
                left, value = r.find(NS + "title").text.rsplit(": ", 1)
                assert left.endswith(" " + name), (left, name)
                v = float(value.split()[0])
                out[(left[:-len(name) - 1], name)] = v
                heights.append((v, float(r.get("height"))))
        heights.sort()
        assert all(a[1] <= b[1] + 0.05 for a, b in zip(heights, heights[1:])), heights
    title = root.find(NS + "text").text
    assert "family" in title or "implementer" in title, title  # the machine
    return panels, out
def same(got, want, tol):
    assert sorted(got) == sorted(want), set(got) ^ set(want)
    bad = [(k, got[k], want[k]) for k in want if abs(got[k] - want[k]) > tol * max(1, abs(want[k]))]
    assert not bad, bad
PY
bars_check() { # bars_check <description> <python using panels, got, rows>: on $tmp/out, $tmp/p.svg
    d=$1
    if [ $rc = 0 ] && python3 -c "import json, sys; sys.path.insert(0, sys.argv[1]); from bars import *
panels, got = bars(sys.argv[2]); rows = json.load(open(sys.argv[3]))
$2" "$tmp" "$tmp/p.svg" "$tmp/out"; then ok "$d"; else ko "$d: exit $rc $(cat "$tmp/err")"; fi
}
# The default bench map run: a panel per operation, a bar per format and
# policy with the figure of its JSON row.
run bench map --reps 1 --json --plot "$tmp/p.svg"
bars_check "bench map --plot: valid SVG, map/protect/unmap panels, a bar per JSON row with its figure, the machine in the title" '
assert panels == ["map", "protect", "unmap"], panels
same(got, {(r["format"], r["op"] + " " + r["leaf_policy"]): r["ns_per_page"] for r in rows}, 0.0006)'
run bench fault --faults 4K --reps 1 --json --plot "$tmp/p.svg"
bars_check "bench fault --plot: a panel per format, a bar per thread count and mode with its figure (M faults/s)" '
assert panels == ["arm64-s2-4k", "x86-ept"], panels
same(got, {("%d thread%s" % (r["threads"], "s" if r["threads"] > 1 else ""), r["format"] + " " + r["mode"]): r["faults_per_s"] / 1e6 for r in rows}, 1e-4)'
run bench dirty --size 1G --json --plot "$tmp/p.svg"
bars_check "bench dirty --plot: harvest and lookups per dirty fraction with their figures" '
assert panels == ["x86-64, hardware tracking"], panels
want = {}
for r in rows["rows"]:
    want[("%g%% dirty" % r["dirty_pct"], "harvest")] = r["harvest_ms"]
    want[("%g%% dirty" % r["dirty_pct"], "lookups")] = r["lookup_ms"]
same(got, want, 0.002)'
says "--plot does not apply to --depth" bench map --depth --plot "$tmp/x.svg"
run demo --ram 64M --threads 1 --plot "$tmp/demo.svg"
if [ $rc = 0 ] && python3 - "$tmp/demo.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
strips = [g for g in root.iter(ns + "g") if g.get("class") == "strip"]
assert len(strips) >= 3 and strips[0].get("data-name").startswith("guest space"), [g.get("data-name") for g in strips]
kinds = set()
for g in strips:
    rects = [r for r in g.findall(ns + "rect") if r.get("class")]
    frame = [r for r in g.findall(ns + "rect") if not r.get("class")][0]
    kinds |= {r.get("class") for r in rects}
    # the extents tile the strip: widths add up to the frame
    total = sum(float(r.get("width")) for r in rects)
    assert abs(total - float(frame.get("width"))) < 0.5 * len(rects) + 1, (g.get("data-name"), total)
assert {"block", "hole"} <= kinds and kinds <= {"block", "run", "page", "hole"}, kinds
print(len(strips), "strips", sorted(kinds))
PY
then ok "demo --plot: valid SVG, the guest space and every region as strips of block/run/page/hole"
else
    ko "demo --plot: exit $rc $(cat "$tmp/err")"
fi
run demo --ram 64M --plot /nonexistent/x.svg
[ $rc = 1 ] && [ "$(cat "$tmp/err")" = "mmport demo: --plot '/nonexistent/x.svg': No such file or directory" ] && [ ! -s "$tmp/out" ] &&
    ok "demo --plot <unwritable>: exit 1 before the demo runs, '$(cat "$tmp/err")'" ||
    ko "demo --plot <unwritable>: exit $rc, $(cat "$tmp/err") $(head -2 "$tmp/out")"
run bench clear --sizes 4K --reps 1 --plot /nonexistent/x.svg
[ $rc = 1 ] && grep -q "^mmport bench clear: --plot '/nonexistent/x.svg': No such file" "$tmp/err" && [ ! -s "$tmp/out" ] &&
    ok "bench clear --plot <unwritable>: exit 1 before measuring, '$(cat "$tmp/err")'" ||
    ko "bench clear --plot <unwritable>: exit $rc, $(cat "$tmp/err") $(head -2 "$tmp/out")"

# bench clear --json: one object on stdout, the ratios in it, nothing on stderr.
run bench clear -jq -s 4K,64K
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert len(d["results"]) >= 4 and {"size_bytes", "method", "threads", "gbps"} <= set(d["results"][0]), d["results"]
assert len(d["ratios"]) == 2 and all(isinstance(r["met"], bool) and r["ratio"] > 0 and r["target"] == 0.95 for r in d["ratios"]), d["ratios"]
assert d["notes"] and d["first_touch"] is None and d["policy"]["hot"], d' "$tmp/out"; then
    ok "bench clear -jq: one JSON object, results, 2 ratios with their targets, notes; stderr empty"
else
    ko "bench clear -jq: exit $rc: $(head -c 300 "$tmp/out") stderr: $(cat "$tmp/err")"
fi

# No internal notes (our issue numbers, design-file references, "the dev
# machine") in what users read; another project's issue cited as a source
# is fine.
notes=
for a in "info" "demo --ram 64M --threads 1" "help" "bench --help" "bench clear -q -s 4K" \
    "bench dirty --help" "bench fault --help" "bench map --help" $(for c in $cmds; do echo "$c:--help"; done); do
    # shellcheck disable=SC2086
    "$M" $(echo "$a" | tr ':' ' ') > "$tmp/out" 2>&1
    n=$(grep -Ei 'issue [0-9]|DESIGN facts|shared/DESIGN|dev machine|helper|session' "$tmp/out" |
        grep -v 'firedancer issue' | head -3)
    [ -z "$n" ] || notes="$notes [$a: $n]"
done
[ -z "$notes" ] && ok "info, demo, help, bench clear: no internal notes (issue numbers, design files)" ||
    ko "internal notes in user-facing text:$notes"

# JSON from info.
for a in "info --json"; do
    # shellcheck disable=SC2086
    run $a
    if [ $rc = 0 ] && python3 -m json.tool "$tmp/out" > /dev/null; then
        ok "mmport $a: valid JSON"
    else
        ko "mmport $a: exit $rc, not JSON: $(head -c 200 "$tmp/out")"
    fi
done
finish
