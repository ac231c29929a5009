/* SPDX-License-Identifier: MIT */
/*
 * x86-64 payload: debug console (port 0xE9, QEMU -debugcon), exit through
 * QEMU's isa-debug-exit device, the IDT and the trap handler that turns
 * probe faults into records.
 */
#include "arch.h"
#include "payload.h"

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}

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

/* ---- IDT ---- */

struct idt_gate {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, zero;
};

static struct idt_gate idt[32] __attribute__((aligned(16)));
extern char pl_isr_stubs[];

void pl_idt_init(void)
{
    for (unsigned i = 0; i < 32; i++) {
        uint64_t a = (uint64_t)(uintptr_t)(pl_isr_stubs + 16 * i);
        idt[i].off0 = (uint16_t)a;
        idt[i].sel = 0x08;
        idt[i].ist = 0;
        idt[i].type = 0x8e; /* present, DPL 0, 64-bit interrupt gate */
        idt[i].off1 = (uint16_t)(a >> 16);
        idt[i].off2 = (uint32_t)(a >> 32);
        idt[i].zero = 0;
    }
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } ptr = { sizeof(idt) - 1, (uint64_t)(uintptr_t)idt };
    __asm__ volatile("lidt %0" ::"m"(ptr));
}

/* ---- traps and probes ---- */

static volatile int probe_armed;
static volatile uint64_t probe_vec, probe_err, probe_cr2;
uint64_t pl_probe_resume; /* where a faulting load/store continues */

void pl_trap(struct pl_frame *f);
void pl_trap(struct pl_frame *f)
{
    if (probe_armed && f->vec == 14) {
        probe_vec = f->vec;
        probe_err = f->err;
        probe_cr2 = pl_read_cr(2);
        probe_armed = 0;
        if (f->err & PF_ID) {
            /* The call target faulted: return to the caller. */
            f->rip = *(uint64_t *)(uintptr_t)f->rsp;
            f->rsp += 8;
        } else {
            f->rip = pl_probe_resume;
        }
        return;
    }
    pl_printf("FAIL: unexpected exception %u: error %lx RIP %lx CR2 %lx\n",
              (unsigned)f->vec, f->err, f->rip, pl_read_cr(2));
    pl_exit(2);
}

static void probe_begin(void)
{
    probe_vec = probe_err = probe_cr2 = 0;
    probe_armed = 1;
}

static int probe_end(struct pl_probe *p, uint64_t value)
{
    int faulted = !probe_armed;
    probe_armed = 0;
    p->vec = faulted ? probe_vec : 0;
    p->err = probe_err;
    p->cr2 = probe_cr2;
    p->value = value;
    return faulted ? -1 : 0;
}

int pl_probe_load(uint64_t va, struct pl_probe *p)
{
    uint64_t v = 0, tmp;
    probe_begin();
    __asm__ volatile("leaq 1f(%%rip), %1\n\t"
                     "movq %1, pl_probe_resume(%%rip)\n\t"
                     "movq (%2), %0\n"
                     "1:"
                     : "+r"(v), "=&r"(tmp)
                     : "r"(va)
                     : "memory");
    return probe_end(p, v);
}

int pl_probe_store(uint64_t va, uint64_t value, struct pl_probe *p)
{
    uint64_t tmp;
    probe_begin();
    __asm__ volatile("leaq 1f(%%rip), %0\n\t"
                     "movq %0, pl_probe_resume(%%rip)\n\t"
                     "movq %1, (%2)\n"
                     "1:"
                     : "=&r"(tmp)
                     : "r"(value), "r"(va)
                     : "memory");
    return probe_end(p, value);
}

int pl_probe_exec(uint64_t va, struct pl_probe *p)
{
    probe_begin();
    __asm__ volatile("call *%0"
                     :
                     : "r"(va)
                     : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
    return probe_end(p, 0);
}

void pl_boot_paging_restore(void)
{
    pl_x86_set_paging((uint64_t)(uintptr_t)boot_pml4, 0);
}
