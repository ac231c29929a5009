#!/bin/sh
# Generates the section 3 man pages from the public headers' doc comments
# (scripts/gen-man3.awk, with gen-man3-errors.awk for the error clauses):
# a page per function, structure, enumeration and callback type, and the
# overview mmport(3) with every macro. scripts/check-man.py checks that
# every public identifier is described.
# Usage: gen-man3.sh <out dir> include/mmport/*.h
# MAN_DATE (YYYY-MM-DD) dates the pages; the Makefile derives it from
# SOURCE_DATE_EPOCH.
set -eu
out=$1; shift
mkdir -p "$out"
here=$(dirname "$0")
version=$(sed -n 's/^#define MMP_VERSION_STRING "\([^"]*\)".*/\1/p' "$(dirname "$1")/common.h")
awk -v date="${MAN_DATE:-$(date -u +%Y-%m-%d)}" -v version="$version" \
    -v CONTRACTS="mmp_pt_ops mmp_clear_opts mmp_pt_config mmp_track_opts" \
    -f "$here/gen-man3-errors.awk" -f "$here/gen-man3.awk" "$@" > "$out/.pages"
awk -v dir="$out" '/^@@FILE / { if (f) close(f); f = dir "/" $2; next } { print > f }' "$out/.pages"
rm -f "$out/.pages"
