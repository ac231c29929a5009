/* SPDX-License-Identifier: MIT */
/*
 * Intel VMX with EPT for the EPT targets (run under Bochs, whose CPU
 * models emulate VMX and EPT; QEMU's TCG has no VMX). The payload enters
 * VMX root operation, builds one VMCS whose EPTP comes from mmp_pt_regs()
 * on mmport's MMP_PT_X86_EPT table, and runs a one-instruction guest in
 * IA-32e mode on its own identity page tables (1 GiB pages, gVA = gPA)
 * that loads, stores or calls at a guest-physical address and leaves
 * with VMCALL. An EPT violation is VM exit 48 with the exit qualification
 * of SDM vol. 3C Table 28-7 (access R/W/X in bits 2:0, the translation's
 * R/W/X in 5:3, bit 7/8: the access was the final translation of a guest
 * linear address) and the guest-physical address; a misconfiguration is
 * exit 49 (29.3.3.1). VMCS field encodings: SDM vol. 3D Appendix B;
 * checks on VM entry: 3C 27.2-27.3; capability MSRs: 3D Appendix A.
 */
#include "arch.h"
#include "vmx.h"

#define MSR_FEATURE_CONTROL 0x3au
#define MSR_VMX_BASIC 0x480u
#define MSR_VMX_PINBASED 0x481u
#define MSR_VMX_PROCBASED 0x482u
#define MSR_VMX_EXIT 0x483u
#define MSR_VMX_ENTRY 0x484u
#define MSR_VMX_CR0_FIXED0 0x486u
#define MSR_VMX_CR0_FIXED1 0x487u
#define MSR_VMX_CR4_FIXED0 0x488u
#define MSR_VMX_CR4_FIXED1 0x489u
#define MSR_VMX_PROCBASED2 0x48bu
#define MSR_VMX_EPT_VPID_CAP 0x48cu
#define MSR_VMX_TRUE_PINBASED 0x48du
#define MSR_VMX_TRUE_PROCBASED 0x48eu
#define MSR_VMX_TRUE_EXIT 0x48fu
#define MSR_VMX_TRUE_ENTRY 0x490u

/* VMCS fields (SDM 3D Appendix B). */
enum {
    G_ES_SEL = 0x800, G_CS_SEL = 0x802, G_SS_SEL = 0x804, G_DS_SEL = 0x806, G_FS_SEL = 0x808,
    G_GS_SEL = 0x80a, G_LDTR_SEL = 0x80c, G_TR_SEL = 0x80e,
    H_ES_SEL = 0xc00, H_CS_SEL = 0xc02, H_SS_SEL = 0xc04, H_DS_SEL = 0xc06, H_FS_SEL = 0xc08,
    H_GS_SEL = 0xc0a, H_TR_SEL = 0xc0c,
    EPT_POINTER = 0x201a, GUEST_PHYS = 0x2400, LINK_PTR = 0x2800, G_DEBUGCTL = 0x2802,
    G_EFER = 0x2806, H_EFER = 0x2c02,
    PIN_CTLS = 0x4000, PROC_CTLS = 0x4002, EXC_BITMAP = 0x4004, CR3_TARGETS = 0x400a,
    EXIT_CTLS = 0x400c, EXIT_MSR_STORE = 0x400e, EXIT_MSR_LOAD = 0x4010, ENTRY_CTLS = 0x4012,
    ENTRY_MSR_LOAD = 0x4014, ENTRY_INTR = 0x4016, PROC_CTLS2 = 0x401e,
    VM_ERROR = 0x4400, EXIT_REASON = 0x4402,
    G_ES_LIM = 0x4800, G_CS_LIM = 0x4802, G_SS_LIM = 0x4804, G_DS_LIM = 0x4806,
    G_FS_LIM = 0x4808, G_GS_LIM = 0x480a, G_LDTR_LIM = 0x480c, G_TR_LIM = 0x480e,
    G_GDTR_LIM = 0x4810, G_IDTR_LIM = 0x4812,
    G_ES_AR = 0x4814, G_CS_AR = 0x4816, G_SS_AR = 0x4818, G_DS_AR = 0x481a, G_FS_AR = 0x481c,
    G_GS_AR = 0x481e, G_LDTR_AR = 0x4820, G_TR_AR = 0x4822, G_INTERRUPTIBILITY = 0x4824,
    G_ACTIVITY = 0x4826, G_SYSENTER_CS = 0x482a, H_SYSENTER_CS = 0x4c00,
    CR0_MASK = 0x6000, CR4_MASK = 0x6002, CR0_SHADOW = 0x6004, CR4_SHADOW = 0x6006,
    EXIT_QUAL = 0x6400, GUEST_LINEAR = 0x640a,
    G_CR0 = 0x6800, G_CR3 = 0x6802, G_CR4 = 0x6804, G_ES_BASE = 0x6806, G_CS_BASE = 0x6808,
    G_SS_BASE = 0x680a, G_DS_BASE = 0x680c, G_FS_BASE = 0x680e, G_GS_BASE = 0x6810,
    G_LDTR_BASE = 0x6812, G_TR_BASE = 0x6814, G_GDTR_BASE = 0x6816, G_IDTR_BASE = 0x6818,
    G_DR7 = 0x681a, G_RSP = 0x681c, G_RIP = 0x681e, G_RFLAGS = 0x6820, G_PENDING_DBG = 0x6822,
    G_SYSENTER_ESP = 0x6824, G_SYSENTER_EIP = 0x6826,
    H_CR0 = 0x6c00, H_CR3 = 0x6c02, H_CR4 = 0x6c04, H_FS_BASE = 0x6c06, H_GS_BASE = 0x6c08,
    H_TR_BASE = 0x6c0a, H_GDTR_BASE = 0x6c0c, H_IDTR_BASE = 0x6c0e, H_SYSENTER_ESP = 0x6c10,
    H_SYSENTER_EIP = 0x6c12, H_RSP = 0x6c14, H_RIP = 0x6c16,
};

static uint8_t vmxon_region[4096] __attribute__((aligned(4096)));
static uint8_t vmcs[4096] __attribute__((aligned(4096)));
static uint64_t guest_pml4[512] __attribute__((aligned(4096)));
static uint64_t guest_pdpt[2][512] __attribute__((aligned(4096)));
static uint64_t guest_stack[512] __attribute__((aligned(16)));
/* A GDT with a 64-bit TSS: VM entry needs a non-null host TR (27.2.3). */
static uint64_t gdt[8] __attribute__((aligned(16)));
static uint8_t tss[104] __attribute__((aligned(16)));
static uint64_t ept_cap, cur_eptp;
static int launched;

static int vmwrite(uint64_t field, uint64_t v)
{
    uint8_t bad;
    __asm__ volatile("vmwrite %2, %1; setna %0" : "=q"(bad) : "r"(field), "r"(v) : "cc", "memory");
    return bad;
}

static uint64_t vmread(uint64_t field)
{
    uint64_t v = 0;
    __asm__ volatile("vmread %1, %0" : "=r"(v) : "r"(field) : "cc");
    return v;
}

/* The control value: wanted bits, forced to what the capability MSR allows
 * (low half: must be 1, high half: may be 1; 3D A.3-A.5). */
static uint32_t ctl(uint32_t msr, uint32_t want, uint32_t *missing)
{
    uint64_t cap = pl_rdmsr(msr);
    *missing |= want & ~(uint32_t)(cap >> 32);
    return (want | (uint32_t)cap) & (uint32_t)(cap >> 32);
}

/* The guest: one access at gPA %rax (store value in %rdx), then VMCALL. */
extern char pl_vguest_load[], pl_vguest_store[], pl_vguest_exec[], pl_vmx_exit[];
__asm__(".text\n"
        "pl_vguest_load:  movq (%rax), %rax\n\tvmcall\n"
        "pl_vguest_store: movq %rdx, (%rax)\n\tvmcall\n"
        "pl_vguest_exec:  call *%rax\n\tvmcall\n"
        /* pl_vmx_enter(rax = rdi, rdx = rsi, launched = rdx, failed = rcx): the
         * host RSP goes into the VMCS; a VM exit resumes at pl_vmx_exit with
         * the guest's registers, whose RAX is returned. */
        ".globl pl_vmx_enter\n"
        "pl_vmx_enter:\n\t"
        "push %rbp\n\tpush %rbx\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n\t"
        "push %rcx\n\t"
        "mov $0x6c14, %r8\n\tvmwrite %rsp, %r8\n\t"
        "mov %rdx, %r9\n\tmov %rdi, %rax\n\tmov %rsi, %rdx\n\t"
        "test %r9, %r9\n\tjnz 1f\n\tvmlaunch\n\tjmp 2f\n"
        "1:\tvmresume\n"
        "2:\tpop %rcx\n\tmovq $1, (%rcx)\n\tjmp 3f\n"
        "pl_vmx_exit:\n\t"
        "pop %rcx\n\tmovq $0, (%rcx)\n"
        "3:\tpop %r15\n\tpop %r14\n\tpop %r13\n\tpop %r12\n\tpop %rbx\n\tpop %rbp\n\tret\n");
uint64_t pl_vmx_enter(uint64_t rax, uint64_t rdx, uint64_t launched, uint64_t *failed);

uint64_t pl_vmx_ept_cap(void)
{
    return ept_cap;
}

int pl_vmx_init(const char **why)
{
    uint32_t r[4];
    pl_cpuid(1, 0, r);
    if (!(r[2] & (1u << 5))) {
        *why = "CPUID.1:ECX.VMX clear";
        return -1;
    }
    uint64_t fc = pl_rdmsr(MSR_FEATURE_CONTROL);
    if (!(fc & 1))
        pl_wrmsr(MSR_FEATURE_CONTROL, fc | 1 | 4); /* lock, VMXON outside SMX */
    else if (!(fc & 4)) {
        *why = "IA32_FEATURE_CONTROL locked without VMXON outside SMX";
        return -1;
    }
    uint64_t basic = pl_rdmsr(MSR_VMX_BASIC);
    int true_ctls = (basic >> 55) & 1;
    if (!((pl_rdmsr(MSR_VMX_PROCBASED) >> 32) & (1u << 31)) ||
        !((pl_rdmsr(MSR_VMX_PROCBASED2) >> 32) & (1u << 1))) {
        *why = "no EPT (IA32_VMX_PROCBASED_CTLS2 bit 1 not allowed)";
        return -1;
    }
    ept_cap = pl_rdmsr(MSR_VMX_EPT_VPID_CAP);
    if (!(ept_cap & (1u << 14)) || !(ept_cap & (1u << 6))) {
        *why = "IA32_VMX_EPT_VPID_CAP lacks WB (bit 14) or a 4-level walk (bit 6)";
        return -1;
    }

    /* CR0/CR4 as VMX operation requires (3D A.7, A.8): NE, VMXE. */
    uint64_t cr0 = pl_read_cr(0), cr4 = pl_read_cr(4) | (1ull << 13);
    cr0 = (cr0 | pl_rdmsr(MSR_VMX_CR0_FIXED0)) & pl_rdmsr(MSR_VMX_CR0_FIXED1);
    cr4 = (cr4 | pl_rdmsr(MSR_VMX_CR4_FIXED0)) & pl_rdmsr(MSR_VMX_CR4_FIXED1);
    __asm__ volatile("mov %0, %%cr0" ::"r"(cr0) : "memory");
    __asm__ volatile("mov %0, %%cr4" ::"r"(cr4) : "memory");

    /* Our GDT: the boot one's code/data selectors, plus a TSS at 0x20. */
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } g;
    __asm__ volatile("sgdt %0" : "=m"(g));
    memcpy(gdt, (void *)(uintptr_t)g.base, 4 * 8);
    uint64_t tb = (uint64_t)(uintptr_t)tss;
    gdt[4] = (sizeof tss - 1) | ((tb & 0xffffff) << 16) | (0x89ull << 40) | ((tb >> 24 & 0xff) << 56);
    gdt[5] = tb >> 32;
    g.limit = sizeof gdt - 1;
    g.base = (uint64_t)(uintptr_t)gdt;
    __asm__ volatile("lgdt %0; ltr %w1" ::"m"(g), "r"(0x20) : "memory");

    uint32_t rev = (uint32_t)basic & 0x7fffffff;
    memcpy(vmxon_region, &rev, 4);
    memcpy(vmcs, &rev, 4);
    uint64_t pa = (uint64_t)(uintptr_t)vmxon_region, vpa = (uint64_t)(uintptr_t)vmcs;
    uint8_t bad;
    __asm__ volatile("vmxon %1; setna %0" : "=q"(bad) : "m"(pa) : "cc", "memory");
    if (bad) {
        *why = "VMXON failed";
        return -1;
    }
    __asm__ volatile("vmclear %1; setna %0" : "=q"(bad) : "m"(vpa) : "cc", "memory");
    __asm__ volatile("vmptrld %1; setna %0" : "=q"(bad) : "m"(vpa) : "cc", "memory");
    if (bad) {
        *why = "VMCLEAR/VMPTRLD failed";
        return -1;
    }

    /* Guest paging: identity over 1 TiB with 1 GiB pages, A/D preset. */
    for (unsigned i = 0; i < 2; i++) {
        guest_pml4[i] = (uint64_t)(uintptr_t)guest_pdpt[i] | 0x23;
        for (unsigned j = 0; j < 512; j++)
            guest_pdpt[i][j] = ((uint64_t)(i * 512 + j) << 30) | 0xe3;
    }

    uint32_t miss = 0;
    int bad_w = 0;
    bad_w |= vmwrite(PIN_CTLS, ctl(true_ctls ? MSR_VMX_TRUE_PINBASED : MSR_VMX_PINBASED, 0, &miss));
    /* primary: HLT exiting (7), unconditional I/O exiting (24), secondary (31) */
    bad_w |= vmwrite(PROC_CTLS, ctl(true_ctls ? MSR_VMX_TRUE_PROCBASED : MSR_VMX_PROCBASED,
                                    (1u << 7) | (1u << 24) | (1u << 31), &miss));
    bad_w |= vmwrite(PROC_CTLS2, ctl(MSR_VMX_PROCBASED2, 1u << 1, &miss)); /* enable EPT */
    /* exit: host address-space size (9), save/load EFER (20, 21) */
    bad_w |= vmwrite(EXIT_CTLS, ctl(true_ctls ? MSR_VMX_TRUE_EXIT : MSR_VMX_EXIT,
                                    (1u << 9) | (1u << 20) | (1u << 21), &miss));
    /* entry: IA-32e mode guest (9), load EFER (15) */
    bad_w |= vmwrite(ENTRY_CTLS, ctl(true_ctls ? MSR_VMX_TRUE_ENTRY : MSR_VMX_ENTRY,
                                     (1u << 9) | (1u << 15), &miss));
    if (miss) {
        *why = "a needed VM-execution/exit/entry control is not allowed";
        return -1;
    }
    bad_w |= vmwrite(EXC_BITMAP, 0xffffffffu); /* every guest exception exits */
    bad_w |= vmwrite(CR3_TARGETS, 0);
    bad_w |= vmwrite(EXIT_MSR_STORE, 0) | vmwrite(EXIT_MSR_LOAD, 0) | vmwrite(ENTRY_MSR_LOAD, 0);
    bad_w |= vmwrite(ENTRY_INTR, 0);
    bad_w |= vmwrite(CR0_MASK, 0) | vmwrite(CR4_MASK, 0);
    bad_w |= vmwrite(CR0_SHADOW, cr0) | vmwrite(CR4_SHADOW, cr4);
    bad_w |= vmwrite(LINK_PTR, ~0ull);

    /* Host state: this payload, back at pl_vmx_exit. */
    bad_w |= vmwrite(H_CR0, cr0) | vmwrite(H_CR3, pl_read_cr(3)) | vmwrite(H_CR4, cr4);
    bad_w |= vmwrite(H_CS_SEL, 0x08) | vmwrite(H_SS_SEL, 0x10) | vmwrite(H_DS_SEL, 0x10) |
             vmwrite(H_ES_SEL, 0x10) | vmwrite(H_FS_SEL, 0) | vmwrite(H_GS_SEL, 0) |
             vmwrite(H_TR_SEL, 0x20);
    bad_w |= vmwrite(H_FS_BASE, 0) | vmwrite(H_GS_BASE, 0) | vmwrite(H_TR_BASE, tb) |
             vmwrite(H_GDTR_BASE, g.base);
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } idt;
    __asm__ volatile("sidt %0" : "=m"(idt));
    bad_w |= vmwrite(H_IDTR_BASE, idt.base);
    bad_w |= vmwrite(H_SYSENTER_CS, 0) | vmwrite(H_SYSENTER_ESP, 0) | vmwrite(H_SYSENTER_EIP, 0);
    bad_w |= vmwrite(H_EFER, pl_rdmsr(MSR_EFER));
    bad_w |= vmwrite(H_RIP, (uint64_t)(uintptr_t)pl_vmx_exit);

    /* Guest state (27.3.1): 64-bit code, flat data, busy TSS, no LDT. */
    static const struct { uint32_t sel, lim, ar, base; uint16_t s; uint32_t arv; } segs[] = {
        {G_CS_SEL, G_CS_LIM, G_CS_AR, G_CS_BASE, 0x08, 0xa09b},
        {G_SS_SEL, G_SS_LIM, G_SS_AR, G_SS_BASE, 0x10, 0xc093},
        {G_DS_SEL, G_DS_LIM, G_DS_AR, G_DS_BASE, 0x10, 0xc093},
        {G_ES_SEL, G_ES_LIM, G_ES_AR, G_ES_BASE, 0x10, 0xc093},
        {G_FS_SEL, G_FS_LIM, G_FS_AR, G_FS_BASE, 0x10, 0xc093},
        {G_GS_SEL, G_GS_LIM, G_GS_AR, G_GS_BASE, 0x10, 0xc093},
    };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(segs); i++)
        bad_w |= vmwrite(segs[i].sel, segs[i].s) | vmwrite(segs[i].lim, 0xffffffffu) |
                 vmwrite(segs[i].ar, segs[i].arv) | vmwrite(segs[i].base, 0);
    bad_w |= vmwrite(G_TR_SEL, 0x20) | vmwrite(G_TR_LIM, sizeof tss - 1) |
             vmwrite(G_TR_AR, 0x8b) | vmwrite(G_TR_BASE, tb);
    bad_w |= vmwrite(G_LDTR_SEL, 0) | vmwrite(G_LDTR_LIM, 0) | vmwrite(G_LDTR_AR, 1u << 16) |
             vmwrite(G_LDTR_BASE, 0);
    bad_w |= vmwrite(G_GDTR_BASE, g.base) | vmwrite(G_GDTR_LIM, g.limit);
    bad_w |= vmwrite(G_IDTR_BASE, 0) | vmwrite(G_IDTR_LIM, 0);
    bad_w |= vmwrite(G_CR0, cr0) | vmwrite(G_CR4, cr4 & ~(1ull << 12)); /* guest: 4-level */
    bad_w |= vmwrite(G_CR3, (uint64_t)(uintptr_t)guest_pml4);
    bad_w |= vmwrite(G_DR7, 0x400) | vmwrite(G_RFLAGS, 2) | vmwrite(G_DEBUGCTL, 0);
    bad_w |= vmwrite(G_EFER, (1ull << 11) | (1ull << 10) | (1ull << 8)); /* NXE LMA LME */
    bad_w |= vmwrite(G_INTERRUPTIBILITY, 0) | vmwrite(G_ACTIVITY, 0) | vmwrite(G_PENDING_DBG, 0);
    bad_w |= vmwrite(G_SYSENTER_CS, 0) | vmwrite(G_SYSENTER_ESP, 0) | vmwrite(G_SYSENTER_EIP, 0);
    if (bad_w) {
        *why = "VMWRITE failed";
        return -1;
    }
    return 0;
}

/* INVEPT (3C 29.4.3.1): all-context (type 2) where supported, else
 * single-context (type 1) for the current EPTP. */
void pl_vmx_invept(void)
{
    struct {
        uint64_t eptp, zero;
    } d = {cur_eptp, 0};
    uint64_t type = (ept_cap & (1ull << 26)) ? 2 : 1;
    __asm__ volatile("invept %0, %1" ::"m"(d), "r"(type) : "cc", "memory");
}

int pl_vmx_set_eptp(uint64_t eptp)
{
    cur_eptp = eptp;
    if (vmwrite(EPT_POINTER, eptp))
        return -1;
    pl_vmx_invept();
    return 0;
}

int pl_vmx_probe(int op, uint64_t gpa, uint64_t value, struct pl_vmx_exit *x)
{
    static char *const entry[] = {pl_vguest_load, pl_vguest_store, pl_vguest_exec};
    vmwrite(G_RIP, (uint64_t)(uintptr_t)entry[op]);
    vmwrite(G_RSP, (uint64_t)(uintptr_t)&guest_stack[512]);
    vmwrite(G_RFLAGS, 2);
    uint64_t failed = 0;
    x->rax = pl_vmx_enter(gpa, value, (uint64_t)launched, &failed);
    if (failed) {
        x->reason = ~0u;
        x->qual = vmread(VM_ERROR); /* VM-instruction error number */
        x->gpa = 0;
        return -1;
    }
    launched = 1;
    x->reason = (uint32_t)vmread(EXIT_REASON);
    x->qual = vmread(EXIT_QUAL);
    x->gpa = vmread(GUEST_PHYS);
    return (x->reason & 0xffff) == VMX_EXIT_VMCALL ? 0 : -1;
}
