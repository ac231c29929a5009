#!/bin/sh
# The shared library's export list: only mmp_* symbols leave it, each with a
# version node of mk/exports.map (MMPORT_x.y), and every MMP_API function
# declared in include/mmport/ is exported.
# Usage: check-exports.sh <libmmport.so>
set -eu
so=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
# Defined dynamic symbols as name@version (readelf keeps the version).
nm -D --defined-only --with-symbol-versions "$so" |
    awk '$2 ~ /[A-Z]/ && $2 != "A" { print $3 }' | sort > "$tmp/exported"
bad=$(sed 's/@.*//' "$tmp/exported" | grep -v '^mmp_' || true)
[ -z "$bad" ] || { echo "FAIL: exported outside mmp_*:" $bad; rc=1; }
unversioned=$(grep -v '@MMPORT_[0-9][0-9.]*$' "$tmp/exported" || true)
[ -z "$unversioned" ] || { echo "FAIL: exported without an MMPORT_x.y version node:" $unversioned; rc=1; }
# Every MMP_API function of the public headers.
awk '/MMP_API/ && !/^#/ { decl = $0; while (decl !~ /\(/ && (getline nxt) > 0) decl = decl " " nxt
                 sub(/\(.*/, "", decl); n = split(decl, w, /[ *]+/); print w[n] }' \
    include/mmport/*.h | sort -u > "$tmp/declared"
sed 's/@.*//' "$tmp/exported" | sort -u > "$tmp/names"
missing=$(comm -23 "$tmp/declared" "$tmp/names")
[ -z "$missing" ] || { echo "FAIL: declared MMP_API but not exported (add to a node of mk/exports.map):" $missing; rc=1; }
[ $rc = 0 ] && echo "PASS: $(wc -l < "$tmp/names") symbols exported, all mmp_*, all versioned ($(sed 's/.*@//' "$tmp/exported" | sort -u | tr '\n' ' ')), every MMP_API function among them"
exit $rc
