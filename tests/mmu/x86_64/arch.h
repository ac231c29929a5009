/* SPDX-License-Identifier: MIT */
/* x86-64 payload: trap frame, control registers, probes, paging switch. */
#ifndef MMPORT_TESTS_MMU_X86_64_ARCH_H
#define MMPORT_TESTS_MMU_X86_64_ARCH_H

#include <atomic_ops.h>
#include <stdint.h>

struct pl_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vec, err;
    uint64_t rip, cs, rflags, rsp, ss;
};

#define pl_read_cr(n)                                                                    \
    ({                                                                                   \
        uint64_t v_;                                                                     \
        __asm__ volatile("mov %%cr" #n ", %0" : "=r"(v_));                               \
        v_;                                                                              \
    })

static inline uint64_t pl_rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((uint64_t)hi << 32) | lo;
}

static inline void pl_wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}
static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port));
}
static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void pl_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
}

#define MSR_EFER 0xc0000080u
#define MSR_GS_BASE 0xc0000101u /* holds the CPU's index (pl_x86_cpu) */
#define MSR_PAT 0x277u
#define CR4_LA57 (1u << 12)

/* #PF error code bits (SDM 3A 4.7) */
#define PF_P 0x1u
#define PF_W 0x2u
#define PF_U 0x4u
#define PF_RSVD 0x8u
#define PF_ID 0x10u

/** Load CR3, switching 4-/5-level paging through 32-bit mode if needed. */
void pl_x86_set_paging(uint64_t cr3, uint32_t la57);
extern uint64_t boot_pml4[512];
extern uint64_t boot_pd[4 * 512];

/* A fault-tolerant access: 0 when it completed, else -1 with vec/err/cr2. */
struct pl_probe {
    uint64_t vec, err, cr2, value;
};
int pl_probe_load(uint64_t va, struct pl_probe *p);
int pl_probe_store(uint64_t va, uint64_t value, struct pl_probe *p);
/* Calls @p va, which must hold a `ret`; a fetch fault is recorded. */
int pl_probe_exec(uint64_t va, struct pl_probe *p);

void pl_idt_init(void);
/** Measure the TSC against the PIT (for pl_arch_now_us): ticks per us. */
unsigned pl_x86_tsc_calibrate(void);
/** Load the IDT pl_idt_init filled (CPU 1 shares it). */
void pl_idt_load(void);

/* ---- a second CPU (smp.c) ---- */

#define PL_NCPU 2
#define PL_VEC_IPI 64       /* TLB shootdown (start.S has the same numbers) */
#define PL_VEC_SPURIOUS 79  /* the local APIC's spurious vector */

/** This CPU's index: 0 for the one that booted (IA32_GS_BASE holds it). */
unsigned pl_x86_cpu(void);
/** 0 when CPU 1 can be started (copies its start code), else -1 and @p why. */
int pl_x86_smp_prepare(const char **why);
/** A TLB flush on this CPU and, while CPU 1 runs, a shootdown on the other. */
void pl_x86_flush(uint64_t va, uint64_t size, unsigned flags);
/** The shootdown IPI's handler (interrupts off, on the interrupted stack). */
void pl_x86_ipi(void);

/* What CPU 1 needs on its way from the STARTUP IPI to fn(arg); start.S
 * reads sp at offset AP_SP (0). */
struct pl_ap_boot {
    uint64_t sp, cr3, cr4, pat;
    void (*fn)(void *);
    void *arg;
    volatile AO_t state; /* 1: on the table with interrupts on, 2: fn returned */
};
extern struct pl_ap_boot pl_ap_boot;
void pl_x86_ap_main(struct pl_ap_boot *b);
/* The real-mode start code, copied below 1 MiB for the STARTUP IPI. */
extern char pl_ap_tramp[], pl_ap_tramp_end[];
/* Back to the boot map (4-level). */
void pl_boot_paging_restore(void);

#endif
