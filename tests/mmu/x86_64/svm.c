/* SPDX-License-Identifier: MIT */
/*
 * AMD SVM with nested paging for the NPT targets: the payload is the host,
 * mmport's MMP_PT_X86_NPT table is the nested table (nCR3 from
 * mmp_pt_regs), and a one-instruction guest in long mode, on its own
 * identity page tables (1 GiB pages, gVA = gPA), loads, stores or calls
 * at a guest-physical address and leaves with VMMCALL. A nested page fault
 * is a #VMEXIT(NPF) whose EXITINFO1 has the #PF-style error code (P, W,
 * U, ID), bit 32 set for the final guest-physical translation, and
 * EXITINFO2 the guest-physical address (AMD APM vol. 2, 15.25.6 "Nested
 * versus Guest Page Faults, Fault Ordering"). VMCB layout: APM vol. 2
 * Appendix B, Tables B-1 and B-2.
 */
#include "arch.h"
#include "svm.h"

#define MSR_VM_HSAVE_PA 0xc0010117u
#define EFER_SVME (1ull << 12)

/* VMCB control area offsets (Table B-1). */
#define C_INTERCEPT_EXC 0x008
#define C_INTERCEPT_MISC1 0x00c
#define C_INTERCEPT_MISC2 0x010
#define C_ASID 0x058
#define C_TLB_CONTROL 0x05c
#define C_EXITCODE 0x070
#define C_EXITINFO1 0x078
#define C_EXITINFO2 0x080
#define C_NP_ENABLE 0x090
#define C_NCR3 0x0b0
#define C_CLEAN 0x0c0
/* State save area (Table B-2). */
#define S_ES 0x400
#define S_CS 0x410
#define S_SS 0x420
#define S_DS 0x430
#define S_GDTR 0x460
#define S_IDTR 0x480
#define S_TR 0x490
#define S_EFER 0x4d0
#define S_CR4 0x548
#define S_CR3 0x550
#define S_CR0 0x558
#define S_DR7 0x560
#define S_DR6 0x568
#define S_RFLAGS 0x570
#define S_RIP 0x578
#define S_RSP 0x5d8
#define S_RAX 0x5f8
#define S_GPAT 0x668

static uint8_t vmcb[4096] __attribute__((aligned(4096)));
static uint8_t hsave[4096] __attribute__((aligned(4096)));
static uint64_t guest_pml4[512] __attribute__((aligned(4096)));
static uint64_t guest_pdpt[2][512] __attribute__((aligned(4096)));
static uint64_t guest_stack[512] __attribute__((aligned(16)));
static int flush_pending;

#define V64(off) (*(volatile uint64_t *)(vmcb + (off)))
#define V32(off) (*(volatile uint32_t *)(vmcb + (off)))
#define V16(off) (*(volatile uint16_t *)(vmcb + (off)))
#define V8(off) (*(volatile uint8_t *)(vmcb + (off)))

/* The guest: one access at gPA %rax (store value in %rdx), then VMMCALL. */
extern char pl_guest_load[], pl_guest_store[], pl_guest_exec[];
__asm__(".text\n"
        "pl_guest_load:  movq (%rax), %rax\n\tvmmcall\n"
        "pl_guest_store: movq %rdx, (%rax)\n\tvmmcall\n"
        "pl_guest_exec:  call *%rax\n\tvmmcall\n");

static void seg(unsigned off, uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
    V16(off) = sel;
    V16(off + 2) = attr;
    V32(off + 4) = limit;
    V64(off + 8) = base;
}

int pl_svm_init(const char **why)
{
    uint32_t r[4];
    pl_cpuid(0x80000001, 0, r);
    if (!(r[2] & (1u << 2))) {
        *why = "CPUID.80000001:ECX.SVM clear";
        return -1;
    }
    pl_cpuid(0x8000000a, 0, r);
    if (!(r[3] & 1u)) {
        *why = "CPUID.8000000A:EDX.NP (nested paging) clear";
        return -1;
    }
    pl_wrmsr(MSR_EFER, pl_rdmsr(MSR_EFER) | EFER_SVME);
    pl_wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)hsave);

    /* Guest paging: identity over 1 TiB with 1 GiB pages, A/D preset. */
    for (unsigned i = 0; i < 2; i++) {
        guest_pml4[i] = (uint64_t)(uintptr_t)guest_pdpt[i] | 0x23;
        for (unsigned j = 0; j < 512; j++)
            guest_pdpt[i][j] = ((uint64_t)(i * 512 + j) << 30) | 0xe3;
    }

    memset(vmcb, 0, sizeof vmcb);
    V32(C_INTERCEPT_EXC) = 0xffffffffu;               /* every guest exception exits */
    V32(C_INTERCEPT_MISC1) = (1u << 24) | (1u << 31); /* HLT, shutdown */
    V32(C_INTERCEPT_MISC2) = (1u << 0) | (1u << 1);   /* VMRUN (required), VMMCALL */
    V32(C_ASID) = 1;
    V64(C_NP_ENABLE) = 1;

    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } gdt;
    __asm__ volatile("sgdt %0" : "=m"(gdt));
    seg(S_CS, 0x08, 0xa9b, 0xffffffffu, 0); /* 64-bit code: P S type B, L, G */
    seg(S_SS, 0x10, 0xc93, 0xffffffffu, 0);
    seg(S_DS, 0x10, 0xc93, 0xffffffffu, 0);
    seg(S_ES, 0x10, 0xc93, 0xffffffffu, 0);
    seg(S_TR, 0, 0x8b, 0x67, 0);
    V32(S_GDTR + 4) = gdt.limit;
    V64(S_GDTR + 8) = gdt.base;
    V32(S_IDTR + 4) = 0;
    V64(S_EFER) = EFER_SVME | (1ull << 11) | (1ull << 10) | (1ull << 8); /* NXE LMA LME */
    V64(S_CR0) = 0x80010033ull; /* PG WP NE ET MP PE */
    V64(S_CR3) = (uint64_t)(uintptr_t)guest_pml4;
    V64(S_CR4) = 0x220;         /* PAE, OSFXSR */
    V64(S_DR7) = 0x400;
    V64(S_DR6) = 0xffff0ff0ull;
    V64(S_RFLAGS) = 2;
    V64(S_GPAT) = 0x0007040600070406ull; /* power-on PAT */
    return 0;
}

void pl_svm_set_ncr3(uint64_t ncr3)
{
    V64(C_NCR3) = ncr3;
    flush_pending = 1;
}

void pl_svm_flush(void)
{
    flush_pending = 1;
}

int pl_svm_probe(int op, uint64_t gpa, uint64_t value, struct pl_svm_exit *x)
{
    static char *const entry[] = {pl_guest_load, pl_guest_store, pl_guest_exec};
    V64(S_RIP) = (uint64_t)(uintptr_t)entry[op];
    V64(S_RSP) = (uint64_t)(uintptr_t)&guest_stack[512];
    V64(S_RAX) = gpa;
    V8(C_TLB_CONTROL) = flush_pending ? 1 : 0; /* 1: flush every ASID's entries */
    V32(C_CLEAN) = 0;
    flush_pending = 0;
    uint64_t pa = (uint64_t)(uintptr_t)vmcb;
    __asm__ volatile("vmrun\n\tstgi"
                     : "+a"(pa), "+d"(value)
                     :
                     : "rbx", "rcx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
                       "r14", "r15", "memory", "cc");
    x->code = V64(C_EXITCODE);
    x->info1 = V64(C_EXITINFO1);
    x->info2 = V64(C_EXITINFO2);
    x->rax = V64(S_RAX);
    return x->code == SVM_EXIT_VMMCALL ? 0 : -1;
}
