#!/bin/sh
# Compiles the embeddable part of mmport (core, arch, descriptor formats,
# host/none) as a hypervisor would: -ffreestanding, no libc headers beyond
# the compiler's own (<stdint.h>, <stddef.h>, <stdbool.h>), then links it
# into one relocatable object and checks that it needs nothing from outside
# but the four memory primitives every freestanding C environment provides.
# Usage: check-freestanding.sh <x86_64|aarch64> <gcc|clang> <outdir>
# FREESTANDING_CFLAGS adds flags (scripts/check.d/genregs.sh: -mgeneral-regs-only).
set -eu
arch=$1 comp=$2 out=$3
case $arch in
x86_64) dir=x86 triple=x86_64-linux-gnu archflags= ;;
aarch64) dir=arm64 triple=aarch64-linux-gnu
    # Inline LSE/LL-SC atomics: the default out-of-line helpers live in
    # libgcc, which a hypervisor may not link.
    archflags=-mno-outline-atomics ;;
*) echo "unknown arch $arch" >&2; exit 2 ;;
esac
host=$(uname -m)
if [ "$comp" = clang ]; then cc="clang --target=$triple"
elif [ "$host" = "$arch" ]; then cc=gcc
else cc=$triple-gcc
fi
ld=ld; [ "$host" = "$arch" ] || ld=$triple-ld
nm=nm; [ "$host" = "$arch" ] || nm=$triple-nm

rm -rf "$out"; mkdir -p "$out"
cinc=$($cc -print-file-name=include)
srcs="$(ls core/*.c arch/*/pt_*.c 2>/dev/null) $(ls arch/$dir/*.c arch/generic/*.c host/none/*.c | grep -v '^arch/[^/]*/pt_')"
n=0
for s in $srcs; do
    o=$out/$(echo "$s" | tr / _).o
    $cc -std=c11 -Wall -Wextra -Werror -O2 -ffreestanding -fno-builtin -nostdinc $archflags ${FREESTANDING_CFLAGS:-} \
        -isystem "$cinc" -Icore/freestanding -Iinclude -Icore -Iarch/$dir -Ibuild/include-ao \
        -c "$s" -o "$o"
    n=$((n + 1))
done
$ld -r -o "$out/mmport-freestanding.o" "$out"/*_*.o
undef=$($nm -u "$out/mmport-freestanding.o" | awk '{print $2}' |
        grep -vxE 'memset|memcpy|memmove|memcmp' || true)
if [ -n "$undef" ]; then
    echo "FAIL: freestanding $arch/$comp needs symbols from outside:" $undef
    exit 1
fi
echo "PASS: $n files compile freestanding for $arch with $comp; no outside symbols"
