/* SPDX-License-Identifier: MIT */
/*
 * aarch64 payload entry. QEMU virt (without virtualization=on) starts the
 * -kernel ELF at EL1 with the MMU off. Sets the stack, enables FP/SIMD
 * (CPACR_EL1.FPEN, Arm ARM D19.2), installs the vector table, clears .bss
 * and runs pl_main(); its return value becomes the exit status.
 */
    .section .text.boot, "ax"
    .global _start
_start:
    mrs     x0, CurrentEL
    lsr     x0, x0, #2
    cmp     x0, #1
    b.ne    .Lwrong_el
    ldr     x0, =__stack_top
    mov     sp, x0
    mov     x0, #(3 << 20)
    msr     cpacr_el1, x0
    ldr     x0, =pl_vectors
    msr     vbar_el1, x0
    isb
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
1:  cmp     x0, x1
    b.hs    2f
    str     xzr, [x0], #8
    b       1b
2:  bl      pl_main
    bl      pl_exit
.Lwrong_el:
    /* Only EL1 is supported: exit with status 3 through semihosting. */
    adr     x1, .Lexit_block
    mov     w0, #0x18
    hlt     #0xf000
    b       .
    .balign 8
.Lexit_block:
    .quad   0x20026, 3

/*
 * Exception vectors (Arm ARM D1.10.2): 16 entries of 0x80 bytes. Every
 * entry saves x0-x30, ELR, SPSR, ESR and FAR in a frame on the current
 * stack, calls pl_exception(frame, index) and returns with the (possibly
 * changed) ELR and registers.
 */
    .macro  vent idx
    .balign 0x80
    sub     sp, sp, #(36 * 8)
    stp     x0, x1, [sp, #0]
    mov     x0, #\idx
    b       pl_vector_common
    .endm

    .text
    .balign 2048
    .global pl_vectors
pl_vectors:
    .irp    i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    vent    \i
    .endr

pl_vector_common:
    /* x0 = index; the original x0/x1 are in the frame already. */
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
    mrs     x2, elr_el1
    stp     x30, x2, [sp, #240]
    mrs     x2, spsr_el1
    mrs     x3, esr_el1
    stp     x2, x3, [sp, #256]
    mrs     x2, far_el1
    str     x2, [sp, #272]
    mov     x1, x0
    mov     x0, sp
    bl      pl_exception
    ldp     x30, x2, [sp, #240]
    msr     elr_el1, x2
    ldr     x2, [sp, #256]
    msr     spsr_el1, x2
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
    add     sp, sp, #(36 * 8)
    eret

/*
 * Switch translation: MMU off, load MAIR/TCR/TTBR0, invalidate this
 * CPU's EL1 TLB, MMU on with the given SCTLR. Runs from identity-mapped
 * code, so fetching continues across the switch (Arm ARM D8.2.11).
 * x0 = MAIR, x1 = TCR, x2 = TTBR0, x3 = SCTLR to set afterwards.
 */
    .global pl_mmu_switch
pl_mmu_switch:
    mrs     x4, sctlr_el1
    bic     x4, x4, #1
    dsb     sy
    msr     sctlr_el1, x4
    isb
    msr     mair_el1, x0
    msr     tcr_el1, x1
    msr     ttbr0_el1, x2
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    msr     sctlr_el1, x3
    isb
    ret
