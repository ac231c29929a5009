/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 reference hypervisor: what its parts share. Bare metal,
 * freestanding, two physical CPUs: CPU 0 runs the one guest vCPU (AMD SVM
 * with nested paging on a table mmport builds), CPU 1 runs the memory
 * manager's passes (pre-copy migration, cold-page eviction) on the same
 * table at the same time.
 */
#ifndef HV_H
#define HV_H

#include <atomic_ops.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define HV_PAGE 4096ull
#define HV_2M (2ull << 20)
#define HV_ALIGN_UP(x, a) (((x) + (a)-1) & ~((uint64_t)(a)-1))
#define HV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- instructions ---- */

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
static inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint32_t inl(uint16_t port)
{
    uint32_t v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __asm__ volatile("cpuid"
                     : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
}
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
static inline void cpu_relax(void)
{
    __asm__ volatile("pause" ::: "memory");
}

#define MSR_EFER 0xc0000080u
#define MSR_VM_CR 0xc0010114u
#define MSR_VM_HSAVE_PA 0xc0010117u
#define EFER_SVME (1ull << 12)

/* ---- lib.c: C runtime, console, time, exit ---- */

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t hv_strlen(const char *s);
/** Copy one 4 KiB page (8-byte words). */
void hv_copy_page(void *dst, const void *src);
/** Copy @p n bytes, by 8-byte words where both are aligned. */
void hv_copy(void *dst, const void *src, size_t n);
/** 1 when two 4 KiB pages hold the same bytes. */
int hv_page_equal(const void *a, const void *b);

int hv_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) int hv_snprintf(char *buf, size_t cap,
                                                      const char *fmt, ...);
/** Formatted text to the serial console (COM1), whole lines at a time. */
__attribute__((format(printf, 1, 2))) void hv_printf(const char *fmt, ...);

/** Count TSC ticks against 20 ms of the HPET; ticks per microsecond. */
unsigned hv_tsc_calibrate(void);
uint64_t hv_tsc_per_us(void);
uint64_t hv_now_us(void);
static inline uint64_t hv_tsc_to_us(uint64_t t)
{
    return t / hv_tsc_per_us();
}

/** End the machine: QEMU's isa-debug-exit makes it exit with (code << 1) | 1. */
__attribute__((noreturn)) void hv_exit(int code);

uint64_t hv_rand(uint64_t *state);

/* A test-and-set lock: both CPUs change the nested table under it. */
typedef struct {
    volatile AO_TS_t ts;
} hv_lock_t;
static inline void hv_lock(hv_lock_t *l)
{
    while (AO_test_and_set_acquire(&l->ts) == AO_TS_SET)
        while (l->ts == AO_TS_SET)
            cpu_relax();
}
static inline void hv_unlock(hv_lock_t *l)
{
    AO_CLEAR(&l->ts);
}

/* ---- trap.c ---- */

void hv_idt_init(void);
void hv_idt_load(void);

/* ---- smp.c: the second CPU and the NMI that takes CPU 0 out of the guest ---- */

/** This CPU's index: 0 booted, 1 was started. */
unsigned hv_cpu(void);
/** Start CPU 1 running fn(); 0, or -1 with *why. */
int hv_start_cpu1(void (*fn)(void), const char **why);
/** Send an NMI to CPU 0 (from CPU 1): a #VMEXIT(NMI) if it is in the guest. */
void hv_nmi_cpu0(void);

/* What CPU 1 needs on its way from the STARTUP IPI to fn(); start.S reads
 * sp at offset 0. */
struct hv_ap_boot {
    uint64_t sp;
    void (*fn)(void);
    volatile AO_t up;
};
extern struct hv_ap_boot hv_ap_boot;
extern char hv_ap_tramp[], hv_ap_tramp_end[];
void hv_ap_main(void);

/* ---- svm.c: the vCPU ---- */

/* The guest's general registers that VMRUN does not switch (start.S). */
struct hv_gregs {
    uint64_t rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15;
};
void hv_vmrun(uint64_t vmcb_pa, struct hv_gregs *g, uint64_t host_area_pa);

/* ---- multiboot information (Multiboot 0.6.96, 3.3) ---- */

struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr;
};
struct mb_module {
    uint32_t start, end, string, reserved;
};
struct __attribute__((packed)) mb_mmap {
    uint32_t size;
    uint64_t addr, len;
    uint32_t type;
};
extern uint32_t hv_mb_magic, hv_mb_info;
extern char __image_start[], __image_end[];

#endif
