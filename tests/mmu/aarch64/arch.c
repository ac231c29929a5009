/* SPDX-License-Identifier: MIT */
/*
 * aarch64 payload: semihosting console and exit, the synchronous-exception
 * handler that turns probe faults into records, and the boot identity map.
 */
#include "arch.h"
#include "payload.h"

/*
 * Semihosting (Arm "Semihosting for AArch32 and AArch64", HLT #0xF000):
 * SYS_WRITE0 = 0x04 prints a string, SYS_EXIT = 0x18 takes a block
 * {reason, subcode}; QEMU exits with subcode for ADP_Stopped_ApplicationExit.
 */
static uint64_t semihost(uint64_t op, uint64_t arg)
{
    register uint64_t x0 __asm__("x0") = op;
    register uint64_t x1 __asm__("x1") = arg;
    __asm__ volatile("hlt #0xf000" : "+r"(x0) : "r"(x1) : "memory");
    return x0;
}

void pl_console_write(const char *s)
{
    semihost(0x04, (uint64_t)(uintptr_t)s);
}

void pl_exit(int code)
{
    static uint64_t block[2];
    block[0] = 0x20026; /* ADP_Stopped_ApplicationExit */
    block[1] = (uint64_t)code;
    semihost(0x18, (uint64_t)(uintptr_t)block);
    for (;;)
        __asm__ volatile("wfi");
}

/* ---- exceptions ---- */

/* One probe state per CPU (TPIDR_EL1 holds the CPU's index, start.S):
 * two CPUs probe at once in the SMP scenario. */
static struct {
    volatile int armed;
    volatile uint64_t esr, far, hpfar;
} probe_st[PL_MAX_CPUS];
#define probe_armed (probe_st[pl_cpu()].armed)
#define probe_esr (probe_st[pl_cpu()].esr)
#define probe_far (probe_st[pl_cpu()].far)
#define probe_hpfar (probe_st[pl_cpu()].hpfar)
uint64_t pl_el2; /* set by start.S: we entered at EL2 and keep it as hypervisor */

/* Record a probe's abort and resume: skip the load/store, or return from
 * the branch whose target faulted. */
static void probe_fault(struct pl_frame *f, int data)
{
    probe_esr = f->esr;
    probe_far = f->far;
    probe_armed = 0;
    if (data)
        f->elr += 4;
    else
        f->elr = f->x[30];
}

void pl_exception(struct pl_frame *f, uint64_t idx);
void pl_exception(struct pl_frame *f, uint64_t idx)
{
    uint64_t ec = ESR_EC(f->esr);
    if (probe_armed && idx == 4 && (ec == EC_DABT_CUR || ec == EC_IABT_CUR)) {
        probe_fault(f, ec == EC_DABT_CUR);
        return;
    }
    pl_printf("FAIL: unexpected exception %u on CPU %u: ESR %lx FAR %lx ELR %lx\n",
              (unsigned)idx, pl_cpu(), f->esr, f->far, f->elr);
    pl_exit(2);
}

/*
 * EL2: HVC #0 runs x0(x1, x2, x3) at EL2 and returns its value in x0;
 * stage-2 aborts of a probe (from EL1: vector 8) are recorded like EL1's,
 * with HPFAR_EL2 (the faulting IPA).
 */
void pl_exception_el2(struct pl_frame *f, uint64_t idx);
void pl_exception_el2(struct pl_frame *f, uint64_t idx)
{
    uint64_t ec = ESR_EC(f->esr);
    if (idx == 8 && ec == EC_HVC64) {
        uint64_t (*fn)(uint64_t, uint64_t, uint64_t) =
            (uint64_t(*)(uint64_t, uint64_t, uint64_t))(uintptr_t)f->x[0];
        f->x[0] = fn(f->x[1], f->x[2], f->x[3]);
        return;
    }
    if (probe_armed && idx == 8 && (ec == EC_DABT_LOW || ec == EC_IABT_LOW)) {
        probe_hpfar = pl_read_sysreg(hpfar_el2);
        probe_fault(f, ec == EC_DABT_LOW);
        return;
    }
    if (probe_armed && idx == 4 && (ec == EC_DABT_CUR || ec == EC_IABT_CUR)) {
        probe_fault(f, ec == EC_DABT_CUR); /* a probe run at EL2 itself */
        return;
    }
    pl_printf("FAIL: unexpected exception at EL2 %u: ESR %lx FAR %lx ELR %lx\n",
              (unsigned)idx, f->esr, f->far, f->elr);
    pl_exit(2);
}

uint64_t pl_el2_call(uint64_t (*fn)(uint64_t, uint64_t, uint64_t), uint64_t a, uint64_t b,
                     uint64_t c)
{
    register uint64_t x0 __asm__("x0") = (uint64_t)(uintptr_t)fn;
    register uint64_t x1 __asm__("x1") = a;
    register uint64_t x2 __asm__("x2") = b;
    register uint64_t x3 __asm__("x3") = c;
    __asm__ volatile("hvc #0" : "+r"(x0) : "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}

static void probe_begin(void)
{
    probe_esr = probe_far = probe_hpfar = 0;
    probe_armed = 1;
}

static int probe_end(struct pl_probe *p, uint64_t value)
{
    probe_armed = 0;
    p->esr = probe_esr;
    p->far = probe_far;
    p->hpfar = probe_hpfar;
    p->value = value;
    return p->esr ? -1 : 0;
}

int pl_probe_load(uint64_t va, struct pl_probe *p)
{
    uint64_t v = 0;
    probe_begin();
    __asm__ volatile("ldr %0, [%1]" : "+r"(v) : "r"(va) : "memory");
    return probe_end(p, v);
}

int pl_probe_store(uint64_t va, uint64_t value, struct pl_probe *p)
{
    probe_begin();
    __asm__ volatile("str %0, [%1]" ::"r"(value), "r"(va) : "memory");
    return probe_end(p, value);
}

int pl_probe_exec(uint64_t va, struct pl_probe *p)
{
    /* Instruction fetch must see the `ret` written through the data side. */
    __asm__ volatile("dsb ish\n\tic ivau, %0\n\tdsb ish\n\tisb" ::"r"(va) : "memory");
    probe_begin();
    __asm__ volatile("blr %0" ::"r"(va)
                     : "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
                       "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x30", "memory");
    return probe_end(p, 0);
}

uint64_t pl_at(int write, int el0, uint64_t va)
{
    if (el0) {
        if (write)
            __asm__ volatile("at s1e0w, %0" ::"r"(va));
        else
            __asm__ volatile("at s1e0r, %0" ::"r"(va));
    } else {
        if (write)
            __asm__ volatile("at s1e1w, %0" ::"r"(va));
        else
            __asm__ volatile("at s1e1r, %0" ::"r"(va));
    }
    __asm__ volatile("isb" ::: "memory");
    return pl_read_sysreg(par_el1);
}

/* ---- a second CPU ---- */

int64_t pl_psci(uint64_t fn, uint64_t a, uint64_t b, uint64_t c)
{
    register uint64_t x0 __asm__("x0") = fn;
    register uint64_t x1 __asm__("x1") = a;
    register uint64_t x2 __asm__("x2") = b;
    register uint64_t x3 __asm__("x3") = c;
    if (pl_el2)
        __asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
    else
        __asm__ volatile("hvc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
    return (int64_t)x0;
}

/* CPU 1 after start.S: the MMU on with the table the first CPU runs on
 * (so its exclusives and atomics work on Normal memory), the work, then
 * PSCI CPU_OFF. */
void pl_secondary_main(struct pl_cpu_boot *b);
void pl_secondary_main(struct pl_cpu_boot *b)
{
    pl_mmu_switch(b->mair, b->tcr, b->ttbr0, b->sctlr);
    AO_store_release(&b->state, 1);
    b->fn(b->arg);
    AO_store_release(&b->state, 2);
    pl_psci(PSCI_CPU_OFF, 0, 0, 0);
    for (;;)
        __asm__ volatile("wfi");
}

/* ---- boot identity map ---- */

/*
 * MAIR_EL1 the payload loads: attribute index -> memory type
 * (Arm ARM D19.2.97). The layout mmport's stage-1 encoder assumes
 * (arch/arm64/pt_arm64.c): 0: Normal WB RAWA (0xff), 1: Normal NC (0x44),
 * 2: Device-nGnRE (0x04).
 */
uint64_t pl_mair = 0x000444ffull;

uint64_t boot_l1[512] __attribute__((aligned(4096)));
static uint64_t boot_tcr;
uint64_t pl_boot_sctlr;

/* TCR_EL1.IPS from ID_AA64MMFR0_EL1.PARange, capped at 48 bits. */
uint64_t pl_tcr_ips(void)
{
    uint64_t pa = pl_read_sysreg(id_aa64mmfr0_el1) & 0xf;
    return (pa > 5 ? 5 : pa) << 32;
}

void pl_boot_mmu(void)
{
    /* L1 block descriptors: bits[1:0]=01, AttrIndx[4:2], SH[9:8]=11, AF[10]. */
    /* Identity over the whole 39-bit VA space (EL1 reaches any IPA below
     * 512 GiB for the stage-2 tests) except 256 GiB, kept as a hole. */
    for (uint64_t i = 0; i < 512; i++) {
        uint64_t attr = i == 0 ? 2 : 0; /* first GiB: devices (UART at 0x09000000) */
        boot_l1[i] = i == 256 ? 0 : (i << 30) | 1 | (attr << 2) | (3u << 8) | (1u << 10);
    }
    boot_l1[2] |= 1u << 11; /* nG: tagged with ASID 0, so ASIDE1IS applies */
    /* T0SZ=25 (39-bit VA, starts at L1), IRGN0/ORGN0=WBWA, SH0=inner, TG0=4K, EPD1. */
    boot_tcr = 25 | (1u << 8) | (1u << 10) | (3u << 12) | (1ull << 23) | pl_tcr_ips();
    /* SCTLR_EL1: M (bit 0), C (2), I (12) on; A (1) and WXN (19) off. */
    pl_boot_sctlr = (pl_read_sysreg(sctlr_el1) | 1 | (1u << 2) | (1u << 12)) & ~(2ull | (1ull << 19));
    pl_mmu_switch(pl_mair, boot_tcr, (uint64_t)(uintptr_t)boot_l1, pl_boot_sctlr);
}

void pl_boot_mmu_restore(void)
{
    pl_mmu_switch(pl_mair, boot_tcr, (uint64_t)(uintptr_t)boot_l1, pl_boot_sctlr);
}
