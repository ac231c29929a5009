/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 reference hypervisor, start to end (docs/hypervisor.md, "x86-64"):
 *
 *  1. multiboot: the hypervisor's command line, two modules (the guest's
 *     bzImage and initramfs) and the machine's memory map;
 *  2. the plan of host memory: guest RAM = the low 636 KiB plus a window
 *     above everything the loader placed, then the migration shadow, the
 *     swap area and the page-state arrays;
 *  3. CPU 1 started (it waits for the guest);
 *  4. guest RAM scrubbed with mmp_clear, the nested table created, devices
 *     and firmware passed through, the kernel loaded;
 *  5. dirty tracking started, CPU 1 told to go, the guest run on CPU 0
 *     until it powers off;
 *  6. the final migration round and the byte-for-byte compare, teardown,
 *     the summary line and its JSON twin, and QEMU's exit status.
 */
#include "acpi.h"
#include "gm.h"
#include "linux.h"
#include "mm.h"
#include "svm.h"

#define MB_BOOT_MAGIC 0x2BADB002u
#define MB_INFO_CMDLINE (1u << 2)
#define MB_INFO_MODS (1u << 3)
#define MB_INFO_MMAP (1u << 6)

/* The guest's deadlines (run.sh's own limit is 180 s). */
#define INIT_DEADLINE_US 120000000ull
#define RUN_DEADLINE_US 170000000ull

#define LAPIC_PA 0xfee00000ull
#define IOAPIC_PA 0xfec00000ull
#define HPET_PA 0xfed00000ull

/* Exit codes (QEMU reports (code << 1) | 1): run.sh knows them. */
enum { EXIT_OK = 0, EXIT_GUEST_FAIL = 1, EXIT_SETUP = 2, EXIT_BAD_KERNEL = 4 };

struct opts {
    uint64_t mem_mib;
    int fault_2m, mig, evict, fold, evict_young;
    const char *guest_args;
};

static char hv_cmdline[1024], guest_cmdline[1024];
static struct mb_mmap host_map[64];
static unsigned host_map_n;
static struct mb_module mods[2];
static unsigned nmods;
static struct e820_entry guest_e820[64];
static unsigned guest_e820_n;

__attribute__((noreturn)) static void die(int code, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    hv_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    hv_printf("hyp: FAIL: %s\n", buf);
    hv_exit(code);
}

/* ---- multiboot ---- */

static void copy_str(char *dst, size_t cap, uint32_t pa)
{
    const char *s = (const char *)(uintptr_t)pa;
    size_t i = 0;
    for (; pa && s[i] && i + 1 < cap; i++)
        dst[i] = s[i];
    dst[i] = 0;
}

/* Everything the loader left is copied out first: guest low RAM, where
 * some of it may be, is scrubbed later. Returns the end of the highest
 * thing the loader put above 1 MiB. */
static uint64_t read_multiboot(void)
{
    if (hv_mb_magic != MB_BOOT_MAGIC)
        die(EXIT_SETUP, "not started by a multiboot loader (EAX %x)", hv_mb_magic);
    const struct mb_info *mb = (const struct mb_info *)(uintptr_t)hv_mb_info;
    uint64_t end = (uint64_t)(uintptr_t)__image_end;
#define SEEN(a, n)                                                                       \
    (end = ((uint64_t)(a) + (n) > end && (uint64_t)(a) >= (1u << 20))                    \
               ? (uint64_t)(a) + (n)                                                     \
               : end)
    SEEN(hv_mb_info, sizeof *mb);
    if (mb->flags & MB_INFO_CMDLINE) {
        copy_str(hv_cmdline, sizeof hv_cmdline, mb->cmdline);
        SEEN(mb->cmdline, hv_strlen(hv_cmdline) + 1);
    }
    if (!(mb->flags & MB_INFO_MMAP))
        die(EXIT_SETUP, "the loader gave no memory map");
    SEEN(mb->mmap_addr, mb->mmap_length);
    for (uint32_t off = 0;
         off < mb->mmap_length && host_map_n < HV_ARRAY_SIZE(host_map);) {
        const struct mb_mmap *m =
            (const struct mb_mmap *)(uintptr_t)(mb->mmap_addr + off);
        host_map[host_map_n++] = *m;
        off += m->size + 4;
    }
    if (mb->flags & MB_INFO_MODS) {
        const struct mb_module *m = (const struct mb_module *)(uintptr_t)mb->mods_addr;
        SEEN(mb->mods_addr, mb->mods_count * sizeof *m);
        for (uint32_t i = 0; i < mb->mods_count; i++) {
            if (i < 2)
                mods[i] = m[i];
            SEEN(m[i].start, m[i].end - m[i].start);
            if (m[i].string) {
                char tmp[256];
                copy_str(tmp, sizeof tmp, m[i].string);
                SEEN(m[i].string, hv_strlen(tmp) + 1);
            }
        }
        nmods = mb->mods_count;
    }
#undef SEEN
    return end;
}

/* key=value words of the hypervisor's command line; "--" starts the
 * guest's extra arguments. */
static void parse_opts(struct opts *o)
{
    *o = (struct opts){
        .mem_mib = 256, .fault_2m = 1, .mig = 1, .evict = 1, .guest_args = ""};
    char *s = hv_cmdline;
    while (*s) {
        while (*s == ' ')
            s++;
        char *w = s;
        while (*s && *s != ' ')
            s++;
        if (*s)
            *s++ = 0;
        if (!hv_strlen(w))
            continue;
        if (!memcmp(w, "--", 3)) {
            o->guest_args = s;
            break;
        }
        uint64_t v = 0;
        const char *eq = w;
        while (*eq && *eq != '=')
            eq++;
        if (*eq)
            for (const char *d = eq + 1; *d >= '0' && *d <= '9'; d++)
                v = v * 10 + (uint64_t)(*d - '0');
        if (!memcmp(w, "mem=", 4))
            o->mem_mib = v;
        else if (!memcmp(w, "fault=4k", 9))
            o->fault_2m = 0;
        else if (!memcmp(w, "fault=2m", 9))
            o->fault_2m = 1;
        else if (!memcmp(w, "mig=", 4))
            o->mig = v != 0;
        else if (!memcmp(w, "evict=", 6))
            o->evict = v != 0;
        else if (!memcmp(w, "victims=any", 12))
            o->evict_young = 1;
        else if (!memcmp(w, "victims=cold", 13))
            o->evict_young = 0;
        else if (!memcmp(w, "fold=", 5))
            o->fold = v != 0;
        else if (*eq)
            die(EXIT_SETUP,
                "unknown option %s (mem=MiB fault=4k|2m mig=0|1 evict=0|1 fold=0|1 "
                "victims=cold|any -- guest args)",
                w);
        /* a word without '=' is the loader's name for the image */
    }
    if (o->mem_mib < 64 || o->mem_mib > 2048)
        die(EXIT_SETUP, "mem=%lu: guest RAM between 64 and 2048 MiB", o->mem_mib);
}

/* ---- host memory plan ---- */

static int host_usable(uint64_t a, uint64_t b)
{
    for (unsigned i = 0; i < host_map_n; i++)
        if (host_map[i].type == 1 && a >= host_map[i].addr &&
            b <= host_map[i].addr + host_map[i].len)
            return 1;
    return 0;
}

static uint64_t bump;
static void *carve(uint64_t bytes)
{
    void *p = (void *)(uintptr_t)bump;
    bump = HV_ALIGN_UP(bump + bytes, HV_PAGE);
    return p;
}

static void plan(const struct opts *o, uint64_t used_end, uint64_t *shadow)
{
    uint64_t low_end = 0;
    for (unsigned i = 0; i < host_map_n; i++)
        if (host_map[i].type == 1 && host_map[i].addr == 0)
            low_end = (host_map[i].len & ~(HV_PAGE - 1));
    if (low_end > 0x9f000)
        low_end = 0x9f000;
    if (low_end < 0x20000)
        die(EXIT_SETUP, "no low memory for the guest (usable RAM from 0 ends at %lx)",
            low_end);
    uint64_t base = HV_ALIGN_UP(used_end, HV_2M);
    uint64_t size = o->mem_mib << 20;
    gm.ram[0] = (struct gm_range){0, low_end, 0};
    gm.ram[1] = (struct gm_range){base, size, HV_ALIGN_UP(low_end / HV_PAGE, 512)};
    gm.nram = 2;
    gm.npages = gm.ram[1].first + size / HV_PAGE;
    gm.bitmap_words = (gm.npages + 63) / 64;
    gm.swap_slots = 8192; /* 32 MiB */
    bump = base + size;
    *shadow = (uint64_t)(uintptr_t)carve(gm.npages * HV_PAGE);
    gm.swap = carve((uint64_t)gm.swap_slots * HV_PAGE);
    uint64_t meta = bump; /* the page-state arrays start zeroed */
    gm.resident = carve(gm.bitmap_words * 8);
    gm.evicted = carve(gm.bitmap_words * 8);
    gm.mig_dirty = carve(gm.bitmap_words * 8);
    gm.swap_slot = carve(gm.npages * 4);
    gm.swap_free = carve(gm.swap_slots * 4);
    if (!host_usable(base, bump) || bump > (4ull << 30))
        die(EXIT_SETUP,
            "host RAM too small: guest RAM, shadow and swap need [%lx, %lx) "
            "(give QEMU more -m or the guest less mem=)",
            base, bump);
    memset((void *)(uintptr_t)meta, 0, bump - meta);
    for (uint32_t i = 0; i < gm.swap_slots; i++)
        gm.swap_free[i] = gm.swap_slots - 1 - i;
}

/* ---- the guest's physical map ---- */

static void add_e820(uint64_t addr, uint64_t size, uint32_t type)
{
    if (guest_e820_n == HV_ARRAY_SIZE(guest_e820))
        die(EXIT_SETUP, "too many memory map entries");
    unsigned i = guest_e820_n++;
    while (i && guest_e820[i - 1].addr > addr) {
        guest_e820[i] = guest_e820[i - 1];
        i--;
    }
    guest_e820[i] = (struct e820_entry){addr, size, type};
}

/* Guest e820: its two RAM ranges and the firmware's non-RAM entries as
 * they are. Passed through, mapped now: the firmware areas below 1 MiB
 * and those entries below 4 GiB (ACPI tables, BIOS), the VGA window, and
 * the interrupt controllers' and HPET's registers. */
static void guest_map(void)
{
    add_e820(gm.ram[0].gpa, gm.ram[0].size, 1);
    add_e820(gm.ram[1].gpa, gm.ram[1].size, 1);
    const uint32_t wb = MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_NORMAL_WB;
    const uint32_t dev = MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_DEVICE;
    int rc = gm_map_device(gm.ram[0].size, 0xa0000 - gm.ram[0].size, wb, "EBDA");
    rc = rc ? rc : gm_map_device(0xa0000, 0x20000, dev, "VGA");
    rc = rc ? rc : gm_map_device(0xc0000, 0x40000, wb, "option ROMs and BIOS");
    rc = rc ? rc : gm_map_device(LAPIC_PA, HV_PAGE, dev, "local APIC");
    rc = rc ? rc : gm_map_device(IOAPIC_PA, HV_PAGE, dev, "I/O APIC");
    rc = rc ? rc : gm_map_device(HPET_PA, HV_PAGE, dev, "HPET");
    for (unsigned i = 0; !rc && i < host_map_n; i++) {
        const struct mb_mmap *m = &host_map[i];
        if (m->type == 1)
            continue;
        add_e820(m->addr, m->len, m->type);
        uint64_t a = m->addr & ~(HV_PAGE - 1), b = HV_ALIGN_UP(m->addr + m->len, HV_PAGE);
        if (a >= (1u << 20) && b <= (4ull << 30) && !gm_device(a))
            rc = gm_map_device(a, b - a, wb, "firmware");
    }
    if (rc)
        die(EXIT_SETUP, "passing devices through: mmport error %d", rc);
}

/* ---- the run ---- */

static const char *const stop_names[] = {"poweroff",     "reset",          "bad-gpa",
                                         "triple-fault", "unhandled-exit", "timeout"};

void hv_main(void);
void hv_main(void)
{
    hv_idt_init();
    unsigned mhz = hv_tsc_calibrate();
    uint64_t used_end = read_multiboot();
    struct opts o;
    parse_opts(&o);
    hv_printf(
        "hyp: mmport reference hypervisor (x86-64, SVM + NPT), TSC %u MHz, guest RAM "
        "%lu MiB, faults %s%s, migration %s, eviction %s\n",
        mhz, o.mem_mib, o.fault_2m ? "2M" : "4K", o.fold ? " (4K maps may fold)" : "",
        o.mig ? "on" : "off",
        !o.evict        ? "off"
        : o.evict_young ? "on (any page)"
                        : "on (cold pages)");
    if (nmods < 2)
        die(EXIT_BAD_KERNEL,
            "%u multiboot modules: give the kernel (bzImage) and the "
            "initramfs (QEMU -initrd \"bzImage,initrd\")",
            nmods);
    uint64_t shadow;
    plan(&o, used_end, &shadow);

    const char *why;
    if (hv_start_cpu1(mm_cpu1, &why))
        die(EXIT_SETUP, "CPU 1: %s", why);

    /* Scrub guest RAM before anything of the guest goes in. mmp_clear
     * takes no NULL pointer, and physical page 0 is guest RAM here: that
     * page is cleared by hand. */
    uint64_t t0 = rdtsc();
    for (unsigned i = 0; i < gm.nram; i++) {
        uint64_t a = gm.ram[i].gpa, n = gm.ram[i].size;
        if (!a) {
            memset((void *)(uintptr_t)a, 0, HV_PAGE);
            a += HV_PAGE, n -= HV_PAGE;
        }
        int rc = mmp_clear((void *)(uintptr_t)a, n, NULL);
        if (rc)
            die(EXIT_SETUP, "mmp_clear of guest RAM [%lx, %lx): %d", a, a + n, rc);
    }
    uint64_t scrub_tsc = rdtsc() - t0;
    gm.st.mmp_tsc[0] += scrub_tsc;

    int rc = gm_init(o.fault_2m, o.fold);
    if (rc)
        die(EXIT_SETUP, "the nested table: mmp_pt_init %d", rc);
    guest_map();

    uint64_t rsdp = acpi_find_rsdp();
    uint16_t pm1a = acpi_pm1a_cnt(rsdp);
    if (!pm1a)
        die(EXIT_SETUP,
            "no ACPI FADT with a PM1a control port (the guest could not power off)");
    hv_snprintf(guest_cmdline, sizeof guest_cmdline,
                "console=ttyS0 nr_cpus=1 panic=-1 %s", o.guest_args);
    struct linux_boot lb = {
        .kernel = (const uint8_t *)(uintptr_t)mods[0].start,
        .kernel_size = mods[0].end - mods[0].start,
        .initrd = (const uint8_t *)(uintptr_t)mods[1].start,
        .initrd_size = mods[1].end - mods[1].start,
        .cmdline = guest_cmdline,
        .e820 = guest_e820,
        .e820_n = guest_e820_n,
        .rsdp = rsdp,
        .low_end = gm.ram[0].size,
        .ram_base = gm.ram[1].gpa,
        .ram_end = gm.ram[1].gpa + gm.ram[1].size,
    };
    struct vcpu_entry entry;
    char err[256];
    if (linux_load(&lb, &entry, err, sizeof err))
        die(EXIT_BAD_KERNEL, "%s", err);
    hv_printf(
        "hyp: guest RAM [0, %lx) + [%lx, %lx), kernel (boot protocol %x.%02x) at %lx, "
        "initrd %lu KiB at %lx, RSDP %lx, PM1a_CNT %x, scrub %lu ms\n",
        gm.ram[0].size, gm.ram[1].gpa, gm.ram[1].gpa + gm.ram[1].size, lb.version >> 8,
        lb.version & 0xff, lb.load_addr, lb.initrd_size >> 10, lb.initrd_addr, rsdp, pm1a,
        hv_tsc_to_us(scrub_tsc) / 1000);
    hv_printf("hyp: guest command line: %s\n", guest_cmdline);

    if (vcpu_init(&entry, mmp_pt_root(&gm.npt), pm1a, &why))
        die(EXIT_SETUP, "SVM: %s", why);
    struct mm_opts mo = {
        .mig = o.mig, .evict = o.evict, .evict_young = o.evict_young, .shadow = shadow};
    if (mm_start(&mo))
        die(EXIT_SETUP, "starting the memory manager's passes");

    enum vcpu_stop stop = vcpu_run(INIT_DEADLINE_US, RUN_DEADLINE_US);

    hv_printf("\nhyp: guest stopped: %s (exit %lx, info %lx / %lx, RIP %lx)\n",
              stop_names[stop], vcpu_st.code, vcpu_st.info1, vcpu_st.info2, vcpu_st.rip);
    if (stop == STOP_TIMEOUT)
        hv_printf("hyp: the guest %s within %lu s: stopped\n",
                  vcpu_st.t_doorbell[DOORBELL_INIT] ? "did not power off"
                                                    : "did not reach init",
                  (uint64_t)(vcpu_st.t_doorbell[DOORBELL_INIT] ? RUN_DEADLINE_US
                                                               : INIT_DEADLINE_US) /
                      1000000);
    if (stop == STOP_BAD_GPA)
        hv_printf(
            "hyp: the guest accessed guest-physical %lx, which is neither RAM nor a "
            "device: stopped\n",
            vcpu_st.info2);
    struct mm_result mr;
    mm_finish(&mr);
    uint64_t leaked = gm_fini();
    mm_report(stop == STOP_POWEROFF, stop_names[stop], &mr, leaked, scrub_tsc);
    /* The OK line on the console is the runner's to check (an initramfs
     * may not ring the OK doorbell); a FAIL doorbell is a failure here. */
    int ok = stop == STOP_POWEROFF && !vcpu_st.t_doorbell[DOORBELL_FAIL] && mr.compare_ok &&
             !leaked;
    hv_exit(ok ? EXIT_OK : EXIT_GUEST_FAIL);
}
