#!/bin/sh
# Fetches the guests of the reference hypervisor (examples/hyp/) and
# builds their initramfs: Debian's linux-image-cloud-<arch> (the kernel
# the metapackage depends on today, no version pinned) and busybox-static,
# with `apt-get download`, into build/guests/. Nothing else downloads
# anything; the runs only read build/guests/<arch>/.
#
#   scripts/fetch-guests.sh [arm64] [amd64]     (default: both)
#
# Output per architecture:
#   build/guests/<arch>/kernel         arm64: the uncompressed Image; amd64: bzImage
#   build/guests/<arch>/initramfs.cpio newc archive: /init (below), busybox, /dev/console
#   build/guests/<arch>/version        the kernel package it came from
# Already there: nothing is fetched again (remove build/guests/<arch> to
# refresh). Exit status 0, or 1 with a message saying what is missing.
set -eu
top=$(pwd)
out=$top/build/guests
archs=${*:-arm64 amd64}

die() { echo "fetch-guests: $*" >&2; exit 1; }
command -v apt-get > /dev/null || die "needs apt-get (Debian or a derivative)"
command -v dpkg-deb > /dev/null || die "needs dpkg-deb"

# The guest's /init: mounts, the workload on every CPU, one OK (or FAIL)
# line, power off. Parameters come from the kernel command line:
#   hyp_mb=N         MiB each CPU writes (default 32)
#   hyp_cpus=N       CPUs the guest must see online (default 2)
#   hyp_doorbell=A   guest-physical address the hypervisor watches: init
#                    writes 1 there first (its boot-to-init clock stops)
#   hyp_badipa=A     guest-physical address that is neither RAM nor a
#                    device: a read must fail (the hypervisor injects an
#                    abort: the reading process dies with SIGBUS)
write_init() {
    cat > "$1" << 'EOF'
#!/bin/busybox sh
/bin/busybox mkdir -p /bin /proc /sys /tmp /dev
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o size=90% tmpfs /tmp
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
mb=$(arg hyp_mb); mb=${mb:-32}
want=$(arg hyp_cpus); want=${want:-2}
bell=$(arg hyp_doorbell); bad=$(arg hyp_badipa)
[ -n "$bell" ] && devmem "$bell" 32 1
echo "hyp-guest: init started at uptime $(cut -d' ' -f1 /proc/uptime) s"
cpus=$(grep -c '^processor' /proc/cpuinfo)
fail=
[ "$cpus" -ge "$want" ] || fail="$fail only $cpus of $want CPUs online;"
last=$((cpus - 1))
# Each CPU: random data into a tmpfs file, checksummed on the way in.
for c in $(seq 0 $last); do
    taskset -c "$c" sh -c "dd if=/dev/urandom bs=1M count=$mb 2>/dev/null | tee /tmp/f$c | md5sum > /tmp/w$c" &
done
wait
sync
echo 3 > /proc/sys/vm/drop_caches
# Each CPU reads another CPU's file back and checksums it again.
for c in $(seq 0 $last); do
    o=$(( (c + 1) % cpus ))
    taskset -c "$c" sh -c "md5sum < /tmp/f$o > /tmp/r$o" &
done
wait
for c in $(seq 0 $last); do
    [ -s /tmp/w$c ] && cmp -s /tmp/w$c /tmp/r$c ||
        fail="$fail file $c: written $(cut -c1-32 /tmp/w$c), read back $(cut -c1-32 /tmp/r$c);"
done
if [ -n "$bad" ]; then
    if devmem "$bad" 32 > /dev/null 2>&1; then
        fail="$fail read of $bad (neither RAM nor device) did not fault;"
    else
        echo "hyp-guest: read of $bad faulted as expected"
    fi
fi
if [ -z "$fail" ]; then
    echo "hyp-guest: OK: $cpus CPUs each wrote $mb MiB, checksums match after drop_caches"
else
    echo "hyp-guest: FAIL:$fail"
fi
poweroff -f
EOF
}

# newc cpio writer (the kernel's initramfs format: Documentation/
# driver-api/early-userspace/buffer-format.rst): 110-byte ASCII header,
# name, NUL, padding to 4, data, padding to 4. A writer of our own, so
# /dev/console can be a device node without root or mknod.
cpio_ino=1
cpio_pad() { n=$(( (4 - $1 % 4) % 4 )); [ $n = 0 ] || head -c $n /dev/zero; }
cpio_hdr() { # cpio_hdr <name> <mode> <size> <rdevmajor> <rdevminor>
    namesize=$(( ${#1} + 1 ))
    printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
        $cpio_ino "$2" 0 0 1 0 "$3" 0 0 "$4" "$5" $namesize 0
    printf '%s\0' "$1"
    cpio_pad $(( 110 + namesize ))
    cpio_ino=$((cpio_ino + 1))
}
cpio_dir() { cpio_hdr "$1" $((0040755)) 0 0 0; }
cpio_file() { # cpio_file <name> <path> <mode>
    size=$(wc -c < "$2")
    cpio_hdr "$1" $((0100000 | $3)) "$size" 0 0
    cat "$2"
    cpio_pad "$size"
}
cpio_chr() { cpio_hdr "$1" $((0020600)) 0 "$2" "$3"; }
cpio_end() { cpio_hdr TRAILER!!! 0 0 0 0; }

fetch() { # fetch <deb arch> <busybox arch dir>
    a=$1
    dst=$out/$a
    if [ -s "$dst/kernel" ] && [ -s "$dst/initramfs.cpio" ]; then
        echo "fetch-guests: $a: have $(cat "$dst/version" 2>/dev/null) in $dst"
        return 0
    fi
    debs=$out/debs/$a
    rm -rf "$dst" "$debs"
    mkdir -p "$dst" "$debs"
    [ "$(dpkg --print-architecture)" = "$a" ] || dpkg --print-foreign-architectures | grep -qx "$a" ||
        die "$a: dpkg does not know architecture $a (as root: dpkg --add-architecture $a && apt-get update)"
    # The metapackage's current dependency names the kernel package.
    kpkg=$(apt-cache depends "linux-image-cloud-$a:$a" 2>/dev/null |
           sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
    [ -n "$kpkg" ] || die "$a: apt-cache knows no linux-image-cloud-$a (as root: apt-get update)"
    (cd "$debs" && apt-get download -q "$kpkg:$a" "busybox-static:$a") > "$debs/log" 2>&1 ||
        { cat "$debs/log" >&2; die "$a: apt-get download $kpkg busybox-static failed"; }
    for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$debs/root"; done
    k=$(ls "$debs"/root/boot/vmlinuz-* 2>/dev/null | head -1)
    [ -n "$k" ] && [ -x "$debs/root/bin/busybox" ] || die "$a: no kernel or busybox in the packages"
    cp "$k" "$dst/kernel"
    write_init "$debs/init"
    {
        for d in bin dev proc sys tmp; do cpio_dir $d; done
        cpio_chr dev/console 5 1
        cpio_file init "$debs/init" 0755
        cpio_file bin/busybox "$debs/root/bin/busybox" 0755
        cpio_end
    } > "$dst/initramfs.cpio.tmp"
    mv "$dst/initramfs.cpio.tmp" "$dst/initramfs.cpio"
    echo "$kpkg" > "$dst/version"
    rm -rf "$debs/root"
    echo "fetch-guests: $a: $kpkg, initramfs $(wc -c < "$dst/initramfs.cpio") bytes in $dst"
}

for a in $archs; do
    case $a in
    arm64 | amd64) fetch "$a" ;;
    *) die "unknown architecture '$a' (arm64 or amd64)" ;;
    esac
done
