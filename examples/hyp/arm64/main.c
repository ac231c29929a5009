/* SPDX-License-Identifier: MIT */
/*
 * The reference hypervisor's boot (arm64): read QEMU's device tree, lay
 * out host RAM, turn on the EL2 MMU on a table mmport built, create the
 * guest's stage 2 with the devices passed through, scrub guest RAM, put
 * the kernel, initramfs and the guest's device tree in it, and enter the
 * guest on CPU 0. CPU 1 starts when the guest asks for it (psci.c).
 *
 * Options come from QEMU's -append (the /chosen/bootargs QEMU gives the
 * hypervisor); everything after " -- " is the guest's command line:
 *   hyp.kernel=ADDR,SIZE  hyp.initrd=ADDR,SIZE   where QEMU's loader put them
 *   hyp.mem=MiB           guest RAM (default 512)
 *   hyp.granule=4k|64k    stage-2 granule (default 4k)
 *   hyp.mode=pages|blocks fault mode (default pages)
 *   hyp.track=hw|sw       dirty/young tracking (default hw where the CPU has
 *                         FEAT_HAFDBS)
 *   hyp.mig=START,ROUND   ms: migration starts, then rounds (default 1000,100; 0 off)
 *   hyp.evict=START,ROUND,BATCH  ms, pages (default 1500,200,64; 0 off)
 *   hyp.fold=1            let maps fold runs and blocks under dirty tracking
 *                         (common/gmm.c says why they do not by default)
 */
#include "arch.h"
#include "fdt.h"

struct gmm hyp_gmm;
struct hyp_run hyp_run;
struct vcpu hyp_vcpus[HYP_MAX_CPUS];
unsigned hyp_nvcpus;
struct hyp_layout hyp_layout;
uint64_t hyp_uart = 0x09000000; /* QEMU virt's, until the device tree says */
/* A page of guest-physical space with nothing of QEMU's behind it: the
 * doorbell the guest's init writes (exit.c). */
uint64_t hyp_doorbell_ipa = 0x0b000000;

#define QEMU_DTB 0x40000000ull  /* QEMU virt puts its tree at the start of RAM */
#define GUEST_IPA 0x80000000ull /* guest RAM, guest-physical (not where it is) */

/* ---- what common/ needs from the arch ---- */

void hyp_arch_putc(char c)
{
    volatile uint32_t *uart = (volatile uint32_t *)(uintptr_t)hyp_uart;
    while (uart[0x18 / 4] & (1u << 5)) /* UARTFR.TXFF */
        ;
    uart[0] = (uint8_t)c;
}

uint64_t hyp_arch_now_ns(void)
{
    uint64_t f = read_sysreg(cntfrq_el0), c;
    __asm__ volatile("isb\n\tmrs %0, cntpct_el0" : "=r"(c));
    return c / f * 1000000000ull + c % f * 1000000000ull / f;
}

unsigned hyp_arch_cpu(void)
{
    return (unsigned)read_sysreg(tpidr_el2) & (HYP_MAX_CPUS - 1);
}

void hyp_arch_relax(void)
{
    __asm__ volatile("yield" ::: "memory");
}

void hyp_arch_power_off(void)
{
    hyp_psci_real(PSCI_SYSTEM_OFF, 0, 0, 0);
    for (;;)
        __asm__ volatile("wfi");
}

static __attribute__((noreturn)) void fatal(const char *what)
{
    hyp_printf("hyp: error: %s\n", what);
    hyp_arch_power_off();
}

/* ---- options ---- */

struct opts {
    uint64_t kernel, kernel_size, initrd, initrd_size, mem_mib;
    uint32_t granule;
    int blocks, track; /* track: 1 hw, 0 sw, -1 default */
    uint64_t fold;
    uint64_t mig[2], evict[3];
    const char *guest_args;
};

static const char *word_is(const char *s, const char *key)
{
    while (*key && *s == *key)
        s++, key++;
    return *key ? NULL : s;
}

/* Up to n comma-separated numbers (decimal or 0x hex); returns the count. */
static int numbers(const char *s, uint64_t *v, int n)
{
    int i = 0;
    while (i < n) {
        uint64_t x = 0;
        int base = 10, digits = 0;
        if (s[0] == '0' && s[1] == 'x')
            base = 16, s += 2;
        for (;; s++, digits++) {
            int d = *s >= '0' && *s <= '9'   ? *s - '0'
                    : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                                             : 99;
            if (d >= base)
                break;
            x = x * (uint64_t)base + (uint64_t)d;
        }
        if (!digits)
            break;
        v[i++] = x;
        if (*s != ',')
            break;
        s++;
    }
    return i;
}

static void parse(struct opts *o, const char *args)
{
    *o = (struct opts){.mem_mib = 512,
                       .granule = 4096,
                       .track = -1,
                       .mig = {1000, 100},
                       .evict = {1500, 200, 64},
                       .guest_args = ""};
    for (const char *s = args; s && *s;) {
        while (*s == ' ')
            s++;
        const char *v;
        uint64_t n[3];
        if (s[0] == '-' && s[1] == '-' && (s[2] == ' ' || !s[2])) {
            o->guest_args = s[2] ? s + 3 : s + 2;
            break;
        } else if ((v = word_is(s, "hyp.kernel=")) && numbers(v, n, 2) == 2) {
            o->kernel = n[0], o->kernel_size = n[1];
        } else if ((v = word_is(s, "hyp.initrd=")) && numbers(v, n, 2) == 2) {
            o->initrd = n[0], o->initrd_size = n[1];
        } else if ((v = word_is(s, "hyp.fold=")) && numbers(v, n, 1) == 1) {
            o->fold = n[0];
        } else if ((v = word_is(s, "hyp.mem=")) && numbers(v, n, 1) == 1) {
            o->mem_mib = n[0];
        } else if ((v = word_is(s, "hyp.granule="))) {
            o->granule = word_is(v, "64k") ? 65536 : word_is(v, "4k") ? 4096 : 0;
        } else if ((v = word_is(s, "hyp.mode="))) {
            o->blocks = word_is(v, "blocks") ? 1 : word_is(v, "pages") ? 0 : -1;
        } else if ((v = word_is(s, "hyp.track="))) {
            o->track = word_is(v, "hw") ? 1 : word_is(v, "sw") ? 0 : -2;
        } else if ((v = word_is(s, "hyp.mig=")) && numbers(v, n, 2) >= 1) {
            o->mig[0] = n[0], o->mig[1] = n[0] ? n[1] : 0;
        } else if ((v = word_is(s, "hyp.evict=")) && numbers(v, n, 3) >= 1) {
            o->evict[0] = n[0], o->evict[1] = n[0] ? n[1] : 0,
            o->evict[2] = n[0] ? n[2] : 0;
        } else if (*s) {
            hyp_printf("hyp: unknown option: %s\n", s);
            fatal("bad option (see examples/hyp/arm64/main.c)");
        }
        while (*s && *s != ' ')
            s++;
    }
    if (!o->granule || o->blocks < 0 || o->track == -2)
        fatal("bad hyp.granule, hyp.mode or hyp.track value");
}

/* ---- QEMU's device tree ---- */

struct devs {
    uint64_t uart, rtc, gicd, gicd_size, gicr, gicr_size;
    int have_gic;
};
static struct devs devs;

static int scan_node(void *arg, const struct fdt_node *n)
{
    (void)arg;
    uint64_t size;
    if (n->device_type && !memcmp(n->device_type, "memory", 7) && !hyp_layout.ram_size)
        hyp_layout.ram_base = fdt_reg(n, 0, &hyp_layout.ram_size);
    else if (n->device_type && !memcmp(n->device_type, "cpu", 4) &&
             hyp_nvcpus < HYP_MAX_CPUS)
        hyp_vcpus[hyp_nvcpus++].mpidr = fdt_reg(n, 0, &size);
    else if (fdt_compatible(n, "arm,pl011") && !devs.uart)
        devs.uart = fdt_reg(n, 0, &size);
    else if (fdt_compatible(n, "arm,pl031"))
        devs.rtc = fdt_reg(n, 0, &size);
    else if (fdt_compatible(n, "arm,gic-v3")) {
        devs.gicd = fdt_reg(n, 0, &devs.gicd_size);
        devs.gicr = fdt_reg(n, 1, &devs.gicr_size);
        devs.have_gic = 1;
    }
    return 0;
}

/* The guest's tree keeps what is passed through (and what has no
 * registers); every other device is disabled. */
static int keep_node(const struct fdt_node *n)
{
    static const char *const keep[] = {
        "arm,pl011",       "arm,pl031",       "arm,gic-v3",
        "arm,armv8-timer", "arm,armv8-pmuv3", "arm,psci-1.0",
        "arm,psci-0.2",    "arm,psci",        "fixed-clock",
    };
    if (!n->compat)
        return 1;
    for (unsigned i = 0; i < HYP_ARRAY_SIZE(keep); i++)
        if (fdt_compatible(n, keep[i]))
            return 1;
    return 0;
}

/* ---- boot ---- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void check_inside(uint64_t at, uint64_t size, const char *what)
{
    const struct hyp_layout *l = &hyp_layout;
    if (at < (uint64_t)(uintptr_t)__image_end || at + size > l->ram_base + l->ram_size ||
        at + size < at) {
        hyp_printf("hyp: error: %s at %lx (+%lx) is outside free host RAM\n", what,
                   (unsigned long)at, (unsigned long)size);
        hyp_arch_power_off();
    }
}

static void layout(const struct opts *o)
{
    struct hyp_layout *l = &hyp_layout;
    if (!o->kernel || !o->kernel_size)
        fatal("no kernel: pass hyp.kernel=ADDR,SIZE and load it there (-device loader)");
    check_inside(o->kernel, o->kernel_size, "the kernel");
    const uint8_t *img = (const uint8_t *)(uintptr_t)o->kernel;
    /* arm64 Image header (Documentation/arch/arm64/booting.rst): magic
     * "ARM\x64" at 0x38; text_offset at 8, image_size at 16. */
    if (o->kernel_size < 64 || img[0x38] != 'A' || img[0x39] != 'R' || img[0x3a] != 'M' ||
        img[0x3b] != 0x64)
        fatal("the kernel is not an arm64 Image (no \"ARM\\x64\" magic at offset 0x38)");
    if (o->initrd_size) {
        check_inside(o->initrd, o->initrd_size, "the initramfs");
        const uint8_t *i = (const uint8_t *)(uintptr_t)o->initrd;
        if (memcmp(i, "070701", 6) && !(i[0] == 0x1f && i[1] == 0x8b))
            fatal("the initramfs is neither a newc cpio nor gzip");
    }
    l->kernel_pa = o->kernel;
    l->initrd_pa = o->initrd;
    l->initrd_size = o->initrd_size;
    l->guest_size = o->mem_mib << 20;
    l->guest_ipa = GUEST_IPA;
    uint64_t top = o->kernel + o->kernel_size;
    if (o->initrd_size && o->initrd + o->initrd_size > top)
        top = o->initrd + o->initrd_size;
    l->guest_pa = align_up(top, GMM_BLOCK);
    l->shadow_pa = l->guest_pa + l->guest_size;
    l->swap_pa = l->shadow_pa + l->guest_size;
    if (l->guest_size < (64ull << 20) ||
        l->swap_pa + l->guest_size > l->ram_base + l->ram_size)
        fatal(
            "host RAM too small: it holds the hypervisor, the loaded files and guest RAM "
            "three times (backing, migration shadow, swap); give QEMU more -m or hyp.mem "
            "less");
}

/* Kernel, initramfs and device tree into guest RAM (scrubbed already). */
static uint64_t load_guest(const struct opts *o, const void *qemu_dtb)
{
    struct hyp_layout *l = &hyp_layout;
    const uint8_t *img = (const uint8_t *)(uintptr_t)o->kernel;
    uint64_t text_offset = le64(img + 8), image_size = le64(img + 16);
    if (!image_size) /* kernels before 3.17 */
        image_size = o->kernel_size;
    uint8_t *ram = (uint8_t *)(uintptr_t)l->guest_pa;
    uint64_t kend = align_up(text_offset + image_size, GMM_BLOCK);
    uint64_t dtb_off = kend, initrd_off = kend + GMM_BLOCK;
    if (initrd_off + l->initrd_size > l->guest_size || o->kernel_size > image_size)
        fatal("the kernel and initramfs do not fit in guest RAM");
    /* Whole 64-byte blocks: the tail past the file is the loader's zeroed
     * RAM, and lands in the kernel's BSS or the 2 MiB gap after it. */
    hyp_copy_words(ram + text_offset, img, align_up(o->kernel_size, 64));
    hyp_copy_words(ram + initrd_off, (const void *)(uintptr_t)o->initrd,
                   align_up(l->initrd_size, 64));
    l->dtb_ipa = l->guest_ipa + dtb_off;
    l->initrd_ipa = l->guest_ipa + initrd_off;

    static char bootargs[1024];
    hyp_snprintf(bootargs, sizeof(bootargs), "%s hyp_doorbell=0x%lx", o->guest_args,
                 (unsigned long)hyp_doorbell_ipa);
    struct fdt_edit e = {
        .mem_base = l->guest_ipa,
        .mem_size = l->guest_size,
        .bootargs = bootargs,
        .initrd_start = l->initrd_size ? l->initrd_ipa : 0,
        .initrd_end = l->initrd_size ? l->initrd_ipa + l->initrd_size : 0,
        .keep = keep_node,
    };
    long n = fdt_rewrite(qemu_dtb, ram + dtb_off, GMM_BLOCK, &e);
    if (n < 0)
        fatal("could not write the guest's device tree");
    hyp_printf(
        "hyp: guest RAM %lu MiB at IPA %lx (host %lx); Image at +%lx, dtb %ld bytes at "
        "+%lx, initramfs %lu bytes at +%lx\n",
        (unsigned long)(l->guest_size >> 20), (unsigned long)l->guest_ipa,
        (unsigned long)l->guest_pa, (unsigned long)text_offset, n, (unsigned long)dtb_off,
        (unsigned long)l->initrd_size, (unsigned long)initrd_off);
    return l->guest_ipa + text_offset;
}

static void map_devices(void)
{
    struct {
        uint64_t at, size;
        const char *name;
    } d[] = {
        {devs.uart, 0x1000, "UART (PL011)"},
        {devs.rtc, 0x1000, "RTC (PL031)"},
        {devs.gicd, devs.gicd_size, "GICv3 distributor"},
        {devs.gicr, devs.gicr_size, "GICv3 redistributors"},
    };
    for (unsigned i = 0; i < HYP_ARRAY_SIZE(d); i++) {
        if (!d[i].at)
            continue;
        int rc = gmm_map_device(&hyp_gmm, d[i].at, d[i].at, d[i].size);
        if (rc) {
            hyp_printf("hyp: error: stage 2: mapping %s at %lx failed (%d)\n", d[i].name,
                       (unsigned long)d[i].at, rc);
            hyp_arch_power_off();
        }
    }
    hyp_printf("hyp: passed through: UART %lx, RTC %lx, GICD %lx, GICR %lx+%lx\n",
               (unsigned long)devs.uart, (unsigned long)devs.rtc,
               (unsigned long)devs.gicd, (unsigned long)devs.gicr,
               (unsigned long)devs.gicr_size);
}

/*
 * Scrub guest RAM before anything of the guest's goes in. mmport's policy
 * picks a kernel from the CPU's features; an emulated CPU's costs are not
 * a real one's (QEMU's TCG runs DC ZVA as a helper call, plain stores
 * inline), and a freestanding build has no clock for mmp_clear_calibrate,
 * so the kernels are timed here on the first 8 MiB and the fastest
 * clears the rest.
 */
static void scrub(uint8_t *ram, uint64_t size)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    const char *best = NULL;
    uint64_t best_ns = ~0ull, probe = 8u << 20, t;
    for (size_t i = 0; i < n; i++) {
        if (!k[i].available)
            continue;
        struct mmp_clear_opts opts = {.kernel = k[i].name};
        t = hyp_arch_now_ns();
        if (mmp_clear(ram, probe, &opts))
            continue;
        t = hyp_arch_now_ns() - t;
        if (t < best_ns)
            best_ns = t, best = k[i].name;
    }
    struct mmp_clear_opts opts = {.kernel = best};
    t = hyp_arch_now_ns();
    if (!best || mmp_clear(ram, size, &opts))
        fatal("mmp_clear of guest RAM failed");
    hyp_printf(
        "hyp: guest RAM scrubbed with mmp_clear (kernel %s, the fastest on 8 MiB) in "
        "%lu ms\n",
        best, (unsigned long)((hyp_arch_now_ns() - t) / 1000000));
}

static const char *cpu_name(void)
{
    uint64_t midr = read_sysreg(midr_el1);
    uint64_t part = (midr >> 4) & 0xfff, impl = midr >> 24;
    return impl == 0x41 && part == 0xd07 ? "cortex-a57"
           : impl == 0 && part == 0x51   ? "max"
                                         : "other";
}

void hyp_main(void);
void hyp_main(void)
{
    const void *dtb = (const void *)(uintptr_t)QEMU_DTB;
    uint64_t t_start = hyp_arch_now_ns(); /* the counter starts at QEMU's reset */
    if (fdt_check(dtb, 1u << 20))
        fatal("no device tree at the start of RAM (QEMU virt puts one there)");
    if (fdt_nodes(dtb, scan_node, NULL))
        fatal("malformed device tree");
    if (devs.uart)
        hyp_uart = devs.uart;
    const char *method = fdt_prop_string(dtb, "psci", "method");
    if (!method || memcmp(method, "smc", 4))
        fatal("QEMU's PSCI conduit is not SMC (run with -M virt,virtualization=on)");
    if (!devs.have_gic)
        fatal("no GICv3 in the device tree (run with -M virt,gic-version=3)");
    if (!hyp_layout.ram_size || !hyp_nvcpus)
        fatal("no memory or no CPU in the device tree");

    static struct opts o;
    parse(&o, fdt_prop_string(dtb, "chosen", "bootargs"));
    layout(&o);
    uint64_t hafdbs = (read_sysreg(id_aa64mmfr1_el1) >> 0) & 0xf;
    int track_hw = o.track < 0 ? hafdbs >= 2 : o.track;
    if (track_hw && hafdbs < 2)
        hyp_printf(
            "hyp: note: hyp.track=hw on a CPU without FEAT_HAFDBS: the faults do it\n");

    int rc = hyp_el2_mmu_init();
    if (rc) {
        hyp_printf("hyp: error: EL2 table: %d\n", rc);
        hyp_arch_power_off();
    }
    hyp_el2_mmu_on();

    hyp_run.arch = "arm64";
    hyp_run.cpu_model = cpu_name();
    hyp_run.mode = o.blocks ? "blocks" : "pages";
    hyp_run.vcpus = hyp_nvcpus;
    const struct hyp_layout *l = &hyp_layout;
    uint64_t parange = read_sysreg(id_aa64mmfr0_el1) & 0xf;
    struct mmp_pt_config s2 = {
        .format = MMP_PT_ARM64_S2,
        .granule = o.granule,
        .va_bits = 40,
        .pa_bits = parange >= 5   ? 48
                   : parange == 4 ? 44
                   : parange == 3 ? 42
                                  : 40,
        .flags = (track_hw ? MMP_PT_TRACK_HW : 0) |
                 (o.blocks ? 0 : MMP_PT_NO_BLOCKS | MMP_PT_NO_CONT),
    };
    struct gmm_config gc = {
        .ipa_base = l->guest_ipa,
        .size = l->guest_size,
        .ram = (uint8_t *)(uintptr_t)l->guest_pa,
        .ram_pa = l->guest_pa,
        .shadow = (uint8_t *)(uintptr_t)l->shadow_pa,
        .swap = (uint8_t *)(uintptr_t)l->swap_pa,
        .blocks = o.blocks,
        .fold_tracked = o.fold != 0,
        .mig_start_ns = o.mig[0] * 1000000,
        .mig_round_ns = o.mig[1] * 1000000,
        .mig_budget = (16ull << 20) / o.granule,
        .evict_start_ns = o.evict[0] * 1000000,
        .evict_round_ns = o.evict[1] * 1000000,
        .evict_batch = (unsigned)o.evict[2],
    };
    rc = gmm_init(&hyp_gmm, &gc, &s2, &hyp_s2_ops);
    if (rc) {
        hyp_printf("hyp: error: stage-2 table: %d\n", rc);
        hyp_arch_power_off();
    }
    hyp_printf(
        "hyp: %s, %u CPUs, stage 2: %uK granule, %s, %s tracking; migration %lu/%lu ms, "
        "eviction %lu/%lu ms x %lu pages\n",
        hyp_run.cpu_model, hyp_nvcpus, o.granule / 1024, hyp_run.mode,
        track_hw ? "hardware (HAFDBS)" : "software", (unsigned long)o.mig[0],
        (unsigned long)o.mig[1], (unsigned long)o.evict[0], (unsigned long)o.evict[1],
        (unsigned long)o.evict[2]);
    map_devices();

    scrub(gc.ram, l->guest_size);
    uint64_t entry = load_guest(&o, dtb);

    struct vcpu *v = &hyp_vcpus[0];
    AO_store(&v->state, VCPU_ON);
    hyp_vcpu_setup(0);
    hyp_printf("hyp: entering the guest at IPA %lx (%lu ms after reset, %lu in the "
               "hypervisor)\n",
               (unsigned long)entry, (unsigned long)(hyp_arch_now_ns() / 1000000),
               (unsigned long)((hyp_arch_now_ns() - t_start) / 1000000));
    gmm_start(&hyp_gmm);
    hyp_enter_guest(entry, l->dtb_ipa,
                    (uint64_t)(uintptr_t)(hyp_stacks + HYP_STACK_SIZE));
}

/* A CPU the guest started with PSCI CPU_ON (psci.c), coming from start.S. */
void hyp_secondary_main(uint64_t cpu);
void hyp_secondary_main(uint64_t cpu)
{
    hyp_el2_mmu_on();
    struct vcpu *v = &hyp_vcpus[cpu];
    hyp_vcpu_setup((unsigned)cpu);
    AO_store_release(&v->state, VCPU_ON);
    hyp_enter_guest(v->entry, v->context,
                    (uint64_t)(uintptr_t)(hyp_stacks + (cpu + 1) * HYP_STACK_SIZE));
}
