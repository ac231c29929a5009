/* SPDX-License-Identifier: MIT */
/*
 * The guest's exits and the end of the run. Exits come from: stage-2
 * aborts (the memory manager's faults), WFI (HCR_EL2.TWI: regular exits
 * that drive the migration and eviction rounds), SMC (PSCI). Physical
 * interrupts go straight to the guest (HCR_EL2.IMO/FMO clear), so there
 * is no interrupt exit.
 */
#include "arch.h"

static volatile AO_t stopping; /* a vCPU ended the run: the others park */

/* EL2 state for running the guest on this CPU. */
void hyp_vcpu_setup(unsigned cpu)
{
    struct mmp_pt_regs r;
    mmp_pt_regs(&hyp_gmm.pt, 1, &r); /* VMID 1 */
    write_sysreg(vtcr_el2, r.tcr);
    write_sysreg(vttbr_el2, r.root);
    /* No traps of FP/SIMD or SVE (the hypervisor is built general-register
     * only, so the guest's vector state is never touched): CPTR_EL2 RES1
     * bits without TZ (8); TSM (12) traps SME, which this guest kernel
     * does not use. */
    write_sysreg(cptr_el2, 0x32ffull | (1ull << 12));
    isb();
    if ((read_sysreg(id_aa64pfr0_el1) >> 32) &
        0xf) /* SVE: the guest may use any length */
        __asm__ volatile("msr s3_4_c1_c2_0, %0" ::"r"(0xfull)); /* ZCR_EL2 */
    write_sysreg(cnthctl_el2, 3); /* EL1PCTEN, EL1PCEN: the guest owns the EL1 timers */
    write_sysreg(cntvoff_el2, 0);
    write_sysreg(vpidr_el2, read_sysreg(midr_el1));
    write_sysreg(vmpidr_el2, hyp_vcpus[cpu].mpidr);
    /* MDCR_EL2.HPMN = PMCR_EL0.N: the guest gets every PMU counter, no traps. */
    write_sysreg(mdcr_el2, (read_sysreg(pmcr_el0) >> 11) & 0x1f);
    write_sysreg(hstr_el2, 0);
    /* GICv3: the guest uses the physical CPU interface by system registers
     * (ICC_SRE_EL2: SRE, DFB, DIB, Enable); no virtual interface. */
    __asm__ volatile("msr s3_4_c12_c9_5, %0" ::"r"(0xfull)); /* ICC_SRE_EL2 */
    isb();
    __asm__ volatile("msr s3_4_c12_c11_0, xzr"); /* ICH_HCR_EL2 */
    write_sysreg(sctlr_el1, 0x30d00800ull);      /* RES1 bits, MMU and caches off */
    write_sysreg(hcr_el2, HCR_VM | HCR_SWIO | HCR_TWI | HCR_TSC | HCR_RW | HCR_API |
                              HCR_APK | hyp_gmm.info.hcr_set);
    isb();
    __asm__ volatile("tlbi vmalls12e1\n\tdsb nsh\n\tisb" ::: "memory");
}

/* Park this CPU for the end of the run (never returns to the guest). */
static __attribute__((noreturn)) void park(unsigned cpu)
{
    AO_store_release(&hyp_vcpus[cpu].parked, 1);
    for (;;)
        __asm__ volatile("wfe");
}

/*
 * Wait (bounded) until every other vCPU is parked, off, or waiting in the
 * hypervisor's WFI: one there may never wake (a CPU the guest stopped in
 * its IPI handler has its running priority raised and takes no further
 * interrupt), and once woken it parks instead of returning to the guest.
 */
static void stop_others(unsigned cpu)
{
    uint64_t t0 = hyp_arch_now_ns();
    for (unsigned i = 0; i < hyp_nvcpus; i++) {
        struct vcpu *v = &hyp_vcpus[i];
        while (i != cpu && AO_load_full(&v->state) != VCPU_OFF &&
               !AO_load_full(&v->parked) && !AO_load_full(&v->in_wfi)) {
            if (hyp_arch_now_ns() - t0 > 3000000000ull) {
                hyp_printf("hyp: vCPU %u did not stop within 3 s\n", i);
                break;
            }
            hyp_arch_relax();
        }
    }
}

void hyp_end(unsigned cpu, const char *why)
{
    if (AO_fetch_and_add1_full(&stopping) != 0)
        park(cpu); /* another vCPU ends the run */
    hyp_run.run_ns = hyp_arch_now_ns() - hyp_gmm.t0;
    hyp_run.end = why;
    if (!memcmp(why, "hypervisor-exception", 21)) /* state unknown (a lock may be held) */
        hyp_arch_power_off();
    stop_others(cpu);
    if (!memcmp(why, "system-off", 11))
        gmm_finish(&hyp_gmm, cpu);
    gmm_teardown(&hyp_gmm, cpu, &hyp_s2_arena);
    hyp_run.arena_out = hyp_el2_mmu_teardown();
    hyp_summary(&hyp_run, &hyp_gmm);
    hyp_arch_power_off();
}

/*
 * Give the guest a synchronous external abort for a data access it made
 * (as a bus would for an address with nothing behind it): the exception
 * is taken to EL1 as if the hardware had raised it (Arm ARM D1.10).
 */
static void inject_dabt(struct hyp_frame *f)
{
    uint64_t mode = f->spsr & 0xf; /* M[3:0] of the interrupted state */
    uint64_t vbar = read_sysreg(vbar_el1);
    uint64_t off = mode == 0 ? 0x400 : (mode & 1) ? 0x200 : 0; /* EL0 / EL1h / EL1t */
    uint64_t ec = mode == 0 ? EC_DABT_LOW : 0x25;
    /* IL, and the access's WnR; DFSC 0x10: synchronous external abort. */
    uint64_t esr = ec << 26 | 1ull << 25 | (f->esr & ESR_WNR) | 0x10;
    write_sysreg(esr_el1, esr);
    write_sysreg(far_el1, f->far);
    write_sysreg(elr_el1, f->elr);
    write_sysreg(spsr_el1, f->spsr);
    /* EL1h, DAIF masked; PAN set where SCTLR_EL1.SPAN asks for it. */
    uint64_t spsr = 0x3c5;
    if (!(read_sysreg(sctlr_el1) & (1ull << 23)))
        spsr |= 1ull << 22;
    else
        spsr |= f->spsr & (1ull << 22);
    f->spsr = spsr;
    f->elr = vbar + off;
}

/* The doorbell page: a one-register device the hypervisor emulates. The
 * guest's init writes it first thing: the boot-to-init clock stops. */
static void doorbell(struct hyp_frame *f, unsigned cpu)
{
    if (f->esr & ESR_ISV) {
        unsigned rt = ESR_SRT(f->esr);
        if (f->esr & ESR_WNR) {
            if (!hyp_run.boot_to_init_ns)
                hyp_run.boot_to_init_ns = hyp_arch_now_ns() - hyp_gmm.t0;
        } else if (rt < 31) {
            f->x[rt] = 0;
        }
    } else {
        hyp_printf("hyp: vCPU %u: doorbell access without syndrome, ignored\n", cpu);
    }
    f->elr += 4;
}

static void stage2_abort(struct hyp_frame *f, unsigned cpu, unsigned ec)
{
    uint64_t esr = f->esr, fsc = ESR_FSC(esr);
    uint64_t ipa = ((f->hpfar >> 4) & ((1ull << 40) - 1)) << 12 | (f->far & 0xfff);
    /* A write: the access's own, or the guest's stage-1 walk updating its
     * descriptors (hardware AF/dirty state in the guest's tables). */
    int write = ec == EC_DABT_LOW && (esr & (ESR_WNR | ESR_S1PTW));
    enum gmm_access kind;
    switch (fsc & 0x3c) {
    case 0x04:
        kind = GMM_TRANSLATION;
        break;
    case 0x08:
        kind = GMM_ACCESS_FLAG;
        break;
    case 0x0c:
        kind = GMM_PERMISSION;
        break;
    default:
        hyp_printf("hyp: vCPU %u: stage-2 abort with status %lx at IPA %lx, PC %lx\n",
                   cpu, (unsigned long)fsc, (unsigned long)ipa, (unsigned long)f->elr);
        hyp_end(cpu, "error");
    }
    int rc = gmm_fault(&hyp_gmm, cpu, ipa, kind, write);
    if (rc == GMM_RETRY_FLUSH)
        hyp_tlbi_ipa_local(ipa);
    if (rc >= 0)
        return;
    if (rc == -MMP_ENOENT && kind == GMM_TRANSLATION) {
        if ((ipa & ~0xffffull) == hyp_doorbell_ipa && ec == EC_DABT_LOW) {
            doorbell(f, cpu);
            return;
        }
        /* Neither RAM nor a device: the guest gets the abort a bus would
         * give it; a guest that keeps doing it is stopped. */
        hyp_run.bad_ipa++;
        hyp_printf("hyp: vCPU %u: %s at IPA %lx (neither RAM nor a device), PC %lx: %s\n",
                   cpu,
                   ec == EC_DABT_LOW ? (write ? "write" : "read") : "instruction fetch",
                   (unsigned long)ipa, (unsigned long)f->elr,
                   ec == EC_DABT_LOW ? "external abort injected" : "stopping the guest");
        if (ec != EC_DABT_LOW || hyp_run.bad_ipa > 16)
            hyp_end(cpu, "bad-ipa");
        inject_dabt(f);
        return;
    }
    hyp_printf(
        "hyp: vCPU %u: stage-2 fault at IPA %lx (status %lx) not fixed: error %d\n", cpu,
        (unsigned long)ipa, (unsigned long)fsc, rc);
    hyp_end(cpu, "error");
}

/* WFI: the memory manager's rounds, then the wait itself, at EL2 (a
 * pending interrupt for this CPU ends it, masked or not). */
static void wfi(struct hyp_frame *f, unsigned cpu)
{
    f->elr += 4;
    gmm_tick(&hyp_gmm, cpu);
    /* in_wfi, then stopping (full barriers): a vCPU the stopper saw in
     * here checks stopping after its wait and parks (stop_others()). */
    AO_store_full(&hyp_vcpus[cpu].in_wfi, 1);
    if (!AO_load_full(&stopping))
        __asm__ volatile("dsb sy\n\twfi" ::: "memory");
    if (AO_load_full(&stopping))
        park(cpu);
    AO_store_full(&hyp_vcpus[cpu].in_wfi, 0);
}

void hyp_exception(struct hyp_frame *f, uint64_t idx);
void hyp_exception(struct hyp_frame *f, uint64_t idx)
{
    unsigned cpu = hyp_arch_cpu();
    unsigned ec = (unsigned)ESR_EC(f->esr);
    if (idx != 8) {
        hyp_printf("hyp: CPU %u: exception %u at EL2: ESR %lx FAR %lx ELR %lx\n", cpu,
                   (unsigned)idx, (unsigned long)f->esr, (unsigned long)f->far,
                   (unsigned long)f->elr);
        hyp_end(cpu, "hypervisor-exception");
    }
    hyp_run.exits[cpu]++;
    if (AO_load_acquire(&stopping))
        park(cpu);
    switch (ec) {
    case EC_WFX:
        if (f->esr & 1) /* WFE is not trapped; skip it if it ever is */
            f->elr += 4;
        else
            wfi(f, cpu);
        break;
    case EC_SMC64:
        f->elr += 4; /* a trapped SMC returns to itself */
        hyp_psci(f, cpu);
        break;
    case EC_HVC64:
        f->x[0] = (uint64_t)-1; /* no hypercalls: SMCCC "unknown function" */
        break;
    case EC_IABT_LOW:
    case EC_DABT_LOW:
        stage2_abort(f, cpu, ec);
        gmm_tick(&hyp_gmm, cpu);
        break;
    default:
        hyp_printf("hyp: vCPU %u: unhandled exit: ESR %lx (class %x) at PC %lx\n", cpu,
                   (unsigned long)f->esr, ec, (unsigned long)f->elr);
        hyp_end(cpu, "unhandled-exit");
    }
    if (AO_load_acquire(&stopping))
        park(cpu);
}
