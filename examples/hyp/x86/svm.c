/* SPDX-License-Identifier: MIT */
/*
 * The guest vCPU on CPU 0: AMD SVM with nested paging (AMD64 APM vol. 2,
 * chapter 15; VMCB layout in Appendix B, Tables B-1 and B-2).
 *
 * What the guest gets:
 * - nested paging on mmport's table (nCR3 = mmp_pt_root), ASID 1;
 * - every I/O port passed through (the IOPM is clear) except: the ACPI
 *   PM1a control register, whose SLP_EN write is the guest's power-off;
 *   the reset ports (0xcf9, and 0x64 for the keyboard controller's reset
 *   command), which end the run; QEMU's isa-debug-exit (0xf4), which only
 *   the hypervisor may use; and fw_cfg (0x510-0x51b), whose DMA interface
 *   would let the guest write memory behind the nested table (reads
 *   return 0: no fw_cfg);
 * - every MSR passed through except EFER (the guest must not clear SVME,
 *   which VMRUN requires, and does not see it), VM_CR (reads say SVM is
 *   disabled and locked) and VM_HSAVE_PA (ignored);
 * - physical interrupts straight to the guest: INTR is not intercepted and
 *   V_INTR_MASKING is clear, so the guest's RFLAGS.IF masks them and its
 *   IDT takes them (its PIC, IOAPIC, local APIC, PIT, HPET and UART are
 *   the machine's own);
 * - NMI intercepted: that is how CPU 1 pulls CPU 0 out of the guest;
 * - the SVM instructions (VMRUN, VMMCALL, VMLOAD, VMSAVE, STGI, CLGI,
 *   SKINIT) intercepted and answered with #UD; a triple fault (shutdown)
 *   ends the run.
 *
 * An event the CPU was delivering when the exit came (a nested page fault
 * on the guest's IDT or stack, say) is in EXITINTINFO and is injected
 * again at the next VMRUN (APM 15.7.2): an external interrupt the guest
 * already acknowledged would otherwise be lost.
 */
#include "svm.h"
#include "gm.h"

/* VMCB control area (Table B-1). */
#define C_INTERCEPT_EXC 0x008
#define C_INTERCEPT_MISC1 0x00c
#define C_INTERCEPT_MISC2 0x010
#define C_IOPM 0x040
#define C_MSRPM 0x048
#define C_ASID 0x058
#define C_TLB_CONTROL 0x05c
#define C_EXITCODE 0x070
#define C_EXITINFO1 0x078
#define C_EXITINFO2 0x080
#define C_EXITINTINFO 0x088
#define C_NP_ENABLE 0x090
#define C_EVENTINJ 0x0a8
#define C_NCR3 0x0b0
#define C_CLEAN 0x0c0
#define C_NRIP 0x0c8
/* State save area (Table B-2). */
#define S_ES 0x400
#define S_CS 0x410
#define S_SS 0x420
#define S_DS 0x430
#define S_FS 0x440
#define S_GS 0x450
#define S_GDTR 0x460
#define S_LDTR 0x470
#define S_IDTR 0x480
#define S_TR 0x490
#define S_CPL 0x4cb
#define S_EFER 0x4d0
#define S_CR4 0x548
#define S_CR3 0x550
#define S_CR0 0x558
#define S_DR7 0x560
#define S_DR6 0x568
#define S_RFLAGS 0x570
#define S_RIP 0x578
#define S_RSP 0x5d8
#define S_RAX 0x5f8
#define S_GPAT 0x668

/* Intercept bits. */
#define I1_NMI (1u << 1)
#define I1_IOIO (1u << 27)
#define I1_MSR (1u << 28)
#define I1_SHUTDOWN (1u << 31)
#define I2_SVM_INSNS 0x7fu /* VMRUN VMMCALL VMLOAD VMSAVE STGI CLGI SKINIT */

/* Exit codes (Appendix C). */
#define EXIT_NMI 0x61
#define EXIT_IOIO 0x7b
#define EXIT_MSR 0x7c
#define EXIT_SHUTDOWN 0x7f
#define EXIT_VMRUN 0x80
#define EXIT_SKINIT 0x86
#define EXIT_NPF 0x400
#define EXIT_INVALID 0xffffffffull /* -1; QEMU stores it as 32 bits */

#define EVT_VALID (1u << 31)
#define EVT_TYPE_MASK (7u << 8)
#define EVT_INTR (0u << 8)
#define EVT_EXCEPTION (3u << 8)
#define EVT_ERR_VALID (1u << 11)
#define EFER_LMA (1ull << 10)

static uint8_t vmcb[4096] __attribute__((aligned(4096)));
static uint8_t hsave[4096] __attribute__((aligned(4096)));
static uint8_t host_area[4096] __attribute__((aligned(4096))); /* host VMSAVE state */
static uint8_t iopm[3 * 4096] __attribute__((aligned(4096)));
static uint8_t msrpm[2 * 4096] __attribute__((aligned(4096)));
static uint8_t doorbell_page[4096] __attribute__((aligned(4096)));
static struct hv_gregs gregs;
static uint64_t last_ii;
static uint16_t pm1a_cnt_port;

struct vcpu_stats vcpu_st;

#define V64(off) (*(volatile uint64_t *)(vmcb + (off)))
#define V32(off) (*(volatile uint32_t *)(vmcb + (off)))
#define V16(off) (*(volatile uint16_t *)(vmcb + (off)))
#define V8(off) (*(volatile uint8_t *)(vmcb + (off)))

static void seg(unsigned off, uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
    V16(off) = sel;
    V16(off + 2) = attr;
    V32(off + 4) = limit;
    V64(off + 8) = base;
}

static void iopm_set(unsigned port, unsigned n)
{
    for (unsigned p = port; p < port + n; p++)
        iopm[p / 8] |= (uint8_t)(1u << (p % 8));
}

/* MSRPM (APM 15.11): two bits per MSR, read then write, in three 2 KiB
 * blocks for MSRs 0-1FFF, C000_0000-C000_1FFF and C001_0000-C001_1FFF. */
static void msrpm_set(uint32_t msr)
{
    unsigned base = msr < 0x2000 ? 0 : msr < 0xc0002000u ? 0x800 : 0x1000;
    unsigned i = (msr & 0x1fff) * 2;
    msrpm[base + i / 8] |= (uint8_t)(3u << (i % 8));
}

int vcpu_init(const struct vcpu_entry *e, uint64_t ncr3, uint16_t pm1a_cnt,
              const char **why)
{
    uint32_t r[4];
    cpuid(0x80000001, 0, r);
    if (!(r[2] & (1u << 2))) {
        *why = "CPUID.80000001:ECX.SVM clear (run QEMU with -cpu max)";
        return -1;
    }
    cpuid(0x8000000a, 0, r);
    if (!(r[3] & 1u)) {
        *why = "CPUID.8000000A:EDX.NP (nested paging) clear";
        return -1;
    }
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
    wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)hsave);
    pm1a_cnt_port = pm1a_cnt;

    iopm_set(pm1a_cnt, 2);
    iopm_set(0xf4, 4);   /* isa-debug-exit */
    iopm_set(0xcf9, 1);  /* reset control */
    iopm_set(0x64, 1);   /* keyboard controller command (0xfe: reset) */
    iopm_set(0x510, 12); /* fw_cfg, DMA included */
    msrpm_set(MSR_EFER);
    msrpm_set(MSR_VM_CR);
    msrpm_set(MSR_VM_HSAVE_PA);

    memset(vmcb, 0, sizeof vmcb);
    V32(C_INTERCEPT_MISC1) = I1_NMI | I1_IOIO | I1_MSR | I1_SHUTDOWN;
    V32(C_INTERCEPT_MISC2) = I2_SVM_INSNS;
    V64(C_IOPM) = (uint64_t)(uintptr_t)iopm;
    V64(C_MSRPM) = (uint64_t)(uintptr_t)msrpm;
    V32(C_ASID) = 1;
    V64(C_NP_ENABLE) = 1;
    V64(C_NCR3) = ncr3;
    V8(C_TLB_CONTROL) = 1;

    /* Linux 64-bit boot protocol: long mode, paging on an identity map,
     * __BOOT_CS / __BOOT_DS, interrupts off, RSI = boot_params. */
    seg(S_CS, e->cs, 0xa9b, 0xffffffffu, 0); /* 64-bit code: P S type 0xb, L, G */
    seg(S_SS, e->ds, 0xc93, 0xffffffffu, 0);
    seg(S_DS, e->ds, 0xc93, 0xffffffffu, 0);
    seg(S_ES, e->ds, 0xc93, 0xffffffffu, 0);
    seg(S_FS, e->ds, 0xc93, 0xffffffffu, 0);
    seg(S_GS, e->ds, 0xc93, 0xffffffffu, 0);
    seg(S_TR, 0, 0x8b, 0x67, 0); /* busy 64-bit TSS (Linux loads its own) */
    seg(S_LDTR, 0, 0x82, 0, 0);
    V32(S_GDTR + 4) = e->gdt_limit;
    V64(S_GDTR + 8) = e->gdt_base;
    V8(S_CPL) = 0;
    V64(S_EFER) = EFER_SVME | EFER_LMA | (1ull << 8); /* SVME LMA LME */
    V64(S_CR0) = 0x80000011ull;                       /* PG ET PE */
    V64(S_CR3) = e->cr3;
    V64(S_CR4) = 0x20; /* PAE */
    V64(S_DR7) = 0x400;
    V64(S_DR6) = 0xffff0ff0ull;
    V64(S_RFLAGS) = 2;
    V64(S_RIP) = e->rip;
    V64(S_RSP) = e->rsp;
    V64(S_GPAT) = 0x0007040600070406ull; /* power-on PAT */
    memset(&gregs, 0, sizeof gregs);
    gregs.rsi = e->rsi;
    return 0;
}

/* ---- keeping the guest's nested TLB in step with the table ----
 *
 * The guest's nested translations are cached per ASID and only VMRUN with
 * TLB_CONTROL = 1 drops them (APM 15.16). flush_req counts flush requests;
 * CPU 0 applies them at each entry: it announces in_guest, then reads
 * flush_req (both with full barriers), so a request CPU 1 makes either is
 * seen by that read, or CPU 1 sees in_guest and sends the NMI that brings
 * CPU 0 out. CPU 1 waits until CPU 0 either applied its request or is out
 * of the guest (it will read the request before going back in). CLGI
 * before the announcement holds an NMI that arrives before VMRUN pending
 * until the guest runs, where it exits at once. */
static volatile AO_t flush_req, flush_applied, in_guest;

void hv_vcpu_flush(void)
{
    AO_t g = AO_fetch_and_add1_full(&flush_req) + 1;
    if (hv_cpu() == 0)
        return; /* CPU 0 is not in the guest when it calls this */
    uint64_t t0 = rdtsc();
    int kicked = 0;
    AO_nop_full();
    while (AO_load_acquire(&in_guest) && AO_load_acquire(&flush_applied) < g) {
        if (!kicked) {
            hv_nmi_cpu0();
            vcpu_st.kicks++;
            kicked = 1;
        }
        cpu_relax();
    }
    vcpu_st.flush_waits_tsc += rdtsc() - t0;
}

static void enter_guest(void)
{
    __asm__ volatile("clgi" ::: "memory");
    AO_store_full(&in_guest, 1);
    AO_nop_full();
    AO_t g = AO_load_acquire(&flush_req);
    if (g != flush_applied) {
        V8(C_TLB_CONTROL) = 1; /* flush this guest's (every ASID's) TLB entries */
        vcpu_st.flushes++;
        AO_store_release(&flush_applied, g);
    }
    V32(C_CLEAN) = 0;
    hv_vmrun((uint64_t)(uintptr_t)vmcb, &gregs, (uint64_t)(uintptr_t)host_area);
    AO_store_release(&in_guest, 0);
    V8(C_TLB_CONTROL) = 0;
    __asm__ volatile("stgi" ::: "memory"); /* a pending NMI arrives now (trap.c) */
}

/* ---- exits ---- */

static void inject_ud(void)
{
    V64(C_EVENTINJ) = EVT_VALID | EVT_EXCEPTION | 6;
}

static void skip_insn(unsigned len)
{
    uint64_t n = V64(C_NRIP);
    V64(S_RIP) = n ? n : V64(S_RIP) + len;
}

static uint32_t port_in(uint16_t port, unsigned size)
{
    return size == 1 ? inb(port) : size == 2 ? inw(port) : inl(port);
}

static void port_out(uint16_t port, unsigned size, uint32_t v)
{
    if (size == 1)
        outb(port, (uint8_t)v);
    else if (size == 2)
        outw(port, (uint16_t)v);
    else
        outl(port, v);
}

/* An intercepted port access; STOP_* to end the run, -1 to go on. */
static int io_exit(void)
{
    uint64_t info = V64(C_EXITINFO1);
    uint16_t port = (uint16_t)(info >> 16);
    unsigned size = (info & 0x10) ? 1 : (info & 0x20) ? 2 : 4;
    uint32_t mask = size == 4 ? ~0u : (1u << (8 * size)) - 1;
    int in = (int)(info & 1);
    uint32_t v = (uint32_t)V64(S_RAX) & mask;
    vcpu_st.exits_io++;
    if (info & 4) /* string I/O to these ports: no guest does that */
        return STOP_ERROR;
    if (port >= 0xf4 && port < 0xf8) {
        v = mask; /* nothing there, as far as the guest knows */
    } else if (port >= 0x510 && port < 0x51c) {
        v = 0;
    } else if (!in && port == pm1a_cnt_port && (v & (1u << 13))) {
        return STOP_POWEROFF; /* SLP_EN: the sleep type is S5 for a power-off */
    } else if (!in && ((port == 0xcf9 && (v & 4)) || (port == 0x64 && v == 0xfe))) {
        return STOP_RESET;
    } else if (in) {
        v = port_in(port, size);
    } else {
        port_out(port, size, v);
    }
    if (in)
        V64(S_RAX) = (V64(S_RAX) & ~(uint64_t)mask) | v;
    V64(S_RIP) = V64(C_EXITINFO2); /* the next RIP (APM 15.10.2) */
    return -1;
}

static void msr_exit(void)
{
    uint32_t msr = (uint32_t)gregs.rcx;
    vcpu_st.exits_msr++;
    if (V64(C_EXITINFO1) & 1) { /* WRMSR */
        uint64_t v = (gregs.rdx << 32) | (uint32_t)V64(S_RAX);
        if (msr == MSR_EFER) /* LMA is the CPU's; SVME stays on under the guest */
            V64(S_EFER) = (v & ~EFER_LMA) | (V64(S_EFER) & EFER_LMA) | EFER_SVME;
    } else {
        uint64_t v = 0;
        if (msr == MSR_EFER)
            v = V64(S_EFER) & ~EFER_SVME;
        else if (msr == MSR_VM_CR)
            v = (1u << 4) | (1u << 3); /* SVMDIS, LOCK */
        V64(S_RAX) = (uint32_t)v;
        gregs.rdx = v >> 32;
    }
    skip_insn(2);
}

/* A nested page fault: guest RAM is mapped now, a doorbell is rung. */
static int npf_exit(void)
{
    uint64_t gpa = V64(C_EXITINFO2);
    vcpu_st.exits_npf++;
    if (gpa - HV_DOORBELL_GPA < DOORBELL_N * HV_PAGE) {
        unsigned n = (unsigned)((gpa - HV_DOORBELL_GPA) / HV_PAGE);
        uint64_t pg = gpa & ~(HV_PAGE - 1);
        if (!vcpu_st.t_doorbell[n])
            vcpu_st.t_doorbell[n] = rdtsc();
        gm_lock(0);
        int rc = GM_CALL(0, mmp_pt_map(&gm.npt, pg, (uint64_t)(uintptr_t)doorbell_page,
                                       HV_PAGE, MMP_PROT_READ | MMP_PROT_WRITE, 0));
        gm_unlock();
        return rc == 0 || rc == -MMP_EEXIST ? -1 : STOP_ERROR;
    }
    int rc = gm_fault(gpa);
    if (rc == 0)
        return -1;
    if (rc == -MMP_ERANGE)
        return STOP_BAD_GPA;
    hv_printf("hyp: FAIL: nested fault at %lx: mmport error %d\n", gpa, rc);
    return STOP_ERROR;
}

void vcpu_tick(void)
{
    if (AO_load_acquire(&in_guest)) {
        hv_nmi_cpu0();
        vcpu_st.ticks++;
    }
}

enum vcpu_stop vcpu_run(uint64_t init_us, uint64_t total_us)
{
    vcpu_st.t_start = rdtsc();
    uint64_t init_by = vcpu_st.t_start + init_us * hv_tsc_per_us();
    uint64_t end_by = vcpu_st.t_start + total_us * hv_tsc_per_us();
    for (;;) {
        enter_guest();
        vcpu_st.exits++;
        uint64_t now = rdtsc();
        uint64_t code = V64(C_EXITCODE);
        if (code == ~0ull)
            code = EXIT_INVALID;
        uint64_t ii = V64(C_EXITINTINFO);
        if (ii & EVT_VALID) { /* an event cut short by the exit: deliver it again */
            /* QEMU 7.2 records an external interrupt it was delivering as
             * an exception (type 3); VMRUN refuses to inject an exception
             * above vector 31. A vector of 32 or more that came in as an
             * "exception" was an interrupt: type 0 (INTR), no error code. */
            if ((ii & EVT_TYPE_MASK) == EVT_EXCEPTION && (ii & 0xff) >= 32)
                ii = (ii & ~(uint64_t)(EVT_TYPE_MASK | EVT_ERR_VALID)) | EVT_INTR;
            V64(C_EVENTINJ) = ii;
            last_ii = ii;
            vcpu_st.reinjected++;
        }
        int stop;
        switch (code) {
        case EXIT_NPF:
            stop = npf_exit();
            break;
        case EXIT_IOIO:
            stop = io_exit();
            break;
        case EXIT_MSR:
            msr_exit();
            stop = -1;
            break;
        case EXIT_NMI:
            vcpu_st.exits_nmi++;
            stop = -1;
            break;
        case EXIT_SHUTDOWN:
            stop = STOP_SHUTDOWN;
            break;
        case EXIT_INVALID:
            hv_printf("hyp: VMRUN refused the guest state: EVENTINJ %lx (from "
                      "EXITINTINFO %lx), "
                      "EFER %lx CR0 %lx CR4 %lx CS attr %x RFLAGS %lx\n",
                      V64(C_EVENTINJ), last_ii, V64(S_EFER), V64(S_CR0), V64(S_CR4),
                      V16(S_CS + 2), V64(S_RFLAGS));
            stop = STOP_ERROR;
            break;
        default:
            vcpu_st.exits_other++;
            if (code >= EXIT_VMRUN && code <= EXIT_SKINIT) {
                inject_ud();
                stop = -1;
            } else {
                stop = STOP_ERROR;
            }
            break;
        }
        if (stop < 0 &&
            (now > end_by || (now > init_by && !vcpu_st.t_doorbell[DOORBELL_INIT])))
            stop = STOP_TIMEOUT;
        if (stop >= 0) {
            vcpu_st.t_stop = rdtsc();
            vcpu_st.code = code;
            vcpu_st.info1 = V64(C_EXITINFO1);
            vcpu_st.info2 = V64(C_EXITINFO2);
            vcpu_st.rip = V64(S_RIP);
            return (enum vcpu_stop)stop;
        }
    }
}
