#!/bin/sh
# The checks' own test: for each tests/planted/N-name.patch (a deliberate
# bug, described on its first line), copy the sources, apply the patch,
# build the fuzz replay there and require the checked-in corpus to catch
# it. A check that passes a broken engine has no teeth. Product code holds
# no test-only branches: a patch that no longer applies is a FAIL, to be
# remade against the code as it is now.
set -u
pass=0 fail=0
top=$(pwd)
for p in tests/planted/*.patch; do
    [ -f "$p" ] || continue
    n=$(basename "$p" .patch)
    what=$(sed -n '1s/^# *//p' "$p")
    b=$top/build/planted/$n
    rm -rf "$b"; mkdir -p "$b/src"
    # The sources as they are now (or, outside git, the source directories).
    if git ls-files > /dev/null 2>&1; then
        git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t "$b/src" 2>/dev/null
    else
        cp -r core arch host include mk fuzz tests tools "$b/src"
    fi
    mkdir -p "$b/src/build" && cp -r build/include-ao "$b/src/build/" && cp config.mak "$b/src/"
    if ! (cd "$b/src" && patch -p1 -s --no-backup-if-mismatch < "$top/$p") > "$b.log" 2>&1; then
        echo "FAIL: $n: the patch no longer applies ($(head -1 "$b.log"))"; fail=$((fail + 1)); continue
    fi
    if ! make --no-print-directory -C "$b/src" -f mk/build.mk B="$b/out" ARCH="$(uname -m)" \
        CC=gcc fuzz >> "$b.log" 2>&1; then
        tail -5 "$b.log"; echo "FAIL: $n: building it"; fail=$((fail + 1)); continue
    fi
    if out=$("$b/out/fuzz/fuzz_pt" fuzz/corpus/pt 2>&1); then
        echo "FAIL: $n ($what) went unnoticed by the fuzz replay"; fail=$((fail + 1))
    else
        echo "PASS: $n ($what) caught: $(echo "$out" | grep 'fuzz_pt:' | head -1 | cut -c1-160)"
        pass=$((pass + 1))
    fi
done
[ -n "${MMPORT_TEST_RESULTS:-}" ] && echo "$pass $fail 0" > "$MMPORT_TEST_RESULTS"
[ $fail = 0 ] && [ $pass -gt 0 ]
