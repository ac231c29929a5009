/* SPDX-License-Identifier: MIT */
/*
 * Entry of the reference hypervisor. QEMU (-M virt,virtualization=on)
 * starts the ELF at EL2, MMU off, on CPU 0; CPU 1 comes here when the
 * guest's PSCI CPU_ON made the hypervisor start it (psci.c), with x0 =
 * its index. Each CPU: TPIDR_EL2 = index, its own EL2 stack, the vectors;
 * CPU 0 clears .bss and runs hyp_main(), CPU 1 hyp_secondary_main().
 * Started at EL1 (no virtualization=on) it says so and powers off.
 */
#define FRAME 288 /* struct hyp_frame: x0-x30, elr, spsr, esr, far, hpfar */
#define STACK 0x8000

    .section .text.boot, "ax"
    .global _start
_start:
    mrs     x9, CurrentEL
    cmp     x9, #(2 << 2)
    b.ne    .Lnot_el2
    mov     x0, #0
    b       .Lcommon

    .global hyp_secondary_entry
hyp_secondary_entry:
.Lcommon:
    msr     tpidr_el2, x0
    ldr     x1, =hyp_stacks
    add     x2, x0, #1
    mov     x3, #STACK
    madd    x1, x2, x3, x1
    mov     sp, x1
    ldr     x1, =hyp_vectors
    msr     vbar_el2, x1
    isb
    cbnz    x0, 2f
    ldr     x1, =__bss_start
    ldr     x2, =__bss_end
1:  cmp     x1, x2
    b.hs    3f
    str     xzr, [x1], #8
    b       1b
3:  bl      hyp_main
    b       .
2:  bl      hyp_secondary_main
    b       .

    /* Not at EL2: print on QEMU virt's PL011 and power off through
     * QEMU's PSCI, which EL1 reaches with HVC. */
.Lnot_el2:
    adr     x1, .Lmsg
    mov     x2, #0x09000000
4:  ldrb    w3, [x1], #1
    cbz     w3, 5f
    strb    w3, [x2]
    b       4b
5:  ldr     x0, =0x84000008
    hvc     #0
    b       .
.Lmsg:
    .asciz  "hyp: error: not started at EL2: run QEMU with -M virt,virtualization=on\r\n"
    .balign 4

/* Enter the guest for the first time: x0 = entry, x1 = its x0, x2 = this
 * CPU's EL2 stack top (later exits start from an empty stack). EL1h with
 * DAIF masked and its MMU off, as the Linux arm64 boot protocol asks. */
    .text
    .global hyp_enter_guest
hyp_enter_guest:
    mov     sp, x2
    msr     elr_el2, x0
    mov     x3, #0x3c5
    msr     spsr_el2, x3
    mov     x0, x1
    .irp    r, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30
    mov     x\r, xzr
    .endr
    eret

/*
 * EL2 vectors (Arm ARM D1.10.2): 16 entries of 0x80 bytes. Each saves the
 * interrupted context's x0-x30 and the syndrome registers in a frame on
 * this CPU's EL2 stack, calls hyp_exception(frame, index) and returns to
 * what the frame then says (the handler may change ELR, SPSR and
 * registers: skip an instruction, inject an abort, return a PSCI result).
 * Index 8 is a synchronous exit of the guest (lower EL, AArch64); 0-7 are
 * exceptions of the hypervisor itself.
 */
    .macro  vent idx
    .balign 0x80
    sub     sp, sp, #FRAME
    stp     x0, x1, [sp, #0]
    mov     x0, #\idx
    b       .Lsave
    .endm

    .balign 2048
    .global hyp_vectors
hyp_vectors:
    .irp    i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    vent    \i
    .endr

.Lsave:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x19, [sp, #144]
    stp     x20, x21, [sp, #160]
    stp     x22, x23, [sp, #176]
    stp     x24, x25, [sp, #192]
    stp     x26, x27, [sp, #208]
    stp     x28, x29, [sp, #224]
    mrs     x2, elr_el2
    stp     x30, x2, [sp, #240]
    mrs     x2, spsr_el2
    mrs     x3, esr_el2
    stp     x2, x3, [sp, #256]
    mrs     x2, far_el2
    mrs     x3, hpfar_el2
    stp     x2, x3, [sp, #272]
    mov     x1, x0
    mov     x0, sp
    bl      hyp_exception
    ldp     x30, x2, [sp, #240]
    msr     elr_el2, x2
    ldr     x2, [sp, #256]
    msr     spsr_el2, x2
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x19, [sp, #144]
    ldp     x20, x21, [sp, #160]
    ldp     x22, x23, [sp, #176]
    ldp     x24, x25, [sp, #192]
    ldp     x26, x27, [sp, #208]
    ldp     x28, x29, [sp, #224]
    add     sp, sp, #FRAME
    eret
