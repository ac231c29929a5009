/* SPDX-License-Identifier: MIT */
/*
 * x86-64 payload: a second CPU for the SMP scenario (common/smp.c).
 *
 * CPU 1 is started with INIT and two STARTUP IPIs from the local APIC
 * (SDM 3A 9.4.4.1; its real-mode start code is start.S's pl_ap_tramp,
 * copied below 1 MiB) and runs on the scenario's table with interrupts
 * on. x86 has no broadcast TLB invalidation: a flush on one CPU is a
 * local INVLPG / CR3 reload plus a shootdown IPI to the other, which
 * repeats the flush in its handler and acknowledges; the sender waits
 * for that (SDM 3A 4.10.5 "Propagation of Paging-Structure Changes to
 * Multiple Processors"). Only QEMU is asked for two CPUs: its fw_cfg
 * device says how many there are (Bochs, with one, has none).
 */
#include "arch.h"
#include "mmu.h"
#include "tlb.h"

#define LAPIC 0xfee00000ull
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
/* ICR (SDM 3A 10.6.1): destination shorthand "all excluding self" (19:18),
 * level assert (14), delivery status (12), delivery mode (10:8). */
#define ICR_OTHERS (3u << 18)
#define ICR_ASSERT (1u << 14)
#define ICR_PENDING (1u << 12)
#define ICR_INIT (5u << 8)
#define ICR_STARTUP (6u << 8)

#define TRAMP 0x8000u /* STARTUP vector 0x08: CS:IP = 0800:0000 */
#define CR4_VMXE (1ull << 13)

static uint32_t apic_read(unsigned reg)
{
    return *(volatile uint32_t *)(uintptr_t)(LAPIC + reg);
}
static void apic_write(unsigned reg, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)(LAPIC + reg) = v;
}

static void delay_us(uint64_t us)
{
    uint64_t t0 = pl_arch_now_us();
    while (pl_arch_now_us() - t0 < us)
        __asm__ volatile("pause");
}

/* Send an IPI to the other CPU: 0, or -1 if the last one never left. */
static int ipi_others(uint32_t cmd)
{
    uint64_t t0 = pl_arch_now_us();
    while (apic_read(LAPIC_ICR_LO) & ICR_PENDING)
        if (pl_arch_now_us() - t0 > 1000000)
            return -1;
    apic_write(LAPIC_ICR_HI, 0);
    apic_write(LAPIC_ICR_LO, ICR_OTHERS | ICR_ASSERT | cmd);
    return 0;
}

/* Software-enable the local APIC, spurious interrupts to their vector. */
static void apic_enable(void)
{
    apic_write(LAPIC_SVR, (1u << 8) | PL_VEC_SPURIOUS);
}

/* QEMU's fw_cfg (selector port 0x510, data 0x511): signature "QEMU" at
 * key 0, the CPU count (16 bits, little-endian) at key 5. */
static unsigned fw_cfg_cpus(void)
{
    static const char sig[4] = "QEMU";
    outw(0x510, 0);
    for (unsigned i = 0; i < 4; i++)
        if (inb(0x511) != (uint8_t)sig[i])
            return 0;
    outw(0x510, 5);
    unsigned lo = inb(0x511);
    return lo | (unsigned)inb(0x511) << 8;
}

/* ---- shootdown ---- */

/* One request slot per receiving CPU: its only sender is the other CPU,
 * which waits for the acknowledgement before it sends again. */
static struct {
    uint64_t va, size;
    unsigned flags;
    volatile AO_t req, ack;
} mbox[PL_NCPU];
static volatile AO_t online[PL_NCPU];
static volatile AO_t shootdowns_on;

static void flush_local(uint64_t va, uint64_t size, unsigned flags)
{
    if (flags & MMP_FLUSH_ALL)
        mmp_arch_tlb_flush_global();
    else
        mmp_arch_tlb_flush_range(va, size, true);
}

void pl_x86_ipi(void)
{
    unsigned cpu = pl_x86_cpu();
    AO_t r = AO_load_acquire(&mbox[cpu].req);
    if (r != AO_load(&mbox[cpu].ack)) {
        flush_local(mbox[cpu].va, mbox[cpu].size, mbox[cpu].flags);
        AO_store_release(&mbox[cpu].ack, r);
    }
    apic_write(LAPIC_EOI, 0);
}

/* The other CPU's part of a flush this CPU made (its own part is done).
 * Interrupts stay on while waiting: the other CPU may be waiting for this
 * one's acknowledgement at the same time. */
static void shootdown(uint64_t va, uint64_t size, unsigned flags)
{
    unsigned to = 1 - pl_x86_cpu();
    if (!AO_load_acquire(&shootdowns_on) || !AO_load_acquire(&online[to]))
        return;
    mbox[to].va = va;
    mbox[to].size = size;
    mbox[to].flags = flags;
    AO_t r = AO_load(&mbox[to].req) + 1;
    AO_store_release(&mbox[to].req, r);
    if (ipi_others(PL_VEC_IPI)) {
        pl_printf("FAIL: CPU %u: the local APIC never sent the last IPI\n", 1 - to);
        pl_exit(2);
    }
    uint64_t t0 = pl_arch_now_us();
    while (AO_load_acquire(&mbox[to].ack) != r && AO_load_acquire(&online[to]))
        if (pl_arch_now_us() - t0 > 20000000) {
            pl_printf("FAIL: CPU %u did not acknowledge a TLB shootdown within 20 s\n", to);
            pl_exit(2);
        }
}

void pl_x86_flush(uint64_t va, uint64_t size, unsigned flags)
{
    flush_local(va, size, flags);
    shootdown(va, size, flags);
}

/* ---- CPU 1 ---- */

struct pl_ap_boot pl_ap_boot;
static uint8_t cpu1_stack[32768] __attribute__((aligned(16)));
_Static_assert(__builtin_offsetof(struct pl_ap_boot, sp) == 0, "start.S reads sp at offset 0");

void pl_x86_ap_main(struct pl_ap_boot *b)
{
    pl_wrmsr(MSR_GS_BASE, 1);
    pl_wrmsr(MSR_PAT, b->pat);
    pl_idt_load();
    apic_enable();
    __asm__ volatile("mov %0, %%cr3" ::"r"(b->cr3) : "memory");
    __asm__ volatile("mov %0, %%cr4" ::"r"(b->cr4) : "memory");
    mmp_arch_tlb_flush_global();
    AO_store_release(&online[1], 1);
    __asm__ volatile("sti");
    AO_store_release(&b->state, 1);
    b->fn(b->arg);
    /* Off the table before going offline: a CR3 load on the boot map drops
     * every non-global translation of it (the global ones, the image, are
     * the same in both), so no shootdown needs this CPU any more. It keeps
     * answering IPIs: one sent before it went offline is acknowledged. */
    __asm__ volatile("mov %0, %%cr3" ::"r"((uint64_t)(uintptr_t)boot_pml4) : "memory");
    AO_store_release(&online[1], 0);
    AO_store_release(&b->state, 2);
    for (;;)
        __asm__ volatile("sti; hlt");
}

/* While the boot map is live: the scenario's table maps no low memory. */
int pl_x86_smp_prepare(const char **why)
{
    static char msg[96];
    unsigned n = fw_cfg_cpus();
    if (n < 2) {
        pl_snprintf(msg, sizeof(msg), "%s",
                    n ? "one CPU (QEMU without -smp 2)"
                      : "no QEMU fw_cfg to count the CPUs (Bochs here has one)");
        *why = msg;
        return -1;
    }
    memcpy((void *)(uintptr_t)TRAMP, pl_ap_tramp, (size_t)(pl_ap_tramp_end - pl_ap_tramp));
    return 0;
}

/* CPU 0 alone again: no interrupts, flushes local. */
static void smp_off(void)
{
    __asm__ volatile("cli");
    AO_store_release(&shootdowns_on, 0);
}

int pl_arch_smp_start(const struct pl_target *t, const struct mmp_pt *pt, void (*fn)(void *),
                      void *arg, const char **why)
{
    (void)t;
    /* Both CPUs reach their local APIC through the table (uncached). */
    int rc = mmp_pt_map((struct mmp_pt *)(uintptr_t)pt, LAPIC, LAPIC, 4096,
                        MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_DEVICE, 0);
    if (rc) {
        *why = "mapping the local APIC failed";
        return -1;
    }
    /* Only the shootdown IPI may interrupt: the legacy PICs are masked
     * (their IRQ 0 would arrive on an exception vector). */
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
    apic_enable();
    struct pl_ap_boot *b = &pl_ap_boot;
    b->sp = (uint64_t)(uintptr_t)(cpu1_stack + sizeof(cpu1_stack));
    b->cr3 = pl_read_cr(3);
    b->cr4 = pl_read_cr(4) & ~CR4_VMXE; /* an earlier EPT target's VMX is CPU 0's */
    b->pat = pl_rdmsr(MSR_PAT);
    b->fn = fn;
    b->arg = arg;
    AO_store_release(&b->state, 0);
    AO_store_release(&online[0], 1);
    AO_store_release(&shootdowns_on, 1);
    __asm__ volatile("sti");
    /* INIT, 10 ms, STARTUP twice 200 us apart (SDM 3A 9.4.4.1). */
    if (ipi_others(ICR_INIT) || (delay_us(10000), ipi_others(ICR_STARTUP | (TRAMP >> 12))) ||
        (delay_us(200), ipi_others(ICR_STARTUP | (TRAMP >> 12)))) {
        *why = "the local APIC did not send INIT / STARTUP";
        smp_off();
        return -1;
    }
    if (pl_wait_for(&b->state, 1, 20000000)) {
        *why = "CPU 1 did not come up on the table within 20 s";
        smp_off();
        return -1;
    }
    return 0;
}

int pl_arch_smp_join(uint64_t us)
{
    if (pl_wait_for(&pl_ap_boot.state, 2, us))
        return -1;
    smp_off();
    return 0;
}

unsigned pl_arch_cpu(void)
{
    return pl_x86_cpu();
}

/* x86 has no address-translation instruction: the MMU's answer is read
 * from a real access. A load that completes read the frame's stamp (every
 * word of an SMP frame holds its physical address ^ PL_SMP_PATTERN); a
 * write is a store of the word just read (harmless: the scenario's pages
 * only ever map their one frame); #PF's P bit tells the fault class. */
int pl_arch_translate(const struct pl_target *t, uint64_t va, int write, uint64_t *pa)
{
    (void)t;
    struct pl_probe p;
    if (pl_probe_load(va & ~7ull, &p) ||
        (write && pl_probe_store(va & ~7ull, p.value, &p)))
        return p.vec != 14 ? PL_FAULT_OTHER : (p.err & PF_P) ? PL_FAULT_PERM : PL_FAULT_TRANS;
    *pa = ((p.value ^ PL_SMP_PATTERN) & ~7ull) | (va & 7);
    return 0;
}

int pl_arch_load(uint64_t va, uint64_t *v)
{
    struct pl_probe p;
    int rc = pl_probe_load(va, &p);
    *v = p.value;
    return rc != 0;
}
