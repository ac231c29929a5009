#!/bin/sh
# Boots Debian's arm64 kernel under the reference hypervisor (or, with
# --direct, straight under QEMU for comparison) and checks the run.
#   examples/hyp/arm64/run.sh [--cpu max|cortex-a57] [--granule 4k|64k]
#       [--mode pages|blocks] [--mem MiB] [--mb MiB] [--direct] [--log FILE]
#       [--kernel FILE] [--initrd FILE] [--hyp FILE] [--no-check] [--timeout S]
#       [-- hypervisor options, see examples/hyp/arm64/main.c]
# --no-check skips this script's checks of the input files (so the
# hypervisor's own check of the kernel's header can be seen to work).
# Needs build/hyp/arm64/hyp.elf (make -f examples/hyp/arm64/hyp.mk) and
# build/guests/arm64/{kernel,initramfs.cpio} (scripts/fetch-guests.sh arm64).
# Prints the guest's console, then the hypervisor's summary; exit status
# 0 when the guest printed its OK line, and (under the hypervisor) the
# summary says PASS with every field present; 1 otherwise; 2 for missing
# or corrupt input files; 124 when the run took longer than --timeout
# seconds (default 180).
set -u
cpu=max granule=4k mode=pages mem=512 mb=4 direct= log= tmo=180 extra= check=1
hyp=build/hyp/arm64/hyp.elf
kernel=build/guests/arm64/kernel
initrd=build/guests/arm64/initramfs.cpio
while [ $# -gt 0 ]; do
    case $1 in
    --cpu) cpu=$2; shift ;;
    --granule) granule=$2; shift ;;
    --mode) mode=$2; shift ;;
    --mem) mem=$2; shift ;;
    --mb) mb=$2; shift ;;
    --direct) direct=1 ;;
    --log) log=$2; shift ;;
    --kernel) kernel=$2; shift ;;
    --hyp) hyp=$2; shift ;;
    --initrd) initrd=$2; shift ;;
    --no-check) check= ;;
    --timeout) tmo=$2; shift ;;
    --) shift; extra="$*"; break ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
bad() { echo "run.sh: error: $*" >&2; exit 2; }
[ -n "$direct" ] || [ -s "$hyp" ] || bad "$hyp missing (make -f examples/hyp/arm64/hyp.mk)"
[ -s "$kernel" ] || bad "$kernel missing or empty (scripts/fetch-guests.sh arm64)"
[ -s "$initrd" ] || bad "$initrd missing or empty (scripts/fetch-guests.sh arm64)"
if [ -n "$check" ]; then
    # arm64 Image header: "ARM\x64" at offset 0x38.
    [ "$(od -An -tx1 -j56 -N4 "$kernel" | tr -d ' ')" = 41524d64 ] ||
        bad "$kernel is not an arm64 Image (no ARM\\x64 magic at offset 0x38)"
    [ "$(head -c6 "$initrd")" = 070701 ] || bad "$initrd is not a newc cpio archive"
fi
command -v qemu-system-aarch64 > /dev/null || bad "qemu-system-aarch64 not installed"

log=${log:-$(mktemp)}
guest="console=ttyAMA0 panic=-1 hyp_mb=$mb hyp_cpus=2"
# pauth-impdef: QEMU's own pointer-authentication algorithm instead of
# QARMA, which TCG emulates many times slower (the guest kernel signs
# every return address); the CPU is still "max" in every other respect.
qcpu=$cpu
[ "$cpu" = max ] && qcpu=max,pauth-impdef=on
qemu="qemu-system-aarch64 -M virt,virtualization=on,gic-version=3,its=off -cpu $qcpu -smp 2
      -accel tcg,thread=multi -m 2G -display none -nodefaults -serial stdio -no-reboot"
if [ -n "$direct" ]; then
    set -- $qemu -kernel "$kernel" -initrd "$initrd" -append "$guest"
else
    ksize=$(wc -c < "$kernel") isize=$(wc -c < "$initrd")
    # Loader addresses: above the hypervisor image (0x40100000..), below
    # where it puts guest RAM (main.c lays that out after these files).
    opts="hyp.kernel=0x42000000,$ksize hyp.initrd=0x46000000,$isize hyp.mem=$mem"
    opts="$opts hyp.granule=$granule hyp.mode=$mode $extra"
    set -- $qemu -kernel "$hyp" -append "$opts -- $guest hyp_badipa=0x30000000" \
        -device loader,file="$kernel",addr=0x42000000,force-raw=on \
        -device loader,file="$initrd",addr=0x46000000,force-raw=on
fi
# The console, with the host's clock read when init says it started.
t0=$(date +%s%N)
cr=$(printf '\r')
{ timeout "$tmo" "$@" < /dev/null 2>&1; echo "run.sh: exit $?"; } |
    while IFS= read -r line; do
        line=${line%"$cr"}
        case $line in
        "hyp-guest: init started"*) echo "run.sh: wall time to init $(( ($(date +%s%N) - t0) / 1000000 )) ms" ;;
        esac
        printf '%s\n' "$line"
    done | tee "$log"
# Verdict lines go to the log too.
say() { echo "$*"; echo "$*" >> "$log"; }
rc=$(sed -n 's/^run.sh: exit //p' "$log")
say "run.sh: wall time $(( ($(date +%s%N) - t0) / 1000000 )) ms"
status=0
if ! grep -q '^hyp-guest: OK' "$log"; then
    say "run.sh: FAIL: no OK line from the guest"; status=1
fi
if [ -z "$direct" ]; then
    s=$(grep '^hyp-summary: ' "$log" | tail -1)
    for f in result boot_to_init_ms faults faults_per_vcpu concurrent table_pages_peak \
        leaked_table_bytes mig_rounds mig_pages_copied compare evictions refaults mmport_ms; do
        case " ${s#hyp-summary: } " in
        *" $f="*) ;;
        *) say "run.sh: FAIL: summary field $f missing"; status=1 ;;
        esac
    done
    case $s in *" result=PASS "*) ;; *) say "run.sh: FAIL: the hypervisor's result is not PASS"; status=1 ;; esac
    case $s in *" compare=exact "*) ;; *) say "run.sh: FAIL: migration compare not exact"; status=1 ;; esac
    case $s in *" leaked_table_bytes=0 "*) ;; *) say "run.sh: FAIL: table pages leaked"; status=1 ;; esac
fi
[ "$rc" = 124 ] && { say "run.sh: FAIL: timed out after $tmo s"; exit 124; }
exit $status
