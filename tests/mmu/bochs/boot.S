/* SPDX-License-Identifier: MIT */
/*
 * Boot sector for running the x86-64 payload under Bochs (no multiboot
 * loader there): the BIOS loads this sector at 0x7c00 in real mode; it
 * reads the flat payload image (LBA 1.., PAYLOAD_SECTORS sectors) to
 * 0x10000 with INT 13h AH=42h (EDD extended read), enables A20 (port 0x92),
 * enters 32-bit protected mode with flat segments, copies the image to
 * its link address (1 MiB) and jumps to the payload's _start (ENTRY), the
 * state a multiboot loader leaves (paging off, flat 4 GiB segments).
 */
    .code16
    .text
    .global _start16
_start16:
    cli
    xor     %ax, %ax
    mov     %ax, %ds
    mov     %ax, %ss
    mov     $0x7c00, %sp
    mov     %dl, drive
    mov     $PAYLOAD_SECTORS, %cx
1:  mov     %cx, %ax
    cmp     $64, %ax                /* at most 32 KiB per call */
    jbe     2f
    mov     $64, %ax
2:  mov     %ax, dap_count
    push    %cx
    mov     $dap, %si
    mov     drive, %dl
    mov     $0x42, %ah
    int     $0x13
    pop     %cx
    jc      fail
    movzwl  dap_count, %eax
    sub     %ax, %cx
    addl    %eax, dap_lba
    shl     $5, %ax                 /* sectors * 512 / 16: paragraphs */
    add     %ax, dap_seg
    test    %cx, %cx
    jnz     1b
    in      $0x92, %al
    or      $2, %al
    and     $0xfe, %al
    out     %al, $0x92
    lgdt    gdt_desc
    mov     %cr0, %eax
    or      $1, %eax
    mov     %eax, %cr0
    ljmp    $0x08, $pm

fail:
    mov     $'E', %al
    out     %al, $0xe9
    hlt
    jmp     fail

    .code32
pm: mov     $0x10, %ax
    mov     %ax, %ds
    mov     %ax, %es
    mov     %ax, %ss
    mov     $0x10000, %esi
    mov     $0x100000, %edi
    mov     $(PAYLOAD_SECTORS * 128), %ecx
    cld
    rep movsl
    mov     $ENTRY, %eax
    jmp     *%eax

    .balign 8
gdt:
    .quad   0
    .quad   0x00cf9a000000ffff      /* 0x08: 32-bit code, flat */
    .quad   0x00cf92000000ffff      /* 0x10: data, flat */
gdt_desc:
    .word   gdt_desc - gdt - 1
    .long   gdt
drive:
    .byte   0
    .balign 4
dap:
    .byte   16, 0
dap_count:
    .word   0
    .word   0                       /* offset */
dap_seg:
    .word   0x1000                  /* segment: 0x10000 */
dap_lba:
    .quad   1

    .org    510
    .byte   0x55, 0xaa
