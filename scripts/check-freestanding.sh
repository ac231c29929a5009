#!/bin/sh
# Builds the embeddable part of mmport as a hypervisor would link it
# (mk/freestanding.mk: core, arch, descriptor formats, host/none compiled
# -ffreestanding -nostdinc and linked into one relocatable object) and
# checks that it needs nothing from outside but the four memory primitives
# every freestanding C environment provides.
# Usage: check-freestanding.sh <x86_64|aarch64> <gcc|clang> <outdir>
# FREESTANDING_CFLAGS adds flags (scripts/check.d/genregs.sh: -mgeneral-regs-only).
set -eu
arch=$1 comp=$2 out=$3
case $arch in
x86_64) triple=x86_64-linux-gnu ;;
aarch64) triple=aarch64-linux-gnu ;;
*) echo "unknown arch $arch" >&2; exit 2 ;;
esac
host=$(uname -m)
if [ "$comp" = clang ]; then cc="clang --target=$triple"
elif [ "$host" = "$arch" ]; then cc=gcc
else cc=$triple-gcc
fi
nm=nm; [ "$host" = "$arch" ] || nm=$triple-nm

rm -rf "$out"
make --no-print-directory -s -f mk/freestanding.mk FARCH="$arch" FCC="$cc" FB="$out" \
    FREESTANDING_CFLAGS="${FREESTANDING_CFLAGS:-}"
n=$(find "$out/obj" -name '*.o' | wc -l | tr -d ' ')
undef=$($nm -u "$out/mmport-freestanding.o" | awk '{print $2}' |
        grep -vxE 'memset|memcpy|memmove|memcmp' || true)
if [ -n "$undef" ]; then
    echo "FAIL: freestanding $arch/$comp needs symbols from outside:" $undef
    exit 1
fi
echo "PASS: $n files compile freestanding for $arch with $comp; no outside symbols"
