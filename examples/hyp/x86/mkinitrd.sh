#!/bin/sh
# Builds the guest's initramfs: a newc cpio archive (the format the Linux
# kernel unpacks, Documentation/driver-api/early-userspace/buffer-format.rst)
# with a static busybox, /init (init.sh) and /dev/console. Written here with
# printf, so it needs neither cpio nor root (for the device node).
# Usage: mkinitrd.sh <busybox-static binary> <output.cpio>
set -eu
busybox=$1 out=$2
here=$(dirname "$0")
[ -f "$busybox" ] || { echo "mkinitrd.sh: no busybox at $busybox" >&2; exit 2; }
tmp=$out.tmp
: > "$tmp"
ino=1
pad() { # zero bytes to the next multiple of 4 of the archive so far
    n=$(( (4 - $(wc -c < "$tmp") % 4) % 4 ))
    [ "$n" -eq 0 ] || head -c "$n" /dev/zero >> "$tmp"
}
# entry <name> <mode (octal)> <size> <rdevmajor> <rdevminor> [file]
entry() {
    name=$1 mode=$2 size=$3 maj=$4 min=$5 file=${6:-}
    printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
        "$ino" "$(printf %d "0$mode")" 0 0 1 0 "$size" 0 0 "$maj" "$min" \
        $(( ${#name} + 1 )) 0 >> "$tmp"
    printf '%s\0' "$name" >> "$tmp"
    pad
    [ -z "$file" ] || cat "$file" >> "$tmp"
    pad
    ino=$((ino + 1))
}
for d in bin dev proc sys tmp; do entry "$d" 40755 0 0 0; done
entry dev/console 20600 0 5 1
entry bin/busybox 100755 "$(wc -c < "$busybox")" 0 0 "$busybox"
entry init 100755 "$(wc -c < "$here/init.sh")" 0 0 "$here/init.sh"
entry TRAILER!!! 0 0 0 0
mv "$tmp" "$out"
