/* SPDX-License-Identifier: MIT */
/* aarch64 payload: exception frame, system-register access, MMU switching. */
#ifndef MMPORT_TESTS_MMU_AARCH64_ARCH_H
#define MMPORT_TESTS_MMU_AARCH64_ARCH_H

#include <stdint.h>

#include <atomic_ops.h>

struct pl_frame {
    uint64_t x[31]; /* x0..x30 */
    uint64_t elr, spsr, esr, far;
};

#define pl_read_sysreg(r)                                                                \
    ({                                                                                   \
        uint64_t v_;                                                                     \
        __asm__ volatile("mrs %0, " #r : "=r"(v_));                                      \
        v_;                                                                              \
    })
#define pl_write_sysreg(r, v) __asm__ volatile("msr " #r ", %0" ::"r"((uint64_t)(v)))

/* ESR_ELx.EC values (Arm ARM D19.2.37) */
#define ESR_EC(esr) (((esr) >> 26) & 0x3f)
#define EC_IABT_CUR 0x21
#define EC_DABT_CUR 0x25
#define EC_IABT_LOW 0x20
#define EC_DABT_LOW 0x24
#define EC_HVC64 0x16
#define ESR_WNR (1u << 6)
#define ESR_FSC(esr) ((esr) & 0x3f)

/* MAIR_EL1 layout the payload loads (must match what the engine encodes). */
extern uint64_t pl_mair;
extern uint64_t pl_boot_sctlr;
/* TCR_EL1.IPS for the CPU's PARange (at most 48 bits). */
uint64_t pl_tcr_ips(void);

void pl_mmu_switch(uint64_t mair, uint64_t tcr, uint64_t ttbr0, uint64_t sctlr);

/*
 * A fault-tolerant probe: the access runs with the exception handler armed;
 * a synchronous abort is recorded (ESR, FAR) and the access is skipped.
 * Returns 0 when the access completed, else the ESR.
 */
struct pl_probe {
    uint64_t esr, far, hpfar, value;
};
int pl_probe_load(uint64_t va, struct pl_probe *p);
int pl_probe_store(uint64_t va, uint64_t value, struct pl_probe *p);
/* Branches to @p va (which must hold a `ret`); faults are recorded. */
int pl_probe_exec(uint64_t va, struct pl_probe *p);

/* AT S1E1R / S1E1W / S1E0R / S1E0W; returns PAR_EL1. */
uint64_t pl_at(int write, int el0, uint64_t va);

extern uint64_t boot_l1[512];

/* CPUs the payload can run (the first one and one started by PSCI). */
#define PL_MAX_CPUS 2
/* This CPU's index: start.S keeps it in TPIDR_EL1. */
static inline unsigned pl_cpu(void)
{
    return (unsigned)pl_read_sysreg(tpidr_el1) & (PL_MAX_CPUS - 1);
}

/* Non-zero when the payload entered at EL2 and keeps it as hypervisor. */
extern uint64_t pl_el2;
/* Run fn(a, b, c) at EL2 (HVC #0) and return its value. */
uint64_t pl_el2_call(uint64_t (*fn)(uint64_t, uint64_t, uint64_t), uint64_t a, uint64_t b,
                     uint64_t c);

/*
 * PSCI (Arm DEN 0022, "Power State Coordination Interface"): QEMU virt
 * implements it itself; its device tree names the conduit: HVC, or SMC
 * with virtualization=on (then HVC is the payload's own EL2). Returns x0.
 */
int64_t pl_psci(uint64_t fn, uint64_t a, uint64_t b, uint64_t c);
#define PSCI_CPU_OFF 0x84000002u
#define PSCI_CPU_ON_64 0xc4000003u

/* What a CPU started with CPU_ON finds in x0 (start.S reads the first
 * three fields): its stacks, then the table to run on and the work. */
struct pl_cpu_boot {
    uint64_t cpu, sp, sp_el2;
    uint64_t mair, tcr, ttbr0, sctlr;
    void (*fn)(void *);
    void *arg;
    volatile AO_t state; /* 1: MMU on with the table, 2: fn returned */
};
void pl_secondary_entry(void);

/* Boot identity map (4K granule, 39-bit VA, 1 GiB blocks). */
void pl_boot_mmu(void);
/* Return to the boot map. */
void pl_boot_mmu_restore(void);

#endif
