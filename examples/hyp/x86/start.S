/* SPDX-License-Identifier: MIT */
/*
 * Hypervisor entry. A multiboot (v1) loader (QEMU -kernel) enters _start
 * in 32-bit protected mode, paging off, EAX = the multiboot magic and EBX
 * = the multiboot information (Multiboot 0.6.96, 3.2). We keep both,
 * build an identity map of the first 4 GiB with 2 MiB pages, enable PAE,
 * EFER.LME (and NXE where CPUID has NX), then paging, and far-jump to
 * 64-bit code (Intel SDM vol. 3A, 9.8.5 "Initializing IA-32e Mode").
 * The hypervisor runs on that map for its whole life: it owns the first
 * 4 GiB of the machine and reaches guest RAM, the shadow and the swap
 * area at their physical addresses.
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 3 /* bit 0: modules page-aligned; bit 1: memory map */
#define SEL_CODE64 0x08
#define SEL_DATA 0x10
#define SEL_CODE32 0x18
#define AP_SP 0 /* struct hv_ap_boot (hv.h) */

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
    /* CR0: PG (31), WP (16), NE (5), MP (1), PE (0); EM (2) off. */
    mov     %cr0, %eax
    and     $~(1 << 2), %eax
    or      $((1 << 31) | (1 << 16) | (1 << 5) | (1 << 1) | 1), %eax
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
    mov     %eax, %ebp              /* multiboot magic */
    /* .bss holds the boot tables, the stacks and the table arena. */
    mov     $__bss_start, %edi
    mov     $__bss_end, %ecx
    sub     %edi, %ecx
    xor     %eax, %eax
    rep stosb
    mov     %ebp, hv_mb_magic
    mov     %ebx, hv_mb_info
    mov     $cpu0_stack_top, %esp
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
    mov     $cpu0_stack_top, %rsp
    call    hv_main
4:  cli
    hlt
    jmp     4b

/*
 * CPU 1's way into long mode. A STARTUP IPI with vector V starts it in
 * real mode at CS:IP = V*0x100:0 (SDM 3A 9.4.4.1, 10.6.1): hv_ap_tramp
 * is copied to that page below 1 MiB. It loads the GDT (through a copy
 * of its pointer: real mode reaches 64 KiB from CS only), sets CR0.PE and
 * jumps to ap_entry32 in the image, which takes _start's way into IA-32e
 * mode on the boot map; ap_entry64 takes its stack from hv_ap_boot and
 * calls hv_ap_main().
 */
    .code16
    .global hv_ap_tramp, hv_ap_tramp_end
hv_ap_tramp:
    cli
    lgdtl   %cs:(ap_gdt_ptr - hv_ap_tramp)
    mov     %cr0, %eax
    or      $1, %eax
    mov     %eax, %cr0
    ljmpl   $SEL_CODE32, $ap_entry32
    .balign 4
ap_gdt_ptr:
    .word   gdt_end - gdt - 1
    .long   gdt
hv_ap_tramp_end:

    .code32
ap_entry32:
    flat_data
    enter_ia32e ap_entry64

    .code64
ap_entry64:
    flat_data
    mov     hv_ap_boot + AP_SP(%rip), %rsp
    call    hv_ap_main
5:  cli
    hlt
    jmp     5b

/*
 * hv_vmrun(vmcb_pa = rdi, regs = rsi, host_area_pa = rdx): one world
 * switch. VMRUN loads and VMEXIT restores only part of the state (APM
 * vol. 2 15.5.1): RAX, RSP and RIP of the guest are in the VMCB, the
 * other general registers are the caller's to switch, and FS, GS, TR,
 * LDTR, KernelGSBase and the SYSCALL/SYSENTER MSRs move with VMLOAD and
 * VMSAVE (15.5.2). The host's go to host_area around the guest's.
 * struct hv_gregs (hv.h): rbx rcx rdx rsi rdi rbp r8..r15, 8 bytes each.
 * Called with GIF clear (CLGI); returns with it clear.
 */
    .text
    .global hv_vmrun
hv_vmrun:
    push    %rbx
    push    %rbp
    push    %r12
    push    %r13
    push    %r14
    push    %r15
    push    %rdx                    /* 16(%rsp): host area */
    push    %rdi                    /*  8(%rsp): VMCB */
    push    %rsi                    /*   (%rsp): guest registers */
    mov     %rdx, %rax
    vmsave
    mov     8(%rsp), %rax
    vmload
    mov     (%rsp), %rax
    mov     0(%rax), %rbx
    mov     8(%rax), %rcx
    mov     16(%rax), %rdx
    mov     24(%rax), %rsi
    mov     32(%rax), %rdi
    mov     40(%rax), %rbp
    mov     48(%rax), %r8
    mov     56(%rax), %r9
    mov     64(%rax), %r10
    mov     72(%rax), %r11
    mov     80(%rax), %r12
    mov     88(%rax), %r13
    mov     96(%rax), %r14
    mov     104(%rax), %r15
    mov     8(%rsp), %rax
    vmrun
    /* #VMEXIT: RSP and RAX are the host's again (RAX = the VMCB). */
    push    %rax
    mov     8(%rsp), %rax
    mov     %rbx, 0(%rax)
    mov     %rcx, 8(%rax)
    mov     %rdx, 16(%rax)
    mov     %rsi, 24(%rax)
    mov     %rdi, 32(%rax)
    mov     %rbp, 40(%rax)
    mov     %r8, 48(%rax)
    mov     %r9, 56(%rax)
    mov     %r10, 64(%rax)
    mov     %r11, 72(%rax)
    mov     %r12, 80(%rax)
    mov     %r13, 88(%rax)
    mov     %r14, 96(%rax)
    mov     %r15, 104(%rax)
    pop     %rax
    vmsave
    mov     16(%rsp), %rax
    vmload
    add     $24, %rsp
    pop     %r15
    pop     %r14
    pop     %r13
    pop     %r12
    pop     %rbp
    pop     %rbx
    ret

/*
 * Exception and NMI entry: vectors without a CPU-pushed error code push
 * 0, then the vector; isr_common saves the GPRs and calls hv_trap(frame).
 */
    .macro  isr vec
    .balign 16
isr\vec:
    .if (\vec == 8) || (\vec >= 10 && \vec <= 14) || (\vec == 17) || (\vec == 21)
    .else
    push    $0
    .endif
    push    $\vec
    jmp     isr_common
    .endm

    .balign 16
    .global hv_isr_stubs
hv_isr_stubs:
    .irp    v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    isr     \v
    .endr

isr_common:
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
    call    hv_trap
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
    .global hv_mb_magic, hv_mb_info
hv_mb_magic:
    .long   0
hv_mb_info:
    .long   0

    .bss
    .balign 4096
    .global boot_pml4
boot_pml4:
    .skip   4096
boot_pdpt:
    .skip   4096
boot_pd:
    .skip   4 * 4096
    .balign 16
cpu0_stack:
    .skip   65536
cpu0_stack_top:
