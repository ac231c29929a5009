/* SPDX-License-Identifier: MIT */
/*
 * PSCI for the guest (Arm DEN 0022). HCR_EL2.TSC traps the guest's SMC;
 * QEMU's device tree (virtualization=on) tells the guest to use SMC. The
 * hypervisor answers what concerns vCPUs itself and uses QEMU's own PSCI
 * (SMC from EL2) for the physical CPUs: CPU_ON starts the physical CPU
 * at the hypervisor's entry (start.S), which sets up EL2 (VTTBR, HCR, ...)
 * and only then enters the guest at the address the guest asked for.
 */
#include "arch.h"

#define PSCI_CPU_SUSPEND_64 0xc4000001u
#define PSCI_CPU_ON_32 0x84000003u
#define PSCI_AFFINITY_INFO_32 0x84000004u
#define PSCI_AFFINITY_INFO_64 0xc4000004u
#define PSCI_MIGRATE_INFO_TYPE 0x84000006u
#define PSCI_SYSTEM_RESET 0x84000009u
#define PSCI_FEATURES 0x8400000au

#define PSCI_SUCCESS 0
#define PSCI_NOT_SUPPORTED -1
#define PSCI_INVALID_PARAMETERS -2
#define PSCI_ALREADY_ON -4
#define PSCI_ON_PENDING -5

#define MPIDR_AFF 0xff00ffffffull /* Aff3, Aff2, Aff1, Aff0 */

int64_t hyp_psci_real(uint64_t fn, uint64_t a, uint64_t b, uint64_t c)
{
    register uint64_t x0 __asm__("x0") = fn;
    register uint64_t x1 __asm__("x1") = a;
    register uint64_t x2 __asm__("x2") = b;
    register uint64_t x3 __asm__("x3") = c;
    __asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
    return (int64_t)x0;
}

static int supported(uint32_t fn)
{
    static const uint32_t fns[] = {
        PSCI_VERSION,           PSCI_CPU_OFF,          PSCI_CPU_ON_64,
        PSCI_CPU_ON_32,         PSCI_AFFINITY_INFO_32, PSCI_AFFINITY_INFO_64,
        PSCI_MIGRATE_INFO_TYPE, PSCI_SYSTEM_OFF,       PSCI_SYSTEM_RESET,
        PSCI_FEATURES,
    };
    for (unsigned i = 0; i < HYP_ARRAY_SIZE(fns); i++)
        if (fns[i] == fn)
            return 1;
    return 0;
}

static int vcpu_of(uint64_t mpidr)
{
    for (unsigned i = 0; i < hyp_nvcpus; i++)
        if ((hyp_vcpus[i].mpidr & MPIDR_AFF) == (mpidr & MPIDR_AFF))
            return (int)i;
    return -1;
}

static int64_t cpu_on(uint64_t target, uint64_t entry, uint64_t context)
{
    int i = vcpu_of(target);
    if (i < 0)
        return PSCI_INVALID_PARAMETERS;
    struct vcpu *v = &hyp_vcpus[i];
    if (!AO_compare_and_swap_full(&v->state, VCPU_OFF, VCPU_ON_PENDING))
        return v->state == VCPU_ON ? PSCI_ALREADY_ON : PSCI_ON_PENDING;
    v->entry = entry;
    v->context = context;
    /* The new CPU starts with its MMU off: what it reads first must have
     * reached memory (a no-op under QEMU, required on hardware). */
    __asm__ volatile("dc cvac, %0\n\tdsb ish" ::"r"(v) : "memory");
    int64_t rc = hyp_psci_real(PSCI_CPU_ON_64, v->mpidr,
                               (uint64_t)(uintptr_t)hyp_secondary_entry, (uint64_t)i);
    if (rc != PSCI_SUCCESS)
        AO_store_release(&v->state, VCPU_OFF);
    return rc;
}

void hyp_psci(struct hyp_frame *f, unsigned cpu)
{
    uint32_t fn = (uint32_t)f->x[0];
    int64_t r = PSCI_NOT_SUPPORTED;
    switch (fn) {
    case PSCI_VERSION:
        r = 0x10001; /* 1.1 */
        break;
    case PSCI_FEATURES:
        r = supported((uint32_t)f->x[1]) ? PSCI_SUCCESS : PSCI_NOT_SUPPORTED;
        break;
    case PSCI_CPU_ON_64:
    case PSCI_CPU_ON_32:
        r = cpu_on(f->x[1], f->x[2], f->x[3]);
        break;
    case PSCI_CPU_OFF:
        AO_store_release(&hyp_vcpus[cpu].state, VCPU_OFF);
        r = hyp_psci_real(PSCI_CPU_OFF, 0, 0, 0); /* returns only on failure */
        AO_store_release(&hyp_vcpus[cpu].state, VCPU_ON);
        break;
    case PSCI_AFFINITY_INFO_32:
    case PSCI_AFFINITY_INFO_64: {
        int i = vcpu_of(f->x[1]);
        r = i < 0 || f->x[2] != 0            ? PSCI_INVALID_PARAMETERS
            : hyp_vcpus[i].state == VCPU_ON  ? 0
            : hyp_vcpus[i].state == VCPU_OFF ? 1
                                             : 2;
        break;
    }
    case PSCI_MIGRATE_INFO_TYPE:
        r = 2; /* no trusted OS to migrate */
        break;
    case PSCI_SYSTEM_OFF:
        hyp_end(cpu, "system-off");
    case PSCI_SYSTEM_RESET:
        hyp_end(cpu, "system-reset");
    default: /* SMCCC calls Linux probes (SMCCC_VERSION, workarounds): unknown */
        break;
    }
    f->x[0] = (uint64_t)r;
}
