/* SPDX-License-Identifier: MIT */
/*
 * x86-64 payload entry. A multiboot (v1) loader (QEMU -kernel) enters
 * _start in 32-bit protected mode, paging off (Multiboot 0.6.96, 3.2).
 * We build a temporary identity map of the first 4 GiB with 2 MiB pages,
 * enable PAE, EFER.LME (and NXE when CPUID says NX exists), then paging,
 * and far-jump to 64-bit code (Intel SDM vol. 3A, 9.8.5 "Initializing
 * IA-32e Mode").
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0
#define SEL_CODE64 0x08
#define SEL_DATA 0x10
#define SEL_CODE32 0x18
#define PL_VEC_IPI 64
#define PL_VEC_SPURIOUS 79
#define AP_SP 0 /* struct pl_ap_boot (arch.h) */

/* Every data segment register: the flat data descriptor. */
    .macro  flat_data
    mov     $SEL_DATA, %ax
    mov     %ax, %ds
    mov     %ax, %es
    mov     %ax, %ss
    mov     %ax, %fs
    mov     %ax, %gs
    .endm

/* From 32-bit protected mode, paging off, to 64-bit code at \target on the
 * boot map (both CPUs take this way). */
    .macro  enter_ia32e target
    /* CR4: PAE (5), PGE (7), OSFXSR (9), OSXMMEXCPT (10). */
    mov     %cr4, %eax
    or      $((1 << 5) | (1 << 7) | (1 << 9) | (1 << 10)), %eax
    mov     %eax, %cr4
    mov     $boot_pml4, %eax
    mov     %eax, %cr3
    /* EFER (MSR C000_0080): LME (8), NXE (11) if CPUID 8000_0001 EDX[20]. */
    mov     $0x80000001, %eax
    cpuid
    xor     %esi, %esi
    bt      $20, %edx
    jnc     3f
    mov     $(1 << 11), %esi
3:  mov     $0xC0000080, %ecx
    rdmsr
    or      $(1 << 8), %eax
    or      %esi, %eax
    wrmsr
    /* CR0: PG (31), WP (16: read-only applies to CPL 0 too), PE (0), MP (1);
     * EM (2) off so SSE works. */
    mov     %cr0, %eax
    and     $~(1 << 2), %eax
    or      $((1 << 31) | (1 << 16) | (1 << 1) | 1), %eax
    mov     %eax, %cr0
    lgdt    gdt_ptr
    ljmp    $SEL_CODE64, $\target
    .endm

    .section .text.boot, "ax"
    .code32
    .balign 4
multiboot_header:
    .long   MB_MAGIC
    .long   MB_FLAGS
    .long   -(MB_MAGIC + MB_FLAGS)

    .global _start
_start:
    cli
    mov     $__stack_top, %esp
    /* .bss holds the boot tables: clear it before building them. */
    mov     $__bss_start, %edi
    mov     $__bss_end, %ecx
    sub     %edi, %ecx
    xor     %eax, %eax
    rep stosb
    /* PML4[0] -> PDPT; PDPT[0..3] -> PD0..3; PDn: 512 x 2 MiB, present+RW+PS. */
    mov     $boot_pdpt, %eax
    or      $3, %eax
    mov     %eax, boot_pml4
    xor     %ecx, %ecx
1:  mov     %ecx, %eax
    shl     $12, %eax
    add     $boot_pd, %eax
    or      $3, %eax
    mov     %eax, boot_pdpt(,%ecx,8)
    inc     %ecx
    cmp     $4, %ecx
    jb      1b
    xor     %ecx, %ecx
2:  mov     %ecx, %eax
    shl     $21, %eax
    or      $0x83, %eax
    mov     %eax, boot_pd(,%ecx,8)
    mov     %ecx, %eax
    shr     $11, %eax               /* bits 32+ of the 2 MiB frame */
    mov     %eax, boot_pd+4(,%ecx,8)
    inc     %ecx
    cmp     $2048, %ecx
    jb      2b
    enter_ia32e long_entry

    .code64
long_entry:
    flat_data
    mov     $__stack_top, %rsp
    call    pl_main
    mov     %eax, %edi
    call    pl_exit
4:  hlt
    jmp     4b

/*
 * CPU 1's way into long mode. A STARTUP IPI with vector V starts it in
 * real mode at CS:IP = V*0x100:0 (SDM 3A 9.4.4.1 "Typical BSP
 * Initialization Sequence", 10.6.1): pl_ap_tramp is copied to that page
 * below 1 MiB. It loads the GDT (through a copy of its pointer: real
 * mode reaches 64 KiB from CS only), sets CR0.PE and jumps to
 * ap_entry32 in the image, which takes _start's way into IA-32e mode on
 * the boot map; ap_entry64 takes its stack from pl_ap_boot and calls
 * pl_x86_ap_main(&pl_ap_boot).
 */
    .code16
    .global pl_ap_tramp, pl_ap_tramp_end
pl_ap_tramp:
    cli
    lgdtl   %cs:(ap_gdt_ptr - pl_ap_tramp)
    mov     %cr0, %eax
    or      $1, %eax
    mov     %eax, %cr0
    ljmpl   $SEL_CODE32, $ap_entry32
    .balign 4
ap_gdt_ptr:
    .word   gdt_end - gdt - 1
    .long   gdt
pl_ap_tramp_end:

    .code32
ap_entry32:
    flat_data
    enter_ia32e ap_entry64

    .code64
ap_entry64:
    flat_data
    mov     pl_ap_boot + AP_SP(%rip), %rsp
    lea     pl_ap_boot(%rip), %rdi
    call    pl_x86_ap_main
5:  cli
    hlt
    jmp     5b

/*
 * pl_x86_set_paging(cr3 = rdi, la57 = esi): load CR3; when CR4.LA57 must
 * change, which is only allowed outside IA-32e mode (SDM 3A 4.1.1), drop
 * to 32-bit protected mode, turn paging off, set LA57 and CR3, turn
 * paging on again and return to 64-bit mode (SDM 3A 9.8.5.4). The root
 * and this code must be below 4 GiB and identity-mapped in the new table.
 */
    .text
    .global pl_x86_set_paging
pl_x86_set_paging:
    mov     %cr4, %rax
    shr     $12, %rax
    and     $1, %eax
    cmp     %esi, %eax
    jne     1f
    mov     %rdi, %cr3
    ret
1:  push    %rbx
    push    %rbp
    push    %r12
    push    %r13
    push    %r14
    push    %r15
    pushfq
    cli
    mov     %rsp, saved_rsp(%rip)
    lea     2f(%rip), %rax
    push    $SEL_CODE32
    push    %rax
    lretq
    .code32
2:  mov     %cr0, %eax
    and     $0x7fffffff, %eax
    mov     %eax, %cr0              /* paging off: IA-32e mode inactive */
    mov     %cr4, %eax
    and     $~(1 << 12), %eax
    test    %esi, %esi
    jz      3f
    or      $(1 << 12), %eax
3:  mov     %eax, %cr4
    mov     %edi, %cr3
    mov     %cr0, %eax
    or      $0x80000000, %eax
    mov     %eax, %cr0              /* paging on: IA-32e mode active again */
    ljmp    $SEL_CODE64, $4f
    .code64
4:  mov     $SEL_DATA, %ax
    mov     %ax, %ds
    mov     %ax, %es
    mov     %ax, %ss
    mov     saved_rsp(%rip), %rsp
    popfq
    pop     %r15
    pop     %r14
    pop     %r13
    pop     %r12
    pop     %rbp
    pop     %rbx
    ret

/*
 * Exception entry stubs: vectors without a CPU-pushed error code push 0,
 * then the vector; pl_isr_common saves the GPRs and calls pl_trap(frame).
 */
    .macro  isr vec
    .balign 16
isr\vec:
    .if (\vec == 8) || (\vec >= 10 && \vec <= 14) || (\vec == 17) || (\vec == 21)
    .else
    push    $0
    .endif
    push    $\vec
    jmp     pl_isr_common
    .endm

    .balign 16
    .global pl_isr_stubs
pl_isr_stubs:
    .irp    v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    isr     \v
    .endr
    /* stubs 32, 33: the shootdown IPI and the local APIC's spurious vector */
    isr     PL_VEC_IPI
    isr     PL_VEC_SPURIOUS

pl_isr_common:
    push    %rax
    push    %rbx
    push    %rcx
    push    %rdx
    push    %rsi
    push    %rdi
    push    %rbp
    push    %r8
    push    %r9
    push    %r10
    push    %r11
    push    %r12
    push    %r13
    push    %r14
    push    %r15
    mov     %rsp, %rdi
    cld
    call    pl_trap
    pop     %r15
    pop     %r14
    pop     %r13
    pop     %r12
    pop     %r11
    pop     %r10
    pop     %r9
    pop     %r8
    pop     %rbp
    pop     %rdi
    pop     %rsi
    pop     %rdx
    pop     %rcx
    pop     %rbx
    pop     %rax
    add     $16, %rsp
    iretq

    .data
    .balign 16
gdt:
    .quad   0
    .quad   0x00AF9A000000FFFF      /* 0x08: 64-bit code */
    .quad   0x00CF92000000FFFF      /* 0x10: flat data */
    .quad   0x00CF9A000000FFFF      /* 0x18: 32-bit code */
gdt_end:
    .balign 8
    .word   0
gdt_ptr:
    .word   gdt_end - gdt - 1
    .quad   gdt
saved_rsp:
    .quad   0

    .bss
    .balign 4096
    .global boot_pml4
boot_pml4:
    .skip   4096
boot_pdpt:
    .skip   4096
    .global boot_pd
boot_pd:
    .skip   4 * 4096
