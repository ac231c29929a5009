#!/usr/bin/env python3
"""Checks that every public identifier of the headers is described in a man page.

Usage: check-man.py <include dir> <man3 dir>

The identifiers come from the compiler, not from the page generator:
clang's AST of a file including every <include dir>/mmport/*.h gives the
functions, structures with their members (those of nested anonymous
structures too), enumerations with their values and typedefs declared in
those headers; clang -E -dD gives the macros they define (include guards
aside). Each must be described:
  function, typedef     page NAME.3 whose DESCRIPTION has text;
  structure             page NAME.3 with a described tagged paragraph
                        (.TP, .B member) for every member;
  enumeration           page NAME.3 with DESCRIPTION text and a described
                        tagged paragraph for every value;
  macro                 a described tagged paragraph in any page.
A tagged paragraph is described when text follows its tag, other than
"(no description)". Prints what is missing and exits 1, else a summary.
"""
import json
import os
import re
import subprocess
import sys

CLANG = os.environ.get("CLANG", "clang")


def headers(inc):
    d = os.path.join(inc, "mmport")
    return sorted(os.path.join(d, h) for h in os.listdir(d) if h.endswith(".h"))


def translation_unit(inc):
    return "".join('#include "%s"\n' % os.path.abspath(h) for h in headers(inc))


def compiler(inc, args):
    r = subprocess.run([CLANG, "-std=c11", "-I", inc] + args + ["-x", "c", "-"],
                       input=translation_unit(inc), capture_output=True, text=True)
    if r.returncode:
        sys.exit("check-man: %s failed:\n%s" % (CLANG, r.stderr))
    return r.stdout


def declarations(inc):
    """(kind, name, [(member kind, member name)]) for each declaration of the headers."""
    ast = json.loads(compiler(inc, ["-Xclang", "-ast-dump=json", "-fsyntax-only"]))
    ours = {os.path.abspath(h) for h in headers(inc)}
    cur = [None]

    def track(node):  # the AST names a file only where it changes
        for key in ("loc", "range"):
            v = node.get(key) or {}
            for part in (v, v.get("begin") or {}, v.get("spellingLoc") or {},
                         v.get("expansionLoc") or {}):
                if "file" in part:
                    cur[0] = os.path.abspath(part["file"])

    def fields(node, out):
        for c in node.get("inner", []):
            track(c)
            if c.get("kind") == "FieldDecl":
                out.append(("member", c["name"]))
            elif c.get("kind") == "RecordDecl" and not c.get("name"):
                fields(c, out)  # a nested anonymous structure
            else:
                walk_only(c)
        return out

    def walk_only(node):
        for c in node.get("inner", []):
            track(c)
            walk_only(c)

    decls = []
    for node in ast.get("inner", []):
        track(node)
        kind, name = node.get("kind"), node.get("name")
        here = cur[0] in ours
        if kind == "RecordDecl" and name and node.get("completeDefinition"):
            members = fields(node, [])
            if here:
                decls.append(("struct", name, members))
            continue
        if kind == "EnumDecl":
            values = []
            for c in node.get("inner", []):
                track(c)
                if c.get("kind") == "EnumConstantDecl":
                    values.append(("value", c["name"]))
                walk_only(c)
            if here and name:
                decls.append(("enum", name, values))
            elif here:
                decls.extend(("macro-like value", v, []) for _, v in values)
            continue
        walk_only(node)
        if here and name and not node.get("isImplicit"):
            if kind == "FunctionDecl":
                decls.append(("function", name, []))
            elif kind == "TypedefDecl":
                decls.append(("typedef", name, []))
    return decls


def macros(inc):
    """Names of the macros the headers define, include guards aside."""
    ours = {os.path.abspath(h) for h in headers(inc)}
    out, cur, guard = [], None, {}
    for line in compiler(inc, ["-E", "-dD"]).splitlines():
        m = re.match(r'# \d+ "([^"]+)"', line)
        if m:
            cur = os.path.abspath(m.group(1))
            continue
        m = re.match(r"#define ([A-Za-z_][A-Za-z0-9_]*)", line)
        if m and cur in ours and m.group(1) not in out:
            out.append(m.group(1))
    # a guard: #ifndef X / #define X at the top of its header
    for h in headers(inc):
        g = re.search(r"^#ifndef (\w+)\n#define \1\b", open(h).read(), re.M)
        if g:
            guard[g.group(1)] = h
    return [m for m in out if m not in guard]


def parse_page(path):
    """The page's DESCRIPTION text and its tagged paragraphs {name: [text lines]}."""
    lines = open(path).read().splitlines()
    section, desc, tags = None, [], {}
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith(".SH"):
            section = ln[3:].strip().strip('"')
        elif section == "DESCRIPTION" and not ln.startswith(".") and ln.strip():
            desc.append(ln)
        if ln == ".TP" and i + 1 < len(lines):
            tag = lines[i + 1]
            # ".B name" (or ".B a, b"), ".BR name \" = value\""
            m = re.match(r"\.BR +(\S+)", tag) or re.match(r"\.B +(.+)$", tag)
            body, j = [], i + 2
            while j < len(lines) and lines[j] != ".TP" and not lines[j].startswith((".SH", ".SS")):
                if not lines[j].startswith("."):
                    body.append(lines[j])
                j += 1
            if m:
                for name in m.group(1).split(","):
                    name = re.sub(r"\(.*\)$|\[\]$", "", name.strip())
                    tags.setdefault(name, []).append(body)
            i += 1
        i += 1
    return desc, tags


def described(bodies):
    return any(b and b[0].strip() != "(no description)" for b in bodies or [])


def main():
    inc, mandir = sys.argv[1], sys.argv[2]
    pages = {}
    for f in os.listdir(mandir):
        if f.endswith(".3"):
            pages[f[:-2]] = parse_page(os.path.join(mandir, f))
    missing, counts = [], {}

    def need(ok, what):
        counts[what.split()[0]] = counts.get(what.split()[0], 0) + 1
        if not ok:
            missing.append(what)

    for kind, name, inner in declarations(inc):
        page = pages.get(name)
        if kind == "macro-like value":  # a value of an anonymous enum
            need(any(described(p[1].get(name)) for p in pages.values()), "value %s" % name)
            continue
        need(page is not None and (kind == "struct" or page[0]),
             "%s %s: %s" % (kind, name, "no page %s(3)" % name if page is None
                            else "no DESCRIPTION text in %s(3)" % name))
        for ikind, iname in inner:
            need(page is not None and described(page[1].get(iname)),
                 "%s %s%s%s: not described in %s(3)" %
                 (ikind, name, "::" if ikind == "member" else " ", iname, name))
    for m in macros(inc):
        need(any(described(p[1].get(m)) for p in pages.values()),
             "macro %s: described in no page" % m)
    if missing:
        print("check-man: %d public identifiers without a description in a man page:"
              % len(missing))
        for m in missing:
            print("  " + m)
        return 1
    print("check-man: every public identifier is described: " +
          ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())) +
          " (%d pages)" % len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
