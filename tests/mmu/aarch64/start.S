/* SPDX-License-Identifier: MIT */
/*
 * aarch64 payload entry. QEMU virt starts the -kernel ELF with the MMU off
 * at EL1, or at EL2 with -M virt,virtualization=on. From EL2 we keep a
 * minimal hypervisor (vectors for HVC calls and stage-2 aborts, EL1 in
 * AArch64, no traps of FP or timers) and drop to EL1 (Arm ARM D1.3);
 * pl_el2 records that. Then: stack, FP/SIMD on (CPACR_EL1.FPEN), vector
 * table, TPIDR_EL1 = the CPU's index, .bss cleared, pl_main(); its return
 * value is the exit status.
 *
 * A second CPU (PSCI CPU_ON, arch.c) enters at pl_secondary_entry with x0
 * = its struct pl_cpu_boot: {cpu index, EL1 stack, EL2 stack, ...}. QEMU
 * starts it at the highest EL the machine gives the guest (EL2 with
 * virtualization=on), so it takes the same way down, then calls
 * pl_secondary_main(boot); .bss and pl_el2 are the first CPU's business.
 * Registers kept across the eret: x19 boot block (0: first CPU), x21 CPU
 * index, x22 EL1 stack, x23 EL2 stack, x20 entered at EL2.
 */
    .section .text.boot, "ax"
    .global _start
_start:
    mov     x19, #0
    mov     x21, #0
    ldr     x22, =__stack_top
    ldr     x23, =__stack_top_el2
    b       .Lentry

    .global pl_secondary_entry
pl_secondary_entry:
    mov     x19, x0
    ldp     x21, x22, [x0]
    ldr     x23, [x0, #16]
.Lentry:
    mov     x20, #0
    mrs     x0, CurrentEL
    lsr     x0, x0, #2
    cmp     x0, #2
    b.eq    .Lfrom_el2
    cmp     x0, #1
    b.ne    .Lwrong_el
.Lel1:
    mov     sp, x22
    msr     tpidr_el1, x21
    mov     x0, #(3 << 20)
    msr     cpacr_el1, x0
    ldr     x0, =pl_vectors_el1
    msr     vbar_el1, x0
    isb
    cbnz    x19, .Lsecondary
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
1:  cmp     x0, x1
    b.hs    2f
    str     xzr, [x0], #8
    b       1b
2:  ldr     x0, =pl_el2
    str     x20, [x0]
    bl      pl_main
    bl      pl_exit
.Lsecondary:
    mov     x0, x19
    bl      pl_secondary_main
    b       .
.Lfrom_el2:
    mov     x20, #1
    mov     sp, x23
    ldr     x0, =pl_vectors_el2
    msr     vbar_el2, x0
    mov     x0, #(1 << 31)          /* HCR_EL2.RW: EL1 is AArch64; VM off */
    msr     hcr_el2, x0
    mov     x0, #3                  /* CNTHCTL_EL2: EL1 timer/counter access */
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr
    mov     x0, #0x33ff             /* CPTR_EL2: RES1 bits only, no FP trap */
    msr     cptr_el2, x0
    msr     vttbr_el2, xzr
    mrs     x0, midr_el1            /* what EL1 reads as MIDR/MPIDR */
    msr     vpidr_el2, x0
    mrs     x0, mpidr_el1
    msr     vmpidr_el2, x0
    ldr     x0, =0x30d00800         /* SCTLR_EL1: RES1 bits, MMU off */
    msr     sctlr_el1, x0
    mov     x0, #0x3c5              /* SPSR_EL2: EL1h, DAIF masked */
    msr     spsr_el2, x0
    adr     x0, .Lel1
    msr     elr_el2, x0
    isb
    eret
.Lwrong_el:
    /* Only EL1 and EL2 are supported: exit with status 3 through semihosting. */
    adr     x1, .Lexit_block
    mov     w0, #0x18
    hlt     #0xf000
    b       .
    .balign 8
.Lexit_block:
    .quad   0x20026, 3

/*
 * Exception vectors (Arm ARM D1.10.2): 16 entries of 0x80 bytes. Every
 * entry saves x0-x30, ELR, SPSR, ESR and FAR of its EL in a frame on the
 * stack, calls pl_exception{,_el2}(frame, index) and returns with the
 * (possibly changed) ELR and registers.
 */
    .macro  vent idx, el
    .balign 0x80
    sub     sp, sp, #(36 * 8)
    stp     x0, x1, [sp, #0]
    mov     x0, #\idx
    b       pl_vector_common_\el
    .endm

    .macro  vector_table el, handler
    .text
    .balign 2048
    .global pl_vectors\el
pl_vectors\el:
    .irp    i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    vent    \i, \el
    .endr

pl_vector_common_\el:
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
    mrs     x2, elr\el
    stp     x30, x2, [sp, #240]
    mrs     x2, spsr\el
    mrs     x3, esr\el
    stp     x2, x3, [sp, #256]
    mrs     x2, far\el
    str     x2, [sp, #272]
    mov     x1, x0
    mov     x0, sp
    bl      \handler
    ldp     x30, x2, [sp, #240]
    msr     elr\el, x2
    ldr     x2, [sp, #256]
    msr     spsr\el, x2
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
    .endm

    vector_table _el1, pl_exception
    vector_table _el2, pl_exception_el2

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
