#!/bin/sh
# The reference is complete: every function, structure member, enum value,
# typedef and macro of include/mmport/*.h is described in a man page of
# `make man` (scripts/check-man.py, identifiers from clang's AST). Then
# the check must fail when one is not: undocumented declarations planted
# in a copy of the headers are each reported, and nothing else.
set -u
. scripts/check-step.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Its own GEN_B: other steps install from this tree at the same time.
if make --no-print-directory man GEN_B="$tmp/gen" > "$tmp/log" 2>&1; then
    if python3 scripts/check-man.py include "$tmp/gen/man/man3" > "$tmp/out" 2>&1; then
        ok "$(cat "$tmp/out")"
    else
        cat "$tmp/out"; ko "make man: public identifiers without a description"
    fi
else
    cat "$tmp/log"; ko "make man"
fi

# planted <description> <expected lines>: generates the pages of
# $tmp/inc and wants check-man.py to fail with exactly those lines.
planted() {
    d=$1; want=$2
    rm -rf "$tmp/man3"
    if ! scripts/gen-man3.sh "$tmp/man3" "$tmp"/inc/mmport/*.h > "$tmp/log" 2>&1; then
        ko "$d: gen-man3.sh failed: $(cat "$tmp/log")"
        return
    fi
    python3 scripts/check-man.py "$tmp/inc" "$tmp/man3" > "$tmp/out" 2>&1; rc=$?
    got=$(sed -n 's/^  //p' "$tmp/out")
    if [ $rc = 1 ] && [ "$got" = "$want" ]; then
        ok "$d: reported ($(echo "$got" | wc -l | tr -d ' ') missing)"
    else
        ko "$d: exit $rc (want 1), reported: $got; want: $want"
    fi
}

# A header with one documented and one undocumented identifier of each kind.
mkdir -p "$tmp/inc"
cp -r include/mmport "$tmp/inc/"
cat > "$tmp/inc/mmport/planted.h" <<'EOF'
/* SPDX-License-Identifier: MIT */
/**
 * @file planted.h
 * Declarations for the man check: half of them have no doc comment.
 */
#ifndef MMPORT_PLANTED_H
#define MMPORT_PLANTED_H

#include <mmport/common.h>

/** Documented. */
#define MMP_PLANTED_DOC 1

#define MMP_PLANTED_BARE 2

/** Documented. */
enum mmp_planted_kind {
    MMP_PLANTED_A = 1, /**< documented */
    MMP_PLANTED_B = 2,
};

/** Documented. */
struct mmp_planted {
    int documented; /**< documented */
    int bare;
};

/** Documented. */
MMP_API int mmp_planted_doc(void);

MMP_API int mmp_planted_bare(void);

typedef int (*mmp_planted_fn)(void);

#endif
EOF
planted "a new header, one undocumented identifier of each kind" "$(cat <<'EOF'
value mmp_planted_kind MMP_PLANTED_B: not described in mmp_planted_kind(3)
member mmp_planted::bare: not described in mmp_planted(3)
function mmp_planted_bare: no DESCRIPTION text in mmp_planted_bare(3)
typedef mmp_planted_fn: no DESCRIPTION text in mmp_planted_fn(3)
macro MMP_PLANTED_BARE: described in no page
EOF
)"

# An existing flag and member losing their doc comments.
rm "$tmp/inc/mmport/planted.h"
sed -i 's|^\(    MMP_MAP_NO_BLOCK = 1u << 1,\).*|\1|; s|^\(    uint64_t root;\) */\*\*<.*|\1|' \
    "$tmp/inc/mmport/pt.h"
if grep -q '^    MMP_MAP_NO_BLOCK = 1u << 1,$' "$tmp/inc/mmport/pt.h" &&
    grep -q '^    uint64_t root;$' "$tmp/inc/mmport/pt.h"; then
    planted "MMP_MAP_NO_BLOCK and mmp_pt_regs::root without their doc comments" "$(cat <<'EOF'
value mmp_pt_map_flag MMP_MAP_NO_BLOCK: not described in mmp_pt_map_flag(3)
member mmp_pt_regs::root: not described in mmp_pt_regs(3)
EOF
)"
else
    ko "the plant did not apply: pt.h no longer declares MMP_MAP_NO_BLOCK / mmp_pt_regs::root as this step expects"
fi
step_results
