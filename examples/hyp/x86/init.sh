#!/bin/busybox sh
# The guest's /init: mount the pseudo filesystems, ring the hypervisor's
# "init reached" doorbell, then write files in tmpfs from /dev/urandom,
# checksum them, drop the caches, read them back and compare. One OK (or
# FAIL) line, its doorbell, and a power-off the hypervisor intercepts.
# hyp_mb=<MiB> on the kernel command line sets the data written (64);
# hyp_badgpa=<address> reads there first (the bad-access check).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o size=90% tmpfs /tmp
DOORBELL=0xfeb00000
ring() { devmem $(printf 0x%x $((DOORBELL + $1 * 4096))) 32 >/dev/null; }
ring 0
echo "hyp-guest: init started at uptime $(cut -d' ' -f1 /proc/uptime) s"
mib=64
bad=
for w in $(cat /proc/cmdline); do
    case $w in
    hyp_mb=*) mib=${w#hyp_mb=} ;;
    hyp_badgpa=*) bad=${w#hyp_badgpa=} ;;
    esac
done
# A read of guest-physical memory that is neither RAM nor a device: the
# hypervisor must report it and stop the run (it never returns here).
[ -z "$bad" ] || devmem "$bad" 32
files=4
per=$((mib / files))
ok=1
i=0
while [ $i -lt $files ]; do
    dd if=/dev/urandom of=/tmp/f$i bs=1M count=$per 2>/dev/null || ok=0
    i=$((i + 1))
done
sha256sum /tmp/f* > /sums || ok=0
cp /tmp/f0 /tmp/copy && cmp -s /tmp/f0 /tmp/copy || ok=0
sync
echo 3 > /proc/sys/vm/drop_caches
sha256sum -c -s /sums || ok=0
cmp -s /tmp/f0 /tmp/copy || ok=0
if [ $ok = 1 ]; then
    echo "hyp-guest: OK: $files files, $((files * per)) MiB written, checksummed and compared at $(cut -d' ' -f1 /proc/uptime) s"
    ring 1
else
    echo "hyp-guest: FAIL: checksum or compare mismatch"
    ring 2
fi
poweroff -f
