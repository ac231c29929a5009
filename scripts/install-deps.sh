#!/bin/sh
# Installs, on Debian 12, what one kind of work on mmport needs, if missing:
#   install-deps.sh run     building mmport and `make run` (the demo): a C
#                           compiler, make, the libatomic_ops headers
#   install-deps.sh fuzz    `make fuzz`: run's, plus clang and its libFuzzer
#                           runtime
#   install-deps.sh [check] `make check` (and `make deps`, .ci/run): every
#                           test tool as well - clang, libcheck for both
#                           arches, the aarch64 cross compiler, qemu (user
#                           and system), Bochs, valgrind, groff/man for the
#                           man pages, python3 for the JSON, SVG and man
#                           checks, strace for the first_clear step,
#                           debhelper for the configure check; then the
#                           reference hypervisor's guests (scripts/fetch-guests.sh)
#   install-deps.sh --list <profile>   prints the profile's packages, one a
#                           line, and exits (installs nothing)
# Idempotent; when everything is present it only looks (well under a second).
set -e

list=
if [ "${1:-}" = --list ]; then list=yes; shift; fi
profile=${1:-check}
case $profile in
run | fuzz | check) ;;
*) echo "install-deps: unknown profile '$profile' (run, fuzz, check)" >&2; exit 2 ;;
esac

missing=
need() { # need <what to test> <package>
    if [ -n "$list" ]; then echo "$2"; return; fi
    case $1 in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
    esac || missing="$missing $2"
}
need cc gcc
need make make
need /usr/include/atomic_ops.h libatomic-ops-dev
if [ "$profile" != run ]; then
    need clang clang
    need "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || echo /nonexistent)" libclang-rt-14-dev
fi
if [ "$profile" = check ]; then
    need pkg-config pkg-config
    need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
    need qemu-aarch64-static qemu-user-static
    need qemu-system-aarch64 qemu-system-arm
    need qemu-system-x86_64 qemu-system-x86
    # Bochs (VMX/EPT emulation for the EPT real-MMU payload), its BIOS and VGA BIOS
    need bochs-bin bochs
    need /usr/share/bochs/BIOS-bochs-latest bochsbios
    need /usr/share/vgabios/vgabios.bin vgabios
    need /usr/include/check.h check
    need /usr/lib/aarch64-linux-gnu/pkgconfig/check.pc check:arm64
    need valgrind valgrind
    need groff groff-base
    need man man-db
    need python3 python3
    need strace strace # the first_clear step
    # the configure step runs Debian's own dh_auto_configure (native and cross)
    need dh_auto_configure debhelper
fi

[ -n "$list" ] && exit 0
# The reference hypervisor's guests (Debian's cloud kernels and busybox,
# by apt-get download into build/guests/; nothing when already there). A
# failure is reported here and again by the guest step, which needs them.
guests() {
    [ "$profile" = check ] || return 0
    (cd "$(dirname "$0")/.." && scripts/fetch-guests.sh) ||
        echo "install-deps: the guests could not be fetched (the guest step will fail)" >&2
}
[ -z "$missing" ] && { guests; exit 0; }

arm64=
case $missing in *:arm64*) arm64=yes ;; esac
line="apt-get install -y$missing"
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing for '$profile':$missing" >&2
    echo "install-deps: run as root:${arm64:+ dpkg --add-architecture arm64 &&} apt-get update && $line" >&2
    exit 1
fi
echo "install-deps: installing for '$profile':$missing"
[ -n "$arm64" ] && dpkg --add-architecture arm64
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q $missing
guests
