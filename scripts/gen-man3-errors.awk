# The error clause of a function's doc comment (POSIX awk; included by
# scripts/gen-man3.sh before gen-man3.awk, which calls split_doc(),
# parse_errors() and apply_refs()).
#   "Errors: -EINVAL (why); -ENOMEM (why)."    (or "@return 0; -MMP_EINVAL
#   for ...; ..."): each error name with its reason; "-EINVAL, -ERANGE as
#   for map" and "as mmp_pt_walk()" take the reasons of another function.
#   Error names are written as -EX or -MMP_EX; the pages say MMP_EX.
# Fills DESC[fn] (the description before the clause), SUCC[fn] (the
# success value), E_N[fn] / E_NAME[fn, i] / E_WHY[fn, i], RVNOTE[fn],
# NOTES[fn] and REFS[fn]; reads DECL (the known functions).

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
