#!/bin/sh
# Installs what checking mmport needs on Debian 12, if missing: the build
# needs only the first three; the rest are test tools (clang, libcheck for
# both arches, the aarch64 cross compiler, qemu, valgrind, strace (the
# first_clear step), groff/man for
# the man pages, python3 for the JSON and SVG checks, debhelper for the
# configure check). Only `make check`,
# `make run`, `make fuzz`, `make deps` and .ci/run call it.
# Idempotent; when everything is present it only looks (well under a second).
set -e

missing=
need() { # need <what to test> <package>
    case $1 in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
    esac || missing="$missing $2"
}
need cc gcc
need make make
need clang clang
need pkg-config pkg-config
need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need qemu-aarch64-static qemu-user-static
need qemu-system-aarch64 qemu-system-arm
need qemu-system-x86_64 qemu-system-x86
# Bochs (VMX/EPT emulation for the EPT real-MMU payload), its BIOS and VGA BIOS
need bochs-bin bochs
need /usr/share/bochs/BIOS-bochs-latest bochsbios
need /usr/share/vgabios/vgabios.bin vgabios
need /usr/include/atomic_ops.h libatomic-ops-dev
need /usr/include/check.h check
need /usr/lib/aarch64-linux-gnu/pkgconfig/check.pc check:arm64
need valgrind valgrind
need strace strace
need groff groff-base
need man man-db
need python3 python3
# the configure step runs Debian's own dh_auto_configure (native and cross)
need dh_auto_configure debhelper
need "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || echo /nonexistent)" libclang-rt-14-dev

[ -z "$missing" ] && exit 0

arm64=
case $missing in *:arm64*) arm64=yes ;; esac
line="apt-get install -y$missing"
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing:$missing" >&2
    echo "install-deps: run as root:${arm64:+ dpkg --add-architecture arm64 &&} apt-get update && $line" >&2
    exit 1
fi
echo "install-deps: installing:$missing"
[ -n "$arm64" ] && dpkg --add-architecture arm64
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q $missing
