/* SPDX-License-Identifier: MIT */
/*
 * x86-64 payload: debug console (port 0xE9, QEMU -debugcon), exit through
 * QEMU's isa-debug-exit device, the IDT and the trap handler that turns
 * probe faults into records (per CPU) and passes the shootdown IPI on.
 */
#include "arch.h"
#include "payload.h"

void pl_console_write(const char *s)
{
    while (*s)
        outb(0xe9, (uint8_t)*s++);
}

/* isa-debug-exit at iobase 0xf4: QEMU exits with status (value << 1) | 1.
 * Bochs has no such device: "Shutdown" written to its port 0x8900 ends it
 * (the status is then in the RESULT line). */
void pl_exit(int code)
{
    outl(0xf4, (uint32_t)code);
    for (const char *s = "Shutdown"; *s; s++)
        outb(0x8900, (uint8_t)*s);
    for (;;)
        __asm__ volatile("cli; hlt");
}

/* ---- time ---- */

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t tsc_per_us = 1000; /* until measured: 1 GHz */

/* QEMU's TCG TSC counts at the host's rate, which no constant fits: count
 * its ticks over 10 ms of PIT channel 2 (1.193182 MHz; gated by port
 * 0x61 bit 0, whose bit 5 shows OUT2; mode 0 raises OUT2 at terminal
 * count, 8254 data sheet). Without a PIT answer 1 GHz stays. */
unsigned pl_x86_tsc_calibrate(void)
{
    const unsigned count = 11932; /* 10 ms */
    uint8_t port61 = inb(0x61);
    outb(0x61, (uint8_t)((port61 & ~2u) | 1u)); /* gate on, speaker off */
    outb(0x43, 0xb0);                           /* channel 2, lo/hi byte, mode 0 */
    outb(0x42, (uint8_t)count);
    outb(0x42, (uint8_t)(count >> 8));
    uint64_t t0 = rdtsc(), t;
    int ok = !(inb(0x61) & 0x20);
    while (ok && !(inb(0x61) & 0x20))
        if (rdtsc() - t0 > 50000000000ull) /* 10 s at 5 GHz: no PIT */
            ok = 0;
    t = (rdtsc() - t0) / 10000;
    outb(0x61, port61);
    if (ok && t >= 100 && t <= 10000)
        tsc_per_us = t;
    return (unsigned)tsc_per_us;
}

uint64_t pl_arch_now_us(void)
{
    return rdtsc() / tsc_per_us;
}

/* ---- IDT ---- */

struct idt_gate {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, zero;
};

/* Exceptions 0-31, then the two interrupt vectors of the SMP scenario. */
static struct idt_gate idt[PL_VEC_SPURIOUS + 1] __attribute__((aligned(16)));
extern char pl_isr_stubs[];

static void gate(unsigned vec, unsigned stub)
{
    uint64_t a = (uint64_t)(uintptr_t)(pl_isr_stubs + 16 * stub);
    idt[vec].off0 = (uint16_t)a;
    idt[vec].sel = 0x08;
    idt[vec].ist = 0;
    idt[vec].type = 0x8e; /* present, DPL 0, 64-bit interrupt gate */
    idt[vec].off1 = (uint16_t)(a >> 16);
    idt[vec].off2 = (uint32_t)(a >> 32);
    idt[vec].zero = 0;
}

void pl_idt_load(void)
{
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } ptr = { sizeof(idt) - 1, (uint64_t)(uintptr_t)idt };
    __asm__ volatile("lidt %0" ::"m"(ptr));
}

void pl_idt_init(void)
{
    for (unsigned i = 0; i < 32; i++)
        gate(i, i);
    gate(PL_VEC_IPI, 32);
    gate(PL_VEC_SPURIOUS, 33);
    pl_idt_load();
}

/* ---- traps and probes ---- */

/* Probe state per CPU: both CPUs probe at once in the SMP scenario. */
static struct {
    volatile int armed;
    volatile uint64_t vec, err, cr2, resume; /* resume: where a faulting access continues */
} probe_st[PL_NCPU];

unsigned pl_x86_cpu(void)
{
    return (unsigned)pl_rdmsr(MSR_GS_BASE);
}

void pl_trap(struct pl_frame *f);
void pl_trap(struct pl_frame *f)
{
    if (f->vec == PL_VEC_IPI) {
        pl_x86_ipi();
        return;
    }
    if (f->vec == PL_VEC_SPURIOUS) /* no EOI for a spurious interrupt (SDM 3A 10.9) */
        return;
    unsigned cpu = pl_x86_cpu();
    if (probe_st[cpu].armed && f->vec == 14) {
        probe_st[cpu].vec = f->vec;
        probe_st[cpu].err = f->err;
        probe_st[cpu].cr2 = pl_read_cr(2);
        probe_st[cpu].armed = 0;
        if (f->err & PF_ID) {
            /* The call target faulted: return to the caller. */
            f->rip = *(uint64_t *)(uintptr_t)f->rsp;
            f->rsp += 8;
        } else {
            f->rip = probe_st[cpu].resume;
        }
        return;
    }
    pl_printf("FAIL: unexpected exception %u on CPU %u: error %lx RIP %lx CR2 %lx\n",
              (unsigned)f->vec, cpu, f->err, f->rip, pl_read_cr(2));
    pl_exit(2);
}

static unsigned probe_begin(void)
{
    unsigned cpu = pl_x86_cpu();
    probe_st[cpu].vec = probe_st[cpu].err = probe_st[cpu].cr2 = 0;
    probe_st[cpu].armed = 1;
    return cpu;
}

static int probe_end(unsigned cpu, struct pl_probe *p, uint64_t value)
{
    int faulted = !probe_st[cpu].armed;
    probe_st[cpu].armed = 0;
    p->vec = faulted ? probe_st[cpu].vec : 0;
    p->err = probe_st[cpu].err;
    p->cr2 = probe_st[cpu].cr2;
    p->value = value;
    return faulted ? -1 : 0;
}

int pl_probe_load(uint64_t va, struct pl_probe *p)
{
    uint64_t v = 0, tmp;
    unsigned cpu = probe_begin();
    __asm__ volatile("leaq 1f(%%rip), %1\n\t"
                     "movq %1, (%3)\n\t"
                     "movq (%2), %0\n"
                     "1:"
                     : "+r"(v), "=&r"(tmp)
                     : "r"(va), "r"(&probe_st[cpu].resume)
                     : "memory");
    return probe_end(cpu, p, v);
}

int pl_probe_store(uint64_t va, uint64_t value, struct pl_probe *p)
{
    uint64_t tmp;
    unsigned cpu = probe_begin();
    __asm__ volatile("leaq 1f(%%rip), %0\n\t"
                     "movq %0, (%3)\n\t"
                     "movq %1, (%2)\n"
                     "1:"
                     : "=&r"(tmp)
                     : "r"(value), "r"(va), "r"(&probe_st[cpu].resume)
                     : "memory");
    return probe_end(cpu, p, value);
}

int pl_probe_exec(uint64_t va, struct pl_probe *p)
{
    unsigned cpu = probe_begin();
    __asm__ volatile("call *%0"
                     :
                     : "r"(va)
                     : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
    return probe_end(cpu, p, 0);
}

void pl_boot_paging_restore(void)
{
    pl_x86_set_paging((uint64_t)(uintptr_t)boot_pml4, 0);
}
