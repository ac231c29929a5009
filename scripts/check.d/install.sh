#!/bin/sh
# make install into a temporary DESTDIR, then build and run a program
# outside the tree against it with pkg-config alone (shared and static).
set -u
. scripts/check-step.sh
step_needs_host_arch "the consumer is built with the host compiler"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if make --no-print-directory install DESTDIR="$tmp" PREFIX=/usr/local > "$tmp/log" 2>&1; then
    ok "make install DESTDIR=<tmp> PREFIX=/usr/local"
else
    cat "$tmp/log"; ko "make install"
fi
export PKG_CONFIG_SYSROOT_DIR="$tmp" PKG_CONFIG_LIBDIR="$tmp/usr/local/lib/pkgconfig"
flags=$(pkg-config --cflags --libs mmport) && ok "pkg-config mmport: $flags" || ko "pkg-config mmport"
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Werror tests/install/consumer.c $flags -o "$tmp/consumer" &&
    LD_LIBRARY_PATH="$tmp/usr/local/lib" "$tmp/consumer"; then
    ok "consumer built with pkg-config and run against libmmport.so"
else
    ko "consumer against libmmport.so"
fi
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Werror tests/install/consumer.c $(pkg-config --cflags mmport) \
    "$tmp/usr/local/lib/libmmport.a" $(pkg-config --static --libs-only-l mmport | sed 's/-lmmport//') \
    -o "$tmp/consumer-static" && "$tmp/consumer-static"; then
    ok "consumer linked statically against libmmport.a"
else
    ko "consumer against libmmport.a"
fi
for m in "$tmp"/usr/local/share/man/man*/*; do
    [ -f "$m" ] || continue
    warn=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
    if [ -z "$warn" ]; then ok "man page renders: $(basename "$m")"; else ko "man page $(basename "$m"): $warn"; fi
done
step_results
