#!/bin/sh
# Real-MMU conformance (docs/mmu.md): builds the freestanding payloads of
# tests/mmu/ from the library's own sources, boots them under QEMU system
# emulation (aarch64: cortex-a57 and max, entered at EL1 and at EL2;
# x86-64: max and qemu64,+la57), built with gcc and with clang, and counts
# their PASS/FAIL/SKIP lines. The same x86-64 payload also boots under
# Bochs (family "bochs"): an Intel model with VMX/EPT runs the EPT targets,
# an AMD model with SVM the NPT ones (QEMU's TCG has SVM but no VMX).
# A second build with
# tests/mmu/flip/*.patch (applied to copies of the formats) corrupts one
# descriptor bit and must FAIL:
# that shows the checks can catch a wrong table.
# The QEMU runs have two CPUs (-smp 2, one host thread each): the
# payload's SMP scenario (tests/mmu/common/smp.c) has both update one
# MMP_PT_SHARED table while both translate through it; an aarch64 build
# with tests/mmu/nolock/*.patch (shared-mode break-before-make without the
# locked entry) runs only that scenario and must FAIL (on aarch64 the CPUs
# break the same contiguous runs all the time; x86 has no such runs, and
# the x86 scenario passes that build: its breaks rarely meet).
# Writes "passed failed skipped" to $MMPORT_TEST_RESULTS; exits non-zero
# on any failure. MMU_ONLY="aarch64", "x86_64" or "bochs" runs those families.
set -u
res=${MMPORT_TEST_RESULTS:-/dev/null}
MAKE=${MAKE:-make}
out=build/mmu
mkdir -p "$out/logs"
p=0 f=0 s=0
pass() { echo "PASS: $*"; p=$((p + 1)); }
fail() { echo "FAIL: $*"; f=$((f + 1)); }
skip() { echo "SKIP: $*"; s=$((s + 1)); }
want() { [ -z "${MMU_ONLY:-}" ] || case " $MMU_ONLY " in *" $1 "*) ;; *) return 1 ;; esac; }

build() { # build <arch> [variant: flip, nolock, or clang to compile with clang]
    log=$out/logs/build-$1${2:+-$2}.log
    cc=gcc; [ "${2:-}" = clang ] && cc=clang
    extra=; [ "${2:-}" = nolock ] && extra=-DPL_SMP_ONLY
    if $MAKE --no-print-directory -j2 -f tests/mmu/mmu.mk PL_ARCH="$1" PL_VARIANT="${2:-}" \
        PL_CC=$cc PL_EXTRA="$extra" > "$log" 2>&1; then
        pass "mmu: build $1${2:+ ($2)} payload"
    else
        tail -20 "$log"
        fail "mmu: build $1${2:+ ($2)} payload"
        return 1
    fi
}

# run <label> <success-rc> <command...>: boots one payload, echoes and
# counts its result lines. Success needs the expected exit status, a
# RESULT line and no FAIL line.
run() {
    label=$1 okrc=$2; shift 2
    log=$out/logs/run-$label.log
    timeout ${RUN_TIMEOUT:-300} "$@" > "$log" 2>&1 < /dev/null
    rc=$?
    tr -d '\r' < "$log" | grep -E '^(PASS|FAIL|SKIP|smp): |^note: [0-9]+ translations compared' |
        sed "s|^\([A-Za-z]*\): |\1: $label: |"
    # second-stage payloads say how many translations they compared
    tr -d '\r' < "$log" | grep -E '^translations compared: ' | sed "s|^|$label: |"
    np=$(grep -c '^PASS: ' "$log") nf=$(grep -c '^FAIL: ' "$log") ns=$(grep -c '^SKIP: ' "$log")
    p=$((p + np)) f=$((f + nf)) s=$((s + ns))
    if [ "$rc" != "$okrc" ] || ! grep -q '^RESULT: ' "$log"; then
        tail -5 "$log"
        fail "$label: payload exit status $rc (want $okrc), see $log"
    fi
}

# run_flip <label> <success-rc|any> <command...>: the corrupted build must
# fail (WHAT names the corruption), within TRIES runs (default 1).
run_flip() {
    label=$1 okrc=$2; shift 2
    what=${WHAT:-flipped descriptor bit}
    log=$out/logs/run-$label.log
    try=1
    while :; do
        timeout ${RUN_TIMEOUT:-300} "$@" > "$log" 2>&1 < /dev/null
        rc=$?
        nf=$(grep -c '^FAIL: ' "$log")
        # okrc "any": the emulator's exit status says nothing (Bochs), FAIL lines do
        caught=
        { [ "$okrc" = any ] || [ "$rc" != "$okrc" ]; } && [ "$nf" -gt 0 ] && caught=1
        [ -n "$caught" ] || [ $try -ge "${TRIES:-1}" ] && break
        try=$((try + 1))
    done
    if [ -n "$caught" ]; then
        pass "$label: $what detected in run $try ($nf FAIL lines, exit $rc)"
    else
        fail "$label: $what went unnoticed in $try runs (exit $rc), see $log"
    fi
}

# A compiler for <arch>: the native gcc on that host, else the cross gcc.
have_cc() {
    [ "$(uname -m)" = "$1" ] && command -v gcc > /dev/null && return 0
    command -v "$1-linux-gnu-gcc" > /dev/null
}

A64=qemu-system-aarch64
if want aarch64; then
    if ! command -v $A64 > /dev/null; then
        skip "mmu: aarch64: $A64 not installed"
    elif ! have_cc aarch64; then
        skip "mmu: aarch64: no aarch64 gcc (aarch64-linux-gnu-gcc) installed"
    elif build aarch64; then
        # cortex-a57 entered at EL1; max entered at EL2 (virtualization=on),
        # where the payload also tests stage 2 and the EL2 TLB helpers. Two
        # CPUs, one host thread each (multi-threaded TCG): the SMP scenario
        # starts the second with PSCI (HVC at EL1, SMC with EL2).
        smp="-smp 2 -accel tcg,thread=multi"
        for m in cortex-a57:virt max:virt,virtualization=on; do
            run "aarch64-${m%%:*}" 0 $A64 -M "${m#*:}" -cpu "${m%%:*}" $smp -m 2G -nographic \
                -semihosting -kernel $out/aarch64/payload.elf
        done
        # The clang build, on cortex-a57 entered at EL2 (stage 2 without 16K).
        if ! command -v clang > /dev/null; then
            skip "mmu: aarch64: clang not installed"
        elif build aarch64 clang; then
            run aarch64-clang-cortex-a57 0 $A64 -M virt,virtualization=on -cpu cortex-a57 \
                $smp -m 2G -nographic -semihosting -kernel $out/aarch64-clang/payload.elf
        fi
        # A race the two CPUs must meet: each is a host thread, and a loaded
        # host deschedules one now and then, so a whole run may pass without
        # two writers in one run at once (alone: 3-4 FAIL lines a run; beside
        # the other check steps, some runs had none). Five runs without one
        # fail the step.
        if build aarch64 nolock; then
            WHAT="shared-mode break-before-make without the locked entry" TRIES=5
            run_flip aarch64-nolock 0 $A64 -M virt -cpu cortex-a57 $smp -m 2G -nographic \
                -semihosting -kernel $out/aarch64-nolock/payload.elf
            WHAT= TRIES=
        fi
        if build aarch64 flip; then
            run_flip aarch64-flip 0 $A64 -M virt,virtualization=on -cpu cortex-a57 -m 2G \
                -nographic -semihosting -kernel $out/aarch64-flip/payload.elf
        fi
    fi
fi

# x86-64: isa-debug-exit makes QEMU exit with (value << 1) | 1, so a
# payload that writes 0 (success) exits with status 1. qemu64 lacks 1 GiB
# pages; max has them; both get LA57 so 5-level paging runs on each. Two
# CPUs here too: the payload starts the second with INIT / STARTUP IPIs
# and flushes through shootdown IPIs (tests/mmu/x86_64/smp.c).
X64=qemu-system-x86_64
x64() { # x64 <cpu> <payload>
    echo $X64 -M pc -cpu "$1" -smp 2 -accel tcg,thread=multi -m 2G -display none -nodefaults \
        -no-reboot -debugcon stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$2"
}
if want x86_64; then
    if ! command -v $X64 > /dev/null; then
        skip "mmu: x86_64: $X64 not installed"
    elif ! have_cc x86_64; then
        skip "mmu: x86_64: no x86-64 gcc (x86_64-linux-gnu-gcc) installed"
    elif build x86_64; then
        for cpu in max qemu64,+la57; do
            run "x86_64-${cpu%%,*}" 1 $(x64 $cpu $out/x86_64/payload32.elf)
        done
        if ! command -v clang > /dev/null; then
            skip "mmu: x86_64: clang not installed"
        elif build x86_64 clang; then
            run x86_64-clang-max 1 $(x64 max $out/x86_64-clang/payload32.elf)
        fi
        if build x86_64 flip; then
            run_flip x86_64-flip 1 $(x64 max $out/x86_64-flip/payload32.elf)
        fi
    fi
fi

# Bochs: no multiboot, so a disk image (boot sector + flat payload, built
# with the x86-64 payload); tests/mmu/bochs/bochsrc runs it headless (RFB
# display without waiting for a client), its console on port 0xE9; the
# payload ends Bochs through its shutdown port (exit status 1). Its
# internal debugger is compiled in: debugger.rc just continues.
bochs_run() { # bochs_run <label> <model> <image> [flip]
    r="run $1 1"; [ -n "${4:-}" ] && r="run_flip $1 any"
    RUN_TIMEOUT=300 MODEL=$2 IMG=$3 $r bochs-bin -q -f tests/mmu/bochs/bochsrc \
        -rc tests/mmu/bochs/debugger.rc
}
if want bochs; then
    if ! command -v bochs-bin > /dev/null; then
        skip "mmu: bochs: bochs-bin not installed (Debian packages bochs, bochsbios, vgabios)"
    elif [ ! -e /usr/share/vgabios/vgabios.bin ] || [ ! -e /usr/share/bochs/BIOS-bochs-latest ]; then
        skip "mmu: bochs: BIOS images missing (Debian packages bochsbios, vgabios)"
    elif ! have_cc x86_64; then
        skip "mmu: bochs: no x86-64 gcc (x86_64-linux-gnu-gcc) installed"
    elif build x86_64; then
        # corei7_icelake_u: VMX with EPT (XO, A/D, 2M/1G; no 5-level walk in Bochs 2.7);
        # ryzen: SVM with nested paging.
        bochs_run bochs-ept-icelake corei7_icelake_u $out/x86_64/bochs.img
        bochs_run bochs-npt-ryzen ryzen $out/x86_64/bochs.img
        if build x86_64 flip; then
            bochs_run bochs-flip corei7_icelake_u $out/x86_64-flip/bochs.img flip
        fi
    fi
fi

echo "$p $f $s" > "$res"
echo "mmu: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
