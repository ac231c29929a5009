#!/bin/sh
# Generates mmport(3) from the public headers: each header's file comment
# becomes a section, each MMP_API function its prototype and doc comment.
# Usage: gen-man3.sh <out.3> include/mmport/*.h
set -eu
out=$1; shift
version=$(sed -n 's/^#define MMP_VERSION_STRING "\(.*\)"/\1/p' include/mmport/common.h)
{
    echo ".TH MMPORT 3 \"$(date -u +%Y-%m-%d)\" \"mmport $version\" \"mmport library\""
    echo ".SH NAME"
    echo "mmport \\- fast page clearing and portable page tables for hypervisors"
    echo ".SH SYNOPSIS"
    echo ".B #include <mmport/mmport.h>"
    echo ".PP"
    printf '%s\n' 'Link with \fB$(pkg-config \-\-libs mmport)\fR.'
    echo ".SH ERRORS"
    echo "Every call that can fail returns a negative errno value (MMP_EINVAL,"
    echo "MMP_ENOMEM, ...; equal to Linux's) and changes nothing when it fails."
    for h; do
        awk -v hdr="$(basename "$h")" '
        function flush_doc(s) { gsub(/^[ \t]*\/?\*+\/?[ \t]?/, "", s); return s }
        function roff(s) { sub(/^[ \t]+/, "", s); gsub(/@p /, "", s); gsub(/\\/, "\\\\e", s); sub(/^[.'"'"']/, "\\\\\\&&", s); return s }
        BEGIN { indoc = 0; doc = ""; first = 1 }
        /^[ \t]*\/\*\*/ { indoc = 1; doc = ""; }
        indoc {
            line = $0
            done = (line ~ /\*\//)
            sub(/\*\/.*/, "", line)
            line = flush_doc(line)
            if (line ~ /@file/) { line = "" }
            doc = doc line "\n"
            if (done) {
                indoc = 0
                if (first) {
                    first = 0
                    print ".SH \"" toupper(hdr) "\""
                    n = split(doc, L, "\n")
                    for (i = 1; i <= n; i++) if (L[i] != "") print roff(L[i])
                    doc = ""
                }
                pending = doc
            }
            next
        }
        pending != "" && /MMP_API/ {
            decl = $0
            while (decl !~ /;/ && (getline nxt) > 0) decl = decl "\n" nxt
            gsub(/MMP_API /, "", decl)
            name = decl
            sub(/\(.*/, "", name); gsub(/.*[ *]/, "", name)
            print ".SS " name
            print ".nf"
            print ".B " roff(decl)
            print ".fi"
            print ".PP"
            n = split(pending, L, "\n")
            for (i = 1; i <= n; i++) if (L[i] != "") print roff(L[i])
            pending = ""
            next
        }
        /^[ \t]*$/ { next }
        { if ($0 !~ /^[ \t]*\*/) pending = pending }
        ' "$h"
    done
    echo ".SH SEE ALSO"
    echo "mmport(1)"
} > "$out"
