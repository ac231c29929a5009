/* SPDX-License-Identifier: MIT */
/*
 * The second CPU. CPU 1 is started the way firmware starts one: INIT and
 * two STARTUP IPIs from the local APIC (Intel SDM vol. 3A 9.4.4.1) to a
 * real-mode stub copied below 1 MiB (start.S, hv_ap_tramp). It runs the
 * memory manager's passes with interrupts off and never enters a guest.
 *
 * CPU 0's local APIC belongs to the guest once it runs (passed through):
 * the hypervisor uses it only before that, to start CPU 1. CPU 1 keeps
 * its own and sends CPU 0 NMIs through it: an NMI is the one event that
 * reaches a CPU whatever its guest has masked (SDM 3A 10.4.7.2: even a
 * software-disabled local APIC accepts NMI), and the VMCB intercepts it,
 * so it costs the guest one #VMEXIT and is never delivered to it.
 */
#include "hv.h"

#define LAPIC 0xfee00000ull
#define LAPIC_ID 0x20
#define LAPIC_SVR 0xf0
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
/* ICR (SDM 3A 10.6.1): shorthand "all excluding self" (19:18), level
 * assert (14), delivery status (12), delivery mode (10:8). */
#define ICR_OTHERS (3u << 18)
#define ICR_ASSERT (1u << 14)
#define ICR_PENDING (1u << 12)
#define ICR_NMI (4u << 8)
#define ICR_INIT (5u << 8)
#define ICR_STARTUP (6u << 8)
#define MSR_GS_BASE 0xc0000101u /* holds the CPU's index */

#define TRAMP 0x8000u /* STARTUP vector 0x08: CS:IP = 0800:0000 */

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
    uint64_t t0 = hv_now_us();
    while (hv_now_us() - t0 < us)
        cpu_relax();
}

static int icr_idle(void)
{
    uint64_t t0 = hv_now_us();
    while (apic_read(LAPIC_ICR_LO) & ICR_PENDING)
        if (hv_now_us() - t0 > 1000000)
            return -1;
    return 0;
}

static int ipi_others(uint32_t cmd)
{
    if (icr_idle())
        return -1;
    apic_write(LAPIC_ICR_HI, 0);
    apic_write(LAPIC_ICR_LO, ICR_OTHERS | ICR_ASSERT | cmd);
    return 0;
}

/* The host's GS base holds the CPU index: VMSAVE/VMLOAD around each
 * VMRUN (start.S) give it back after the guest changed GS. */
unsigned hv_cpu(void)
{
    return (unsigned)rdmsr(MSR_GS_BASE);
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

struct hv_ap_boot hv_ap_boot;
static uint8_t cpu1_stack[65536] __attribute__((aligned(16)));
static uint32_t cpu0_apic_id;
_Static_assert(__builtin_offsetof(struct hv_ap_boot, sp) == 0,
               "start.S reads sp at offset 0");

void hv_ap_main(void)
{
    wrmsr(MSR_GS_BASE, 1);
    hv_idt_load();
    apic_write(LAPIC_SVR, (1u << 8) | 0xff); /* software-enable: CPU 1 sends NMIs */
    AO_store_release(&hv_ap_boot.up, 1);
    hv_ap_boot.fn();
    AO_store_release(&hv_ap_boot.up, 2);
    for (;;)
        __asm__ volatile("cli; hlt");
}

int hv_start_cpu1(void (*fn)(void), const char **why)
{
    wrmsr(MSR_GS_BASE, 0);
    unsigned n = fw_cfg_cpus();
    if (n < 2) {
        *why = n ? "one CPU (run QEMU with -smp 2)" : "no QEMU fw_cfg to count the CPUs";
        return -1;
    }
    cpu0_apic_id = apic_read(LAPIC_ID) >> 24;
    memcpy((void *)(uintptr_t)TRAMP, hv_ap_tramp,
           (size_t)(hv_ap_tramp_end - hv_ap_tramp));
    apic_write(LAPIC_SVR, (1u << 8) | 0xff);
    hv_ap_boot.sp = (uint64_t)(uintptr_t)(cpu1_stack + sizeof(cpu1_stack));
    hv_ap_boot.fn = fn;
    /* INIT, 10 ms, STARTUP twice 200 us apart (SDM 3A 9.4.4.1). */
    if (ipi_others(ICR_INIT) ||
        (delay_us(10000), ipi_others(ICR_STARTUP | (TRAMP >> 12))) ||
        (delay_us(200), ipi_others(ICR_STARTUP | (TRAMP >> 12)))) {
        *why = "the local APIC did not send INIT / STARTUP";
        return -1;
    }
    uint64_t t0 = hv_now_us();
    while (AO_load_acquire(&hv_ap_boot.up) < 1)
        if (hv_now_us() - t0 > 20000000) {
            *why = "CPU 1 did not come up within 20 s";
            return -1;
        }
    return 0;
}

void hv_nmi_cpu0(void)
{
    if (icr_idle())
        return; /* the last one is still on its way: it will do */
    apic_write(LAPIC_ICR_HI, cpu0_apic_id << 24);
    apic_write(LAPIC_ICR_LO, ICR_ASSERT | ICR_NMI);
}
