#!/bin/sh
# make install as a packager runs it (DESTDIR, Debian's directories,
# SOURCE_DATE_EPOCH), then: a program outside the tree built against it
# with pkg-config alone (shared and static), `man mmp_pt_map` finds the
# page, every page renders without groff warnings, file modes are
# install(1)'s, the ldconfig hint, and make uninstall removes it all.
set -u
. scripts/check-step.sh
step_needs_host_arch "the consumer is built with the host compiler"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ma=$(cc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
d=$tmp/dest
lib=$d/usr/lib/$ma

# The variables dh_auto_install's make gets from dh_auto_configure's config;
# GEN_B of its own, as other steps install from this tree at the same time.
if SOURCE_DATE_EPOCH=1700000000 make --no-print-directory install GEN_B="$tmp/gen" DESTDIR="$d" prefix=/usr \
    libdir="\${prefix}/lib/$ma" > "$tmp/log" 2>&1; then
    ok "make install DESTDIR=<tmp> prefix=/usr libdir=\${prefix}/lib/$ma"
else
    cat "$tmp/log"; ko "make install"
fi
grep -q "ldconfig" "$tmp/log" && ko "ldconfig hint printed for a DESTDIR (staged) install" ||
    ok "no ldconfig hint for a staged (DESTDIR) install"

export PKG_CONFIG_SYSROOT_DIR="$d" PKG_CONFIG_LIBDIR="$lib/pkgconfig"
flags=$(pkg-config --cflags --libs mmport) && ok "pkg-config mmport: $flags" || ko "pkg-config mmport"
case $flags in *"-L$lib "*) ok "pkg-config: -L is the multiarch libdir" ;; *) ko "pkg-config libdir: $flags (want -L$lib)" ;; esac
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Werror tests/install/consumer.c $flags -o "$tmp/consumer" &&
    LD_LIBRARY_PATH="$lib" "$tmp/consumer"; then
    ok "consumer built with pkg-config and run against libmmport.so"
else
    ko "consumer against libmmport.so"
fi
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Werror tests/install/consumer.c $(pkg-config --cflags mmport) \
    "$lib/libmmport.a" $(pkg-config --static --libs-only-l mmport | sed 's/-lmmport//') \
    -o "$tmp/consumer-static" && "$tmp/consumer-static"; then
    ok "consumer linked statically against libmmport.a"
else
    ko "consumer against libmmport.a"
fi

# Modes as install -m sets them.
modes() { stat -c '%a' "$@" | sort -u | tr '\n' ' '; }
m=$(modes "$d"/usr/include/mmport/*.h "$lib/libmmport.a" "$lib/pkgconfig/mmport.pc" "$d"/usr/share/man/man3/*.3)
[ "$m" = "644 " ] && ok "headers, libmmport.a, .pc, man pages: mode 644" || ko "data file modes: $m"
m=$(modes "$d/usr/bin/mmport" "$lib"/libmmport.so.*.*.*)
[ "$m" = "755 " ] && ok "mmport, libmmport.so.X.Y.Z: mode 755" || ko "program modes: $m"

# Man pages: one per function, man finds them, dated by SOURCE_DATE_EPOCH.
man3=$d/usr/share/man/man3
nfn=$(grep -h 'MMP_API' include/mmport/*.h | grep -vc '^#')
npages=$(ls "$man3" | wc -l)
[ "$npages" -gt "$nfn" ] && ok "$npages man3 pages for $nfn MMP_API functions (+ contract structs, mmport(3))" ||
    ko "$npages man3 pages for $nfn functions"
for p in mmp_pt_ops mmp_clear_opts; do
    [ -f "$man3/$p.3" ] && ok "contract page $p(3)" || ko "no page $p(3)"
done
if out=$(MANPATH="$d/usr/share/man" man -P cat mmp_pt_map 2>&1) &&
    printf '%s' "$out" | grep -q 'RETURN VALUE' && printf '%s' "$out" | grep -q 'MMP_EEXIST'; then
    ok "MANPATH=<dest>/usr/share/man man mmp_pt_map: RETURN VALUE, ERRORS with MMP_EEXIST"
else
    ko "man mmp_pt_map: $(printf '%s' "$out" | head -3)"
fi
grep -l '2023-11-14' "$man3/mmp_pt_map.3" "$d/usr/share/man/man1/mmport.1" > /dev/null 2>&1 &&
    [ "$(grep -L '"2023-11-14"' "$man3"/*.3 "$d/usr/share/man/man1/mmport.1")" = "" ] &&
    ok "SOURCE_DATE_EPOCH=1700000000 dates every page 2023-11-14" ||
    ko "man page dates ignore SOURCE_DATE_EPOCH: $(grep -h '^\.TH' "$man3/mmp_pt_map.3")"
if SOURCE_DATE_EPOCH=1600000000 make --no-print-directory install GEN_B="$tmp/gen" DESTDIR="$tmp/d2" > "$tmp/log4" 2>&1 &&
    grep -q '^\.TH MMP_PT_MAP 3 "2020-09-13"' "$tmp/d2/usr/local/share/man/man3/mmp_pt_map.3"; then
    ok "another SOURCE_DATE_EPOCH remakes the pages (2020-09-13)"
else
    ko "SOURCE_DATE_EPOCH=1600000000: $(grep -h '^\.TH' "$tmp/d2/usr/local/share/man/man3/mmp_pt_map.3" 2>&1)"
fi
bad=0
for f in "$man3"/*.3; do
    name=$(basename "$f" .3)
    for sec in 'NAME' 'SYNOPSIS' 'DESCRIPTION' 'RETURN VALUE' 'ERRORS'; do
        [ "$name" = mmport ] && [ "$sec" = 'RETURN VALUE' ] && continue # the overview
        grep -q "^\.SH \"\?$sec\"\?\$" "$f" || { ko "$name(3): no $sec section"; bad=1; }
    done
    leak=$(grep -n '@return\|@p \|@file' "$f")
    [ -z "$leak" ] || { ko "$name(3): doc markup leaks: $leak"; bad=1; }
    raw=$(grep -n '\\-E[A-Z][A-Z]' "$f")
    [ -z "$raw" ] || { ko "$name(3): error named without MMP_: $raw"; bad=1; }
done
[ $bad = 0 ] && ok "every page: NAME SYNOPSIS DESCRIPTION RETURN VALUE ERRORS, no @return/@p/@file, errors as MMP_E*"
warned=0
for f in "$man3"/*.3 "$d"/usr/share/man/man1/*.1; do
    warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l -Tutf8 "$f" 2>&1 >/dev/null; groff -man -Tutf8 -ww -z "$f" 2>&1)
    [ -z "$warn" ] || { ko "man page $(basename "$f"): $warn"; warned=1; }
done
[ $warned = 0 ] && ok "$(ls "$man3" "$d"/usr/share/man/man1 | grep -c '\.[13]$') man pages render without warnings (man --warnings, groff -ww)"

# A direct install (no DESTDIR) says how the loader finds the library.
if make --no-print-directory install GEN_B="$tmp/gen" prefix="$tmp/direct" > "$tmp/log2" 2>&1 &&
    grep -q "ldconfig" "$tmp/log2"; then
    ok "install without DESTDIR: $(grep -m1 ldconfig "$tmp/log2" | sed 's/^ *//')"
else
    ko "install without DESTDIR: no ldconfig hint: $(tail -3 "$tmp/log2")"
fi
grep -qx "prefix=$tmp/direct" "$tmp/direct/lib/pkgconfig/mmport.pc" &&
    ok "make install prefix=<dir>: mmport.pc says prefix=<dir>" ||
    ko "mmport.pc after make install prefix=<dir>: $(head -2 "$tmp/direct/lib/pkgconfig/mmport.pc")"
if make --no-print-directory uninstall GEN_B="$tmp/gen" prefix="$tmp/direct" > "$tmp/log3" 2>&1; then
    left=$(find "$tmp/direct" -type f -o -type l)
    [ -z "$left" ] && ok "make uninstall removes every installed file" || ko "make uninstall left: $left"
else
    cat "$tmp/log3"; ko "make uninstall"
fi
step_results
