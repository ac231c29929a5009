/* SPDX-License-Identifier: MIT */
/*
 * Loading an unmodified Linux bzImage with the 64-bit boot protocol
 * (Linux Documentation/arch/x86/boot.rst, "64-bit Boot Protocol"; the
 * offsets below are the setup header's and struct boot_params' there):
 *
 * - the file is the real-mode setup ((setup_sects + 1) * 512 bytes, whose
 *   bytes 0x1f1.. are the setup header) followed by the protected-mode
 *   kernel, which is loaded at an address aligned to kernel_alignment;
 *   the 64-bit entry point is that address + 0x200 (xloadflags bit 0);
 * - boot_params (the "zero page") holds a copy of the setup header with
 *   what the loader fills in: type_of_loader, cmd_line_ptr, ramdisk_image
 *   and size (their high halves in ext_*), the e820 map and the ACPI RSDP
 *   address; everything else zero;
 * - the CPU enters in 64-bit mode with paging on an identity map that
 *   covers the kernel (init_size from its load address), boot_params and
 *   the command line, a GDT with __BOOT_CS = 0x10 and __BOOT_DS = 0x18
 *   loaded, interrupts off and RSI = boot_params.
 *
 * The identity map is an mmport table too (MMP_PT_X86_64, 4-level) over
 * the first 4 GiB, built in guest RAM, where the guest walks it through
 * the nested table like any of its pages; the kernel replaces it early.
 * Its pages are the guest's from then on: the table is never finished
 * (mmp_pt_fini would walk memory the guest has reused).
 */
#include "linux.h"

#include <mmport/mmport.h>

/* Fixed places in guest low RAM (Linux reserves the first 1 MiB for
 * itself and never gives it to its page allocator). */
#define BOOT_PARAMS 0x7000ull
#define CMDLINE 0x8000ull
#define CMDLINE_MAX 0x800ull
#define GDT 0x9000ull
#define PT_POOL 0xa000ull
#define PT_POOL_PAGES 8
#define STACK_TOP 0x7000ull

/* Setup header (offsets in the file and in boot_params alike). */
#define H_SETUP_SECTS 0x1f1
#define H_SYSSIZE 0x1f4
#define H_BOOT_FLAG 0x1fe
#define H_JUMP 0x200
#define H_HEADER 0x202
#define H_VERSION 0x206
#define H_TYPE_OF_LOADER 0x210
#define H_LOADFLAGS 0x211
#define H_RAMDISK_IMAGE 0x218
#define H_RAMDISK_SIZE 0x21c
#define H_CMD_LINE_PTR 0x228
#define H_INITRD_ADDR_MAX 0x22c
#define H_KERNEL_ALIGNMENT 0x230
#define H_RELOCATABLE 0x234
#define H_XLOADFLAGS 0x236
#define H_CMDLINE_SIZE 0x238
#define H_PREF_ADDRESS 0x258
#define H_INIT_SIZE 0x260
/* boot_params outside the header. */
#define BP_ACPI_RSDP 0x070
#define BP_EXT_RAMDISK_IMAGE 0x0c0
#define BP_EXT_RAMDISK_SIZE 0x0c4
#define BP_EXT_CMD_LINE_PTR 0x0c8
#define BP_E820_ENTRIES 0x1e8
#define BP_E820_TABLE 0x2d0
#define BP_E820_MAX 128

#define XLF_KERNEL_64 1u
#define LOADED_HIGH 1u

static uint8_t rd8(const uint8_t *p, unsigned off)
{
    return p[off];
}
static uint16_t rd16(const uint8_t *p, unsigned off)
{
    return (uint16_t)(p[off] | p[off + 1] << 8);
}
static uint32_t rd32(const uint8_t *p, unsigned off)
{
    return (uint32_t)rd16(p, off) | (uint32_t)rd16(p, off + 2) << 16;
}
static uint64_t rd64(const uint8_t *p, unsigned off)
{
    return (uint64_t)rd32(p, off) | (uint64_t)rd32(p, off + 4) << 32;
}
static void wr32(uint8_t *p, unsigned off, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[off + i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, unsigned off, uint64_t v)
{
    wr32(p, off, (uint32_t)v);
    wr32(p, off + 4, (uint32_t)(v >> 32));
}

/* ---- the guest's identity map: pages from a pool in guest low RAM ---- */

static unsigned pool_next;

static void *pool_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    if (bytes != HV_PAGE || pool_next == PT_POOL_PAGES)
        return NULL;
    *pa = PT_POOL + HV_PAGE * pool_next++;
    return (void *)(uintptr_t)*pa;
}

static void pool_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)va, (void)pa, (void)bytes; /* the pool is the guest's RAM */
}

static const struct mmp_pt_ops pool_ops = {.alloc_table = pool_alloc,
                                           .free_table = pool_free};
static struct mmp_pt guest_s1;

static int identity_map(uint64_t *root, char *err, size_t errcap)
{
    uint32_t r[4];
    cpuid(0x80000001, 0, r);
    struct mmp_pt_config cfg = {
        .format = MMP_PT_X86_64,
        .granule = 4096,
        .va_bits = 48,
        .max_leaf =
            (r[3] & (1u << 26)) ? 0 : HV_2M, /* 1 GiB pages where the CPU has them */
    };
    int rc = mmp_pt_init(&guest_s1, &cfg, &pool_ops);
    if (!rc)
        rc = mmp_pt_map(&guest_s1, 0, 0, 4ull << 30,
                        MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC, 0);
    if (rc) {
        hv_snprintf(err, errcap, "the guest's identity map: mmport error %d", rc);
        return -1;
    }
    *root = mmp_pt_root(&guest_s1);
    return 0;
}

/* ---- the loader ---- */

#define FAIL(...)                                                                        \
    do {                                                                                 \
        hv_snprintf(err, errcap, __VA_ARGS__);                                           \
        return -1;                                                                       \
    } while (0)

int linux_load(struct linux_boot *b, struct vcpu_entry *e, char *err, size_t errcap)
{
    const uint8_t *k = b->kernel;
    if (b->kernel_size < 0x1000 || rd16(k, H_BOOT_FLAG) != 0xaa55 ||
        rd32(k, H_HEADER) != 0x53726448u /* "HdrS" */)
        FAIL("the kernel module is no bzImage (%lu bytes, no boot flag 0xaa55 / header "
             "\"HdrS\")",
             b->kernel_size);
    uint16_t version = rd16(k, H_VERSION);
    b->version = version;
    if (version < 0x20c)
        FAIL("boot protocol %x.%02x: the 64-bit entry needs 2.12 or later", version >> 8,
             version & 0xff);
    if (!(rd16(k, H_XLOADFLAGS) & XLF_KERNEL_64))
        FAIL("the kernel has no 64-bit entry point (xloadflags bit 0 clear)");
    unsigned sects = rd8(k, H_SETUP_SECTS) ? rd8(k, H_SETUP_SECTS) : 4;
    uint64_t setup = (uint64_t)(sects + 1) * 512;
    uint32_t align = rd32(k, H_KERNEL_ALIGNMENT);
    uint64_t init_size = rd32(k, H_INIT_SIZE);
    uint64_t pm_size = b->kernel_size - setup;
    if (setup >= b->kernel_size || align < HV_PAGE || (align & (align - 1)) ||
        init_size < pm_size)
        FAIL("corrupt setup header: %u setup sectors, kernel_alignment %x, init_size %lx "
             "for "
             "a %lu-byte file",
             sects, align, init_size, b->kernel_size);
    if (pm_size < (uint64_t)rd32(k, H_SYSSIZE) * 16)
        FAIL("the kernel file is truncated: %lu bytes after the setup, its header says "
             "%lu",
             pm_size, (uint64_t)rd32(k, H_SYSSIZE) * 16);
    if (!rd8(k, H_RELOCATABLE))
        FAIL("the kernel is not relocatable (this loader places it in its RAM window)");
    uint64_t cmdline_max = rd32(k, H_CMDLINE_SIZE) + 1;
    uint64_t len = hv_strlen(b->cmdline) + 1;
    if (len > cmdline_max || len > CMDLINE_MAX)
        FAIL("command line of %lu bytes; the kernel takes %lu", len, cmdline_max);

    /* The kernel at or above its preferred address (where it runs without
     * moving itself), the initrd at the top of guest RAM. */
    uint64_t pref = rd64(k, H_PREF_ADDRESS);
    uint64_t load = HV_ALIGN_UP(b->ram_base > pref ? b->ram_base : pref, align);
    uint64_t initrd = (b->ram_end - b->initrd_size) & ~(HV_PAGE - 1);
    uint64_t initrd_max = rd32(k, H_INITRD_ADDR_MAX);
    if (load + init_size > initrd || b->initrd_size > b->ram_end - b->ram_base)
        FAIL("guest RAM [%lx, %lx) cannot hold the kernel (%lx bytes from %lx) and the "
             "initrd (%lu bytes)",
             b->ram_base, b->ram_end, init_size, load, b->initrd_size);
    if (initrd + b->initrd_size - 1 > initrd_max && !(rd16(k, H_XLOADFLAGS) & 2))
        FAIL("the initrd would end above initrd_addr_max %lx", initrd_max);
    if (STACK_TOP > b->low_end || PT_POOL + PT_POOL_PAGES * HV_PAGE > b->low_end)
        FAIL("guest low RAM ends at %lx", b->low_end);
    hv_copy((void *)(uintptr_t)load, k + setup, pm_size);
    hv_copy((void *)(uintptr_t)initrd, b->initrd, b->initrd_size);
    b->load_addr = load;
    b->init_size = init_size;
    b->initrd_addr = initrd;

    /* boot_params: the header copied from the file (0x1f1 up to the end
     * the jump at 0x200 gives), then the loader's fields. */
    uint8_t *bp = (uint8_t *)(uintptr_t)BOOT_PARAMS;
    memset(bp, 0, HV_PAGE);
    unsigned hdr_end = H_JUMP + 2 + rd8(k, H_JUMP + 1);
    memcpy(bp + H_SETUP_SECTS, k + H_SETUP_SECTS, hdr_end - H_SETUP_SECTS);
    bp[H_TYPE_OF_LOADER] = 0xff; /* no registered loader id */
    bp[H_LOADFLAGS] |= LOADED_HIGH;
    wr32(bp, H_RAMDISK_IMAGE, (uint32_t)initrd);
    wr32(bp, BP_EXT_RAMDISK_IMAGE, (uint32_t)(initrd >> 32));
    wr32(bp, H_RAMDISK_SIZE, (uint32_t)b->initrd_size);
    wr32(bp, BP_EXT_RAMDISK_SIZE, (uint32_t)(b->initrd_size >> 32));
    memcpy((void *)(uintptr_t)CMDLINE, b->cmdline, len);
    wr32(bp, H_CMD_LINE_PTR, (uint32_t)CMDLINE);
    wr32(bp, BP_EXT_CMD_LINE_PTR, 0);
    wr64(bp, BP_ACPI_RSDP, b->rsdp);
    if (b->e820_n > BP_E820_MAX)
        FAIL("%u e820 entries; boot_params holds %u", b->e820_n, BP_E820_MAX);
    bp[BP_E820_ENTRIES] = (uint8_t)b->e820_n;
    memcpy(bp + BP_E820_TABLE, b->e820, b->e820_n * sizeof(struct e820_entry));

    /* GDT: null, unused, __BOOT_CS (64-bit code), __BOOT_DS (flat data). */
    uint64_t *gdt = (uint64_t *)(uintptr_t)GDT;
    gdt[0] = 0;
    gdt[1] = 0;
    gdt[2] = 0x00af9a000000ffffull;
    gdt[3] = 0x00cf92000000ffffull;

    uint64_t root;
    if (identity_map(&root, err, errcap))
        return -1;
    *e = (struct vcpu_entry){
        .rip = load + 0x200,
        .rsp = STACK_TOP,
        .rsi = BOOT_PARAMS,
        .cr3 = root,
        .gdt_base = GDT,
        .gdt_limit = 4 * 8 - 1,
        .cs = 0x10,
        .ds = 0x18,
    };
    return 0;
}
