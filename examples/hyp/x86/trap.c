/* SPDX-License-Identifier: MIT */
/*
 * The hypervisor's own exceptions. It runs with interrupts off (RFLAGS.IF
 * clear on both CPUs), so the only event it takes on purpose is the NMI
 * CPU 1 sends to pull CPU 0 out of the guest: intercepted while the guest
 * runs (#VMEXIT(NMI)), it stays pending until CPU 0 sets GIF again after
 * the exit and arrives here, where there is nothing left to do. Any other
 * exception is a hypervisor bug: report it and stop the machine.
 */
#include "hv.h"

struct hv_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vec, err;
    uint64_t rip, cs, rflags, rsp, ss;
};

struct idt_gate {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, zero;
};

static struct idt_gate idt[32] __attribute__((aligned(16)));
extern char hv_isr_stubs[];

void hv_idt_load(void)
{
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } ptr = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};
    __asm__ volatile("lidt %0" ::"m"(ptr));
}

void hv_idt_init(void)
{
    for (unsigned v = 0; v < 32; v++) {
        uint64_t a = (uint64_t)(uintptr_t)(hv_isr_stubs + 16 * v);
        idt[v].off0 = (uint16_t)a;
        idt[v].sel = 0x08;
        idt[v].ist = 0;
        idt[v].type = 0x8e; /* present, DPL 0, 64-bit interrupt gate */
        idt[v].off1 = (uint16_t)(a >> 16);
        idt[v].off2 = (uint32_t)(a >> 32);
        idt[v].zero = 0;
    }
    hv_idt_load();
}

void hv_trap(struct hv_frame *f);
void hv_trap(struct hv_frame *f)
{
    if (f->vec == 2)
        return;
    uint64_t cr2;
    __asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
    hv_printf("hyp: FAIL: hypervisor exception %u on CPU %u: error %lx RIP %lx CR2 %lx\n",
              (unsigned)f->vec, hv_cpu(), f->err, f->rip, cr2);
    hv_exit(3);
}
