#!/bin/sh
# The checks' own test: every tests/planted/N-name.patch plants one bug (its
# first line, "# planted bug: ...", says which) in a copy of the tree,
# build/planted/N-name/src (product code holds no test-only branches); the
# page-table fuzz replays built there (fuzz_pt, then fuzz_pt_mem: corrupted
# tables) must catch it on the checked-in corpus, with a message from the
# fuzzers' models. A check that passes a broken engine has
# no teeth; a patch that no longer applies is a failure too (remake it
# against the current engine).
set -u
. scripts/check-step.sh
top=$(pwd)
# One unpatched copy is built first; each planted copy starts from it with
# its objects (timestamps kept), so only what a patch touches, and what
# includes it, is compiled again.
base=build/planted/base
rm -rf build/planted
mkdir -p "$base/src"
# The sources as they are now (plus config.mak); outside git: the source dirs.
if git ls-files -c -o --exclude-standard 2>/dev/null |
    while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done > "$base/files" &&
    [ -s "$base/files" ]; then
    tar -cf - -T "$base/files" | tar -xf - -C "$base/src"
else
    cp -R core arch include host fuzz tests mk Makefile "$base/src/"
fi
cp config.mak "$base/src/"
fuzz_build() { # fuzz_build <copy dir>
    make --no-print-directory -j2 -C "$1/src" -f mk/build.mk B=build ARCH="$(uname -m)" CC=gcc \
        fuzz > "$1/build.log" 2>&1
}
if ! fuzz_build "$base"; then
    tail -5 "$base/build.log"
    ko "planted: building the unpatched fuzz replay"
    step_results
    exit 1
fi
for p in $(ls tests/planted/*.patch 2>/dev/null | sort -V); do
    [ -f "$p" ] || { ko "no planted bugs in tests/planted"; break; }
    n=$(basename "$p" .patch)
    what=$(sed -n '1s/^# *//p' "$p")
    d=build/planted/$n
    cp -a "$base" "$d"
    if ! (cd "$d/src" && patch -p1 -s --dry-run < "$top/$p" > "$top/$d/patch.log" 2>&1); then
        cat "$d/patch.log"
        ko "planted $n: the patch no longer applies to this tree, remake it ($what)"
        continue
    fi
    (cd "$d/src" && patch -p1 -s < "$top/$p")
    if ! fuzz_build "$d"; then
        tail -5 "$d/build.log"
        ko "planted $n: building the fuzz replay with it ($what)"
        continue
    fi
    for tg in pt pt_mem; do
        out=$( ("$d/src/build/fuzz/fuzz_$tg" fuzz/corpus/$tg; exit $?) 2>&1)
        rc=$?
        [ $rc = 0 ] || break
    done
    msg=$(echo "$out" | grep "fuzz_$tg:" | head -1 | cut -c1-240)
    if [ $rc = 0 ]; then
        ko "planted $n went unnoticed by the fuzz replay ($what)"
    elif [ -z "$msg" ]; then
        echo "$out" | tail -5
        ko "planted $n: the replay failed without a model's message ($what)"
    else
        ok "planted $n caught ($what): $msg"
    fi
done
step_results
