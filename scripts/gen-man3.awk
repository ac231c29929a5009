# Man pages from the public headers (POSIX awk; run by gen-man3.sh).
# One page per MMP_API function and per contract struct (CONTRACTS), and
# mmport(3), the overview. Doc comments are plain prose with two
# conventions the pages rely on:
#   "Errors: -EINVAL (why); -ENOMEM (why)."    (or "@return 0; -MMP_EINVAL
#   for ...; ..."): each error name with its reason; "-EINVAL, -ERANGE as
#   for map" and "as mmp_pt_walk()" take the reasons of another function.
#   Error names are written as -EX or -MMP_EX; the pages say MMP_EX.
# Output: pages on stdout, each after a line "@@FILE name.3".
# Variables: date, version, CONTRACTS (space-separated names).

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

# Text to roff: escapes first, then font changes for @p and calls.
function roff(s,    out, name) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    s = errnames(s)
    while (match(s, /@p [A-Za-z_][A-Za-z0-9_]*/)) {
        name = substr(s, RSTART + 3, RLENGTH - 3)
        s = substr(s, 1, RSTART - 1) "\\fI" name "\\fP" substr(s, RSTART + RLENGTH)
    }
    out = ""
    while (match(s, /mmp_[a-z0-9_]+\(\)/)) {
        out = out substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART, RLENGTH - 2) "\\fP()"
        s = substr(s, RSTART + RLENGTH)
    }
    s = out s
    sub(/^[.']/, "\\\\\\&&", s)
    return s
}

# "\-EINVAL" / "\-MMP_EINVAL" (already escaped) -> "\-MMP_EINVAL", bold.
function errnames(s,    out, n) {
    out = ""
    while (match(s, /\\-(MMP_)?E[A-Z][A-Z]+/)) {
        n = substr(s, RSTART + 2, RLENGTH - 2)
        sub(/^MMP_/, "", n)
        out = out substr(s, 1, RSTART - 1) "\\fB\\-MMP_" n "\\fP"
        s = substr(s, RSTART + RLENGTH)
    }
    return out s
}

# Prose lines to roff paragraphs: blank line = new paragraph, "- " = bullet.
function paragraphs(text,    n, L, i, line, started) {
    n = split(text, L, "\n")
    started = 0
    for (i = 1; i <= n; i++) {
        line = L[i]
        if (trim(line) == "") { if (started) print ".PP"; started = 0; continue }
        if (line ~ /^[ \t]*- /) { sub(/^[ \t]*- /, "", line); print ".IP \\(bu 2" }
        print roff(trim(line))
        started = 1
    }
}

# Splits a doc comment into description and the error clause.
function split_doc(doc, fn,    flat, p, tail, m, succ) {
    flat = doc
    gsub(/\n/, " ", flat); gsub(/[ \t]+/, " ", flat)
    DESC[fn] = doc; SUCC[fn] = ""; ERRTXT[fn] = ""
    p = match(flat, /@return |Errors:? /)
    if (!p)
        return
    tail = substr(flat, RSTART + RLENGTH)
    # keep the description as written (with its line breaks) up to the clause
    DESC[fn] = cut_doc(doc, substr(flat, RSTART, RLENGTH))
    if (substr(flat, RSTART, 1) == "@") {
        m = match(tail, /-(MMP_)?E[A-Z][A-Z]+/)
        succ = m ? substr(tail, 1, m - 1) : tail
        ERRTXT[fn] = m ? substr(tail, m) : ""
        succ = trim(succ); sub(/[;,]$/, "", succ); sub(/,? or$/, "", succ)
        succ = trim(succ); sub(/[;,.]$/, "", succ)
        SUCC[fn] = succ
        if (match(succ, /^as [a-z_]+\(\)$/)) {
            # "@return as mmp_clear(); ...": its return value and errors
            REFS[fn] = " " substr(succ, 4, length(succ) - 5) ":*"
            SUCC[fn] = ""
        }
    } else
        ERRTXT[fn] = tail
}

# The part of doc before the first occurrence of marker (words may be
# split over lines in doc; marker has single spaces).
function cut_doc(doc, marker,    i, flat, c, want, out) {
    want = index(doc, marker)
    if (want)
        return substr(doc, 1, want - 1)
    # marker spans a line break: find it word by word
    sub(/ .*/, "", marker)
    want = index(doc, marker)
    return want ? substr(doc, 1, want - 1) : doc
}

# Error clause -> E_NAME[fn, i], E_WHY[fn, i], E_N[fn]; notes -> RVNOTE[fn].
function parse_errors(fn,    t, items, seps, n, i, depth, c, cur, j, names, why, ref, k, nn, pend, npend, sent) {
    t = ERRTXT[fn]
    n = 0; depth = 0; cur = ""
    for (i = 1; i <= length(t); i++) {
        c = substr(t, i, 1)
        if (c == "(") depth++
        if (c == ")") depth--
        if (depth == 0 && c == ";") { items[++n] = cur; seps[n] = ";"; cur = ""; continue }
        if (depth == 0 && c == "," && match(substr(t, i + 1), /^ (or )?-(MMP_)?E[A-Z][A-Z]+/)) {
            items[++n] = cur; seps[n] = ","; cur = ""; continue
        }
        if (depth == 0 && c == "." && match(substr(t, i + 1), /^ [A-Za-z]/)) {
            # a sentence after the error list belongs to the description
            NOTES[fn] = trim(substr(t, i + 1))
            break
        }
        cur = cur c
    }
    if (trim(cur) != "") { items[++n] = cur; seps[n] = ";" }
    npend = 0
    for (i = 1; i <= n; i++) {
        cur = trim(items[i]); sub(/\.$/, "", cur)
        sub(/^or /, "", cur); sub(/^else /, "", cur)
        nn = 0
        while (match(cur, /^-(MMP_)?E[A-Z][A-Z]+/)) {
            names[++nn] = substr(cur, RSTART + 1, RLENGTH - 1)
            sub(/^MMP_/, "", names[nn])
            cur = trim(substr(cur, RLENGTH + 1))
            sub(/^(,|or|and) */, "", cur)
        }
        ref = ""
        if (match(cur, /^as (for )?[a-z_]+(\(\))?/)) {
            ref = substr(cur, RSTART, RLENGTH)
            sub(/^as (for )?/, "", ref); sub(/\(\)$/, "", ref)
            cur = trim(substr(cur, RLENGTH + 1))
            sub(/^, */, "", cur)
            if (match(cur, /^plus /)) {
                # "as unmap, plus -EINVAL for unknown attrs": one more item
                items[n + 1] = substr(cur, 6); seps[n + 1] = ";"; n++
                cur = ""
            }
        }
        if (nn == 0 && ref == "") {
            if (cur != "") RVNOTE[fn] = cur
            continue
        }
        for (k = 1; k <= nn; k++) pend[++npend] = names[k]
        if (ref != "") {
            REFS[fn] = REFS[fn] " " ref ":" (npend ? join(pend, npend) : "*")
            npend = 0
            continue
        }
        if (cur == "" && seps[i] == "," && i < n)
            continue # "-EINVAL, -ERANGE (why)": the reason follows
        why = cur
        if (why ~ /^\(.*\)$/) why = substr(why, 2, length(why) - 2)
        sub(/^(if|for|when) /, "", why)
        for (k = 1; k <= npend; k++) add_err(fn, pend[k], why)
        npend = 0
    }
}

function join(a, n,    s, i) { s = a[1]; for (i = 2; i <= n; i++) s = s "," a[i]; return s }

function add_err(fn, name, why,    i) {
    for (i = 1; i <= E_N[fn]; i++)
        if (E_NAME[fn, i] == name) {
            if (why != "" && index(E_WHY[fn, i], why) == 0)
                E_WHY[fn, i] = E_WHY[fn, i] (E_WHY[fn, i] != "" ? "; " : "") why
            return
        }
    E_N[fn]++
    E_NAME[fn, E_N[fn]] = name
    E_WHY[fn, E_N[fn]] = why
}

# "map" in mmp_pt_unmap's doc is mmp_pt_map; "init" mmp_pt_init.
function resolve(fn, word,    pre) {
    if (word in DECL) return word
    pre = fn; sub(/^mmp_[a-z0-9]+_/, "", pre); pre = substr(fn, 1, length(fn) - length(pre))
    if ((pre word) in DECL) return pre word
    return ""
}

function apply_refs(fn,    n, R, i, r, which, target, k, W, nw, j) {
    if (DONE[fn]) return
    DONE[fn] = 1
    n = split(REFS[fn], R, " ")
    for (i = 1; i <= n; i++) {
        r = R[i]; which = r; sub(/^[^:]*:/, "", which); sub(/:.*/, "", r)
        target = resolve(fn, r)
        if (target == "") { print "gen-man3: " fn ": unknown reference '" r "'" > "/dev/stderr"; BAD = 1; continue }
        apply_refs(target)
        if (SUCC[fn] == "" && SUCC[target] != "") SUCC[fn] = SUCC[target]
        nw = split(which, W, ",")
        for (k = 1; k <= E_N[target]; k++)
            for (j = 1; j <= nw; j++)
                if (W[j] == "*" || W[j] == E_NAME[target, k])
                    add_err(fn, E_NAME[target, k], E_WHY[target, k])
    }
}

function summary(doc,    s) {
    s = doc
    gsub(/\n/, " ", s); gsub(/[ \t]+/, " ", s); s = trim(s)
    if (match(s, /\. [A-Z@]/)) s = substr(s, 1, RSTART - 1)
    sub(/\.$/, "", s)
    gsub(/@p /, "", s)
    # NAME lines stay short: the first clause of a long first sentence
    if (length(s) > 64 && match(s, / \(|; |: /)) s = substr(s, 1, RSTART - 1)
    return s
}

function header(name, sum) {
    print ".\\\" generated by scripts/gen-man3.sh from include/mmport/" HDR[name] "; do not edit"
    print ".TH " toupper(name) " 3 \"" date "\" \"mmport " version "\" \"mmport library\""
    print ".SH NAME"
    print name " \\- " roff(sum)
}

function synopsis_head(name) {
    print ".SH SYNOPSIS"
    print ".nf"
    print ".B #include <mmport/" HDR[name] ">"
    print ".PP"
}

function link_line() {
    print ".fi"
    print ".PP"
    print "Compile and link with \\fI$(pkg\\-config \\-\\-cflags \\-\\-libs mmport)\\fP."
}

function see_also(name,    s, i, sep) {
    print ".SH SEE ALSO"
    s = ".BR mmport (3)"
    for (i = 1; i <= NF_ALL; i++)
        if (ALL[i] != name && HDR[ALL[i]] == HDR[name])
            s = s ",\n.BR " ALL[i] " (3)"
    print s
}

function fn_page(fn,    f, ret, i, rv) {
    print "@@FILE " fn ".3"
    ret = DECL[fn]; sub(/[ \t]*mmp_[a-z0-9_]+\(.*/, "", ret); sub(/^MMP_API /, "", ret)
    ret = trim(ret)
    {
        header(fn, summary(DESC[fn]))
        synopsis_head(fn)
        n = split(DECL[fn], D, "\n")
        for (i = 1; i <= n; i++) {
            line = D[i]; sub(/^MMP_API /, "", line)
            print ".B \"" roffq(line) "\""
        }
        link_line()
        print ".SH DESCRIPTION"
        paragraphs(DESC[fn])
        if (NOTES[fn] != "") { print ".PP"; print roff(NOTES[fn]) }
        print ".SH RETURN VALUE"
        if (ret == "void") rv = "None."
        else if (E_N[fn]) {
            rv = (SUCC[fn] == "" || SUCC[fn] == "0") ? "0 on success" : SUCC[fn]
            rv = upfirst(rv) "; on failure a negative error value, one of the"
            rv = rv " MMP_E* constants below negated (-MMP_EINVAL), equal to"
            rv = rv " the Linux errno values."
            if (RVNOTE[fn] != "") rv = rv " Also: " RVNOTE[fn] "."
        } else
            rv = upfirst(summary(DESC[fn])) "."
        print roffkeep(rv)
        print ".SH ERRORS"
        if (!E_N[fn]) {
            print (DESC[fn] ~ /[Nn]ever fails/ || ret == "void" || ret ~ /\*$/ || ret == "unsigned" || ret == "uint64_t") ? \
                "This function does not fail." : "None documented."
        }
        for (i = 1; i <= E_N[fn]; i++) {
            print ".TP"
            print ".B MMP_" E_NAME[fn, i]
            why = E_WHY[fn, i]
            if (why == "") why = ERRDEF[E_NAME[fn, i]]
            print roff(why ".")
        }
        see_also(fn)
    }
}

function upfirst(s) { return toupper(substr(s, 1, 1)) substr(s, 2) }
# For text inside .B "...": double quotes doubled.
function roffq(s) { gsub(/\\/, "\\e", s); gsub(/"/, "\"\"", s); gsub(/-/, "\\-", s); return s }
# roff() but the generated MMP_E* words stay as they are.
function roffkeep(s) { gsub(/-/, "\\-", s); return s }

function struct_page(st,    f, i, n, D) {
    print "@@FILE " st ".3"
    {
        header(st, "struct " st ": " summary(SDOC[st]))
        synopsis_head(st)
        n = split(SDECL[st], D, "\n")
        for (i = 1; i <= n; i++) print ".B \"" roffq(D[i]) "\""
        link_line()
        print ".SH DESCRIPTION"
        paragraphs(SDOC[st])
        if (HCONTRACT[HDR[st]] != "") {
            print ".PP"
            print "The contract of " roff(HDR[st]) ", which every function of it keeps:"
            paragraphs(HCONTRACT[HDR[st]])
        }
        print ".SS Members"
        for (i = 1; i <= SM_N[st]; i++) {
            print ".TP"
            print ".B " SM_NAME[st, i]
            if (SM_DOC[st, i] != "") paragraphs(SM_DOC[st, i])
            else if (SM_ENUM[st, i] != "" && ENUMV[SM_ENUM[st, i]] != "") {
                print "One of:"
                paragraphs(ENUMV[SM_ENUM[st, i]])
            } else print "(no description)"
        }
        print ".SH RETURN VALUE"
        print "Not applicable: a structure."
        print ".SH ERRORS"
        print "The functions taking it list theirs."
        see_also(st)
    }
}

function doc_text(raw,    s) {
    s = raw
    sub(/^[ \t]*\/\*\*<?[ \t]?/, "", s); sub(/[ \t]*\*\/.*$/, "", s)
    sub(/^[ \t]*\*[ \t]?/, "", s)
    return s
}

BEGIN { ncontract = split(CONTRACTS, C, " "); for (i = 1; i <= ncontract; i++) ISCONTRACT[C[i]] = 1 }

FNR == 1 { hdr = FILENAME; sub(/.*\//, "", hdr); first = 1; indoc = 0; doc = ""; instruct = ""; inenum = "" }

# #define MMP_ENOMEM 12 /**< an allocation failed; nothing changed */
/^#define MMP_E[A-Z]+ [0-9]+/ {
    n = $2; sub(/^MMP_E/, "E", n)
    d = $0; sub(/.*\/\*\*< */, "", d); sub(/ *\*\/.*/, "", d)
    ERRDEF[n] = d
}

indoc {
    line = $0
    done = (line ~ /\*\//)
    doc = doc doc_text(line) (done ? "" : "\n")
    if (done) { indoc = 0; finish_doc() }
    next
}

/^[ \t]*\/\*\*[^<]/ || /^[ \t]*\/\*\*$/ {
    line = $0
    if (line ~ /\*\//) { doc = doc_text(line); finish_doc() }
    else { indoc = 1; doc = doc_text(line) "\n" }
    next
}

instruct != "" {
    line = $0
    if (line ~ /^};/) {
        SDECL[instruct] = SDECL[instruct] "};"
        instruct = ""; pending = ""
        next
    }
    code = line; sub(/[ \t]*\/\*.*/, "", code)
    if (trim(code) == "") next
    SDECL[instruct] = SDECL[instruct] code "\n"
    m = code
    if (m ~ /\(\*/) { sub(/\)\(.*/, "", m); sub(/.*\(\*/, "", m) }
    else { sub(/;.*/, "", m); sub(/.*[ *]/, "", m) }
    i = ++SM_N[instruct]
    SM_NAME[instruct, i] = m
    SM_DOC[instruct, i] = pending
    if (line ~ /\/\*\*</) SM_DOC[instruct, i] = doc_text(substr(line, index(line, "/**<")))
    if (code ~ /^[ \t]*enum [a-z_]+ /) { e = code; sub(/^[ \t]*enum /, "", e); sub(/ .*/, "", e); SM_ENUM[instruct, i] = e }
    pending = ""
    next
}

inenum != "" {
    if ($0 ~ /^};/) { inenum = ""; next }
    if ($0 ~ /^[ \t]*MMP_[A-Z0-9_]+/) {
        v = $0; sub(/^[ \t]*/, "", v); sub(/[ =,].*/, "", v)
        d = ($0 ~ /\/\*\*</) ? doc_text(substr($0, index($0, "/**<"))) : ""
        ENUMV[inenum] = ENUMV[inenum] "- " v (d != "" ? ": " d : "") "\n"
    }
    next
}

/^enum mmp_[a-z_]+ \{/ { inenum = $2; pending = ""; next }

/^struct mmp_[a-z_0-9]+ \{/ {
    st = $2
    if (st in ISCONTRACT) {
        instruct = st; HDR[st] = hdr; SDOC[st] = pending
        SDECL[st] = "struct " st " {\n"
        ALL[++NF_ALL] = st
    }
    pending = ""
    next
}

/MMP_API/ && !/^#/ {
    decl = $0
    while (decl !~ /;/ && (getline nxt) > 0) decl = decl "\n" nxt
    name = decl; sub(/\(.*/, "", name); gsub(/\n/, " ", name); sub(/.*[ *]/, "", name)
    DECL[name] = decl; HDR[name] = hdr
    ALL[++NF_ALL] = name
    split_doc(pending, name)
    pending = ""
    next
}

/^[ \t]*$/ { next }
{ pending = "" }

function finish_doc() {
    if (first) {
        first = 0
        sub(/@file [^\n]*\n/, "", doc)
        HDOC[hdr] = doc
        HORDER[++NH] = hdr
        if (match(doc, /Contract[^\n]*:\n/)) {
            c = substr(doc, RSTART + RLENGTH)
            if (match(c, /\n[ \t]*\n/)) c = substr(c, 1, RSTART - 1)
            HCONTRACT[hdr] = c
        }
        pending = ""
        return
    }
    pending = doc
}

END {
    for (i = 1; i <= NF_ALL; i++) if (ALL[i] in DECL) parse_errors(ALL[i])
    for (i = 1; i <= NF_ALL; i++) if (ALL[i] in DECL) apply_refs(ALL[i])
    for (i = 1; i <= NF_ALL; i++) {
        if (ALL[i] in DECL) fn_page(ALL[i])
        else struct_page(ALL[i])
    }
    # mmport(3): the overview, each header's file comment and its pages.
    print "@@FILE mmport.3"
    {
        print ".\\\" generated by scripts/gen-man3.sh from include/mmport/*.h; do not edit"
        print ".TH MMPORT 3 \"" date "\" \"mmport " version "\" \"mmport library\""
        print ".SH NAME"
        print "mmport \\- fast page clearing and portable page tables for hypervisors"
        print ".SH SYNOPSIS"
        print ".nf"
        print ".B #include <mmport/mmport.h>"
        link_line()
        print ".SH DESCRIPTION"
        print "Every call that can fail returns a negative error value: one of the"
        print "MMP_E* constants of <mmport/common.h>, negated (equal to Linux's errno"
        print "values). Each function and contract structure has its own page."
        for (h = 1; h <= NH; h++) {
            print ".SS <mmport/" HORDER[h] ">"
            paragraphs(HDOC[HORDER[h]])
            s = ""
            for (i = 1; i <= NF_ALL; i++)
                if (HDR[ALL[i]] == HORDER[h]) s = s (s == "" ? "" : ",\n") ".BR " ALL[i] " (3)"
            if (s != "") { print ".PP"; print "Pages:"; print s }
        }
        print ".SH ERRORS"
        for (n in ERRDEF) ERRLIST[++ne] = n
        for (i = 1; i <= ne; i++) for (j = i + 1; j <= ne; j++) if (ERRLIST[j] < ERRLIST[i]) { t = ERRLIST[i]; ERRLIST[i] = ERRLIST[j]; ERRLIST[j] = t }
        for (i = 1; i <= ne; i++) { print ".TP"; print ".B MMP_" ERRLIST[i]; print roff(upfirst(ERRDEF[ERRLIST[i]]) ".") }
        print ".SH SEE ALSO"
        print ".BR mmport (1)"
    }
    exit BAD
}
