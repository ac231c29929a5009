#!/bin/sh
# Boots Debian's cloud-amd64 kernel under the x86-64 reference hypervisor
# (examples/hyp/x86) in qemu-system-x86_64 -cpu max -smp 2 (TCG's SVM with
# nested paging), or directly under QEMU (--direct) for comparison.
#
#   examples/hyp/x86/run.sh [options] [-- guest kernel arguments]
#
#   --kernel FILE    the bzImage (default build/guests/amd64/kernel)
#   --initrd FILE    the initramfs (default, from scripts/fetch-guests.sh:
#                    build/guests/amd64/initramfs.cpio)
#   --mem MIB        guest RAM (default 256)
#   --fault 4k|2m    nested fault mode (default 2m: 2 MiB blocks where possible)
#   --fold           let 4 KiB fault maps fold into 2 MiB blocks
#   --no-mig         no pre-copy migration
#   --no-evict       no cold-page eviction
#   --work MIB       data the guest's workload writes (hyp_mb=, default 64)
#   --bad-gpa ADDR   the guest reads ADDR (neither RAM nor device) first: the
#                    run passes when the hypervisor reports it and stops
#   --variant NAME   the hypervisor built with the planted bugs of
#                    examples/hyp/x86/planted/NAME (its run must fail)
#   --direct         no hypervisor: the same kernel and initramfs straight
#                    under QEMU, for the boot-time ratio
#   --json FILE      write the hypervisor's JSON summary there
#   --log FILE       keep the whole console output there
#   --timeout SEC    kill QEMU after SEC seconds (default 180)
#
# Prints the guest console, the hypervisor's summary line, then one
# "run.sh:" line with the verdict and the wall-clock time to the guest's
# init. Exit status: 0 pass; 1 the run failed (no OK line, a compare
# difference, a leaked table page, a guest that did not power off, a
# timeout); 2 bad input (a missing or corrupt kernel or initramfs, no QEMU).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
kernel=$top/build/guests/amd64/kernel
initrd= mem=256 fault=2m fold=0 mig=1 evict=1 work=64 badgpa= direct=0
json= log= limit=180 variant=

die() { echo "run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --kernel) kernel=$2; shift ;;
    --initrd) initrd=$2; shift ;;
    --mem) mem=$2; shift ;;
    --fault) fault=$2; shift ;;
    --fold) fold=1 ;;
    --no-mig) mig=0 ;;
    --no-evict) evict=0 ;;
    --work) work=$2; shift ;;
    --bad-gpa) badgpa=$2; shift ;;
    --direct) direct=1 ;;
    --variant) variant=$2; shift ;;
    --json) json=$2; shift ;;
    --log) log=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help lists them)" ;;
    esac
    shift
done
extra=$*
case $fault in 4k | 2m) ;; *) die "--fault 4k or 2m, not $fault" ;; esac
case $mem in *[!0-9]* | '') die "--mem takes MiB, not $mem" ;; esac
command -v qemu-system-x86_64 > /dev/null || die "no qemu-system-x86_64 (package qemu-system-x86)"

# The kernel: there, readable, a bzImage with a 64-bit entry point (setup
# header "HdrS" at 0x202, boot protocol >= 2.12, xloadflags bit 0; the
# hypervisor checks the rest and refuses a truncated file).
[ -e "$kernel" ] || die "kernel $kernel: no such file (scripts/fetch-guests.sh amd64, or --kernel FILE)"
[ -f "$kernel" ] && [ -r "$kernel" ] || die "kernel $kernel: not a readable file"
hdr=$(od -An -tx1 -j 514 -N 4 "$kernel" | tr -d ' \n')
[ "$hdr" = 48647253 ] || die "kernel $kernel: not a bzImage (no \"HdrS\" setup header at 0x202)"
xlf=$(od -An -tu2 -j 566 -N 2 "$kernel" | tr -d ' ')
[ $((xlf & 1)) = 1 ] || die "kernel $kernel: no 64-bit entry point (xloadflags bit 0 clear)"

[ -n "$initrd" ] || initrd=$top/build/guests/amd64/initramfs.cpio
[ -f "$initrd" ] && [ -s "$initrd" ] ||
    die "initramfs $initrd: no such file (scripts/fetch-guests.sh amd64, or --initrd FILE)"
[ "$(head -c 6 "$initrd")" = 070701 ] || die "initramfs $initrd: not a newc cpio archive"
case $kernel$initrd in *,*) die "file names with ',' cannot go through QEMU's -initrd" ;; esac

# Guest arguments: no_timer_check (Linux's IO-APIC timer probe counts on
# time passing as on hardware; under a loaded TCG it may not), the
# workload's size, the init
# doorbell for initramfs images whose /init takes it as an argument.
gargs="no_timer_check hyp_mb=$work hyp_cpus=1 hyp_doorbell=0xfeb00000${badgpa:+ hyp_badipa=$badgpa} $extra"
qemu="qemu-system-x86_64 -M pc -cpu max -smp 2 -accel tcg,thread=multi -nodefaults -nographic
      -serial stdio -no-reboot"
if [ $direct = 1 ]; then
    set -- $qemu -m $((mem + 64)) -kernel "$kernel" -initrd "$initrd" \
        -append "console=ttyS0 nr_cpus=1 panic=-1 $gargs"
else
    [ -z "$variant" ] || [ -d "$here/planted/$variant" ] || die "no planted variant $variant"
    make -s -C "$top" -f examples/hyp/x86/hyp.mk ${variant:+HYP_VARIANT=$variant} > /dev/null ||
        die "building the hypervisor failed"
    hopts="mem=$mem fault=$fault fold=$fold mig=$mig evict=$evict"
    # Host RAM: guest RAM, its shadow, the swap area, the hypervisor and
    # its modules, the firmware's tables.
    set -- $qemu -m $((2 * mem + 192)) -device isa-debug-exit,iobase=0xf4,iosize=4 \
        -kernel "$top/build/hyp/x86${variant:+-$variant}/hyp32.elf" -initrd "$kernel,$initrd" -append "$hopts -- $gargs"
fi

out=${log:-$(mktemp)}
t0=$(date +%s%N)
status=0
# Each console line as it comes, the wall-clock time of the init line noted.
{ timeout -k 5 "$limit" "$@" < /dev/null 2>&1 || echo "run.sh-qemu-status $?"; } |
    while IFS= read -r line; do
        case $line in
        run.sh-qemu-status*) echo "$line" >> "$out" ;;
        *hyp-guest:\ init\ started*)
            echo "run.sh-init-ns $(( $(date +%s%N) - t0 ))" >> "$out"
            printf '%s\n' "$line" | tee -a "$out" ;;
        *) printf '%s\n' "$line" | tee -a "$out" ;;
        esac
    done
qs=$(sed -n 's/^run.sh-qemu-status //p' "$out" | tail -1)
qs=${qs:-0}
init_ms=$(( $(sed -n 's/^run.sh-init-ns //p' "$out" | tail -1 | grep . || echo 0) / 1000000 ))
uptime=$(sed -n 's/.*hyp-guest: init started at uptime \([0-9.]*\) s.*/\1/p' "$out" | tail -1)
ok_line=$(grep -c 'hyp-guest: OK' "$out" || true)
summary=$(grep '^hyp: summary:' "$out" | tail -1 || true)
[ -z "$json" ] || sed -n 's/^hyp: json: //p' "$out" | tail -1 > "$json"
[ -n "$log" ] || trap 'rm -f "$out"' EXIT

verdict() { # verdict <status> <text>
    if [ -n "$uptime" ]; then
        echo "run.sh: $2 (wall-clock to init ${init_ms} ms, guest uptime at init $uptime s)"
    else
        echo "run.sh: $2"
    fi
    exit "$1"
}
[ "$qs" = 124 ] || [ "$qs" = 137 ] && verdict 1 "FAIL: no result within ${limit} s (QEMU killed)"
if [ $direct = 1 ]; then
    [ "$ok_line" -gt 0 ] && verdict 0 "PASS: direct boot, OK line" || verdict 1 "FAIL: direct boot, no OK line"
fi
field() { printf '%s\n' "$summary" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
stop=$(field stop)
# The hypervisor's status through isa-debug-exit: (code << 1) | 1.
case $qs in
1) ;;
9) verdict 2 "FAIL: the hypervisor refused the kernel: $(sed -n 's/^hyp: FAIL: //p' "$out" | head -1)" ;;
5) verdict 2 "FAIL: setup: $(sed -n 's/^hyp: FAIL: //p' "$out" | head -1)" ;;
3) if [ -z "$badgpa" ] && [ -n "$stop" ] && [ "$stop" != poweroff ]; then
       where=${uptime:+after init}
       verdict 1 "FAIL: the guest stopped: $stop ${where:-before init (a corrupt kernel or initramfs?)}"
   fi ;;
*) verdict 1 "FAIL: QEMU exited with status $qs" ;;
esac
[ -n "$summary" ] || verdict 1 "FAIL: no summary line"
for f in stop guest boot_to_init_ms run_ms faults faults_per_s table_pages_peak \
    table_pages_leaked mig_rounds mig_pages mig_compare evictions refaults mmport_ms_cpu0 \
    mmport_ms_cpu1; do
    case " ${summary#hyp: summary:} " in *" $f="*) ;; *) verdict 1 "FAIL: summary without $f" ;; esac
done
[ "$(field table_pages_leaked)" = 0 ] || verdict 1 "FAIL: $(field table_pages_leaked) table pages leaked"
case $(field mig_compare) in OK | off) ;; *) verdict 1 "FAIL: migration compare: $(field mig_diff_pages) pages differ" ;; esac
if [ -n "$badgpa" ]; then
    [ "$stop" = bad-gpa ] && verdict 0 "PASS: the access to $badgpa was reported and the run stopped" ||
        verdict 1 "FAIL: the access to $badgpa did not stop the run ($stop)"
fi
[ "$stop" = poweroff ] || verdict 1 "FAIL: the guest stopped with $stop"
[ "$ok_line" -gt 0 ] || verdict 1 "FAIL: no OK line from the guest"
verdict 0 "PASS: guest OK, migration compare $(field mig_compare), $(field evictions) evictions / $(field refaults) refaults, no table page leaked"
