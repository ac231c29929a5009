/* SPDX-License-Identifier: MIT */
/* mmport ptdump: build a table from --map arguments and dump it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "cli.h"
#include "pt_formats.h"

/* "rwxug" letters (X: user-mode execute, x86-ept-mbec) and a memory type
 * word: rw, rx,device, rwx,nc ... */
static bool parse_attrs(const char *s, uint32_t *out)
{
    uint32_t a = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "wb") == 0 || strcmp(tok, "normal") == 0)
            a |= MMP_MEM_NORMAL_WB;
        else if (strcmp(tok, "nc") == 0)
            a |= MMP_MEM_NORMAL_NC;
        else if (strcmp(tok, "device") == 0 || strcmp(tok, "dev") == 0)
            a |= MMP_MEM_DEVICE;
        else if (strcmp(tok, "wc") == 0) /* wc, wt, wp: x86-ept only */
            a |= MMP_MEM_WC;
        else if (strcmp(tok, "wt") == 0)
            a |= MMP_MEM_WT;
        else if (strcmp(tok, "wp") == 0)
            a |= MMP_MEM_WP;
        else
            for (const char *c = tok; *c; c++) {
                switch (*c) {
                case 'r': a |= MMP_PROT_READ; break;
                case 'w': a |= MMP_PROT_WRITE; break;
                case 'x': a |= MMP_PROT_EXEC; break;
                case 'u': a |= MMP_PROT_USER; break;
                case 'X': a |= MMP_PROT_UEXEC; break; /* x86-ept-mbec */
                case 'g': a |= MMP_PROT_GLOBAL; break;
                default: return false;
                }
            }
    }
    *out = a;
    return true;
}

/* arg: non-NULL for all but the last dumped range, whose totals line (of
 * the whole table) is the only one printed. */
static int print_line(void *arg, const char *line)
{
    if (!arg || strncmp(line, "total:", 6) != 0)
        puts(line);
    return 0;
}

/* ---- --json: regions of leaves, as the text dump groups them ---- */

struct jregion {
    struct mmp_pt_leaf first;
    uint64_t size;
    unsigned n;
    bool open;
};

static const char *kind_word(unsigned k)
{
    return k == MMP_LEAF_BLOCK ? "block" : k == MMP_LEAF_CONT ? "cont" : "page";
}

static const char *mem_word(uint32_t a)
{
    switch (a & MMP_MEM_MASK) {
    case MMP_MEM_NORMAL_WB: return "normal-wb";
    case MMP_MEM_NORMAL_NC: return "normal-nc";
    case MMP_MEM_DEVICE: return "device";
    case MMP_MEM_WC: return "wc";
    case MMP_MEM_WT: return "wt";
    case MMP_MEM_WP: return "wp";
    default: return "other";
    }
}

static void jregion_emit(struct jregion *r, bool *first)
{
    if (!r->open)
        return;
    const struct mmp_pt_leaf *l = &r->first;
    uint32_t a = l->attrs;
    printf("%s\n    {\"va\": ", *first ? "" : ",");
    cli_json_hex(stdout, l->va);
    printf(", \"pa\": ");
    cli_json_hex(stdout, l->pa);
    printf(", \"size\": %" PRIu64 ", \"kind\": \"%s\", \"leaf_size\": %" PRIu64
           ", \"level\": %u, \"leaves\": %u, \"prot\": \"%c%c%c%c%c\", \"mem\": \"%s\"}",
           r->size, kind_word(l->kind), l->size, l->level, r->n,
           a & MMP_PROT_READ ? 'r' : '-', a & MMP_PROT_WRITE ? 'w' : '-',
           a & MMP_PROT_EXEC ? 'x' : '-',
           a & MMP_PROT_UEXEC ? 'X' : a & MMP_PROT_USER ? 'u' : '-',
           a & MMP_PROT_GLOBAL ? 'g' : '-', mem_word(a));
    *first = false;
    r->open = false;
}

struct jwalk {
    struct jregion r;
    bool first;
};

static int json_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct jwalk *w = arg;
    struct jregion *r = &w->r;
    if (r->open && l->va == r->first.va + r->size && l->pa == r->first.pa + r->size &&
        l->attrs == r->first.attrs && l->kind == r->first.kind && l->size == r->first.size &&
        l->level == r->first.level) {
        r->size += l->size;
        r->n++;
        return 0;
    }
    jregion_emit(r, &w->first);
    *r = (struct jregion){*l, l->size, 1, true};
    return 0;
}

/* ---- --image: a table inside a raw memory image ---- */

struct image {
    const unsigned char *base; /* the file, mapped */
    uint64_t pa, len;          /* physical range it holds */
    unsigned char *root;       /* private copy of the root (init zeroes it) */
    uint64_t root_pa;
    size_t root_bytes;
    unsigned outside;          /* distinct table pointers outside the image */
    uint64_t seen[64];         /* the first of them (walks visit them repeatedly) */
    const void *zero;          /* what those read as: an empty table */
};

static void *img_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct image *im = ctx;
    if (im->root || !(im->root = aligned_alloc(bytes < 4096 ? 4096 : bytes, bytes)))
        return NULL; /* only the root is ever allocated: the table is read-only */
    im->root_bytes = bytes;
    *pa = im->root_pa;
    return im->root;
}

static void img_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)va, (void)pa, (void)bytes;
}

static void *img_p2v(void *ctx, uint64_t pa)
{
    struct image *im = ctx;
    if (pa < im->pa || pa - im->pa >= im->len || im->len - (pa - im->pa) < 4096) {
        unsigned i = 0;
        while (i < im->outside && i < 64 && im->seen[i] != pa)
            i++;
        if (i == im->outside) {
            if (i < 64)
                im->seen[i] = pa;
            im->outside++;
        }
        return (void *)im->zero;
    }
    return (void *)(im->base + (pa - im->pa));
}

static int open_image(struct image *im, const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) || st.st_size <= 0) {
        int e = st.st_size <= 0 ? ENODATA : errno;
        close(fd);
        return -e;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -errno;
    im->base = m;
    im->len = (uint64_t)st.st_size;
    return 0;
}

/* ---- the command ---- */

static bool parse_u64(const char *s, unsigned long long *out)
{
    return cli_parse_size(s, out);
}

static int bad_map(const char *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_map(const char *arg, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return cli_usage_error("ptdump", "--map '%s': %s", arg, why);
}

/* Parses one VA:PA:SIZE[:ATTRS] (mmp_pt_map() checks the values); 0 or exit code. */
static int parse_map(const char *arg, unsigned long long v[3], uint32_t *attrs)
{
    char spec[256];
    snprintf(spec, sizeof spec, "%s", arg);
    char *f[5] = {0};
    int n = 0;
    for (char *p = spec, *tok; n < 5 && (tok = strsep(&p, ":"));)
        f[n++] = tok;
    if (n < 3 || n > 4)
        return bad_map(arg, "want VA:PA:SIZE[:ATTRS], got %d field%s", n, n == 1 ? "" : "s");
    static const char *const what[3] = {"VA", "PA", "SIZE"};
    for (int i = 0; i < 3; i++)
        if (!parse_u64(f[i], &v[i]))
            return bad_map(arg, "%s '%s' is not a number (hex, decimal, K/M/G suffix)", what[i],
                           f[i]);
    *attrs = MMP_PROT_READ | MMP_PROT_WRITE;
    if (n == 4 && !parse_attrs(f[3], attrs))
        return bad_map(arg, "unknown attribute in '%s' (letters r w x u g; wb, nc, device)",
                       f[3]);
    return 0;
}

/* A rule the caller's arguments broke (a usage error), as opposed to a
 * failure of the table itself (memory, corruption). */
static bool usage_rule(unsigned rule)
{
    return rule != MMP_PT_RULE_NOMEM && rule != MMP_PT_RULE_CORRUPT &&
           rule != MMP_PT_RULE_CONTENDED && rule != MMP_PT_RULE_TABLE_ALIGN;
}

/* mmp_pt_map() refused --map arg: the library's reason, exit 2 for the
 * arguments' fault. */
static int map_refused(const struct mmp_pt *pt, const char *arg, int rc)
{
    struct mmp_pt_reason r;
    char why[200];
    if (mmp_pt_reason(pt, &r) || r.err != rc)
        return cli_error("ptdump", "--map '%s': %s", arg, mmp_strerror(rc));
    if (r.rule == MMP_PT_RULE_EXISTS)
        return bad_map(arg, "overlaps an earlier --map (the range is mapped already)");
    mmp_pt_reason_text(&r, why, sizeof why);
    bool mbec = r.rule == MMP_PT_RULE_EPT_EXEC_ONLY || r.rule == MMP_PT_RULE_UEXEC;
    if (usage_rule(r.rule))
        return bad_map(arg, "%s%s", why, mbec ? " (--format x86-ept-mbec allows it)" : "");
    return cli_error("ptdump", "--map '%s': %s: %s", arg, mmp_strerror(rc), why);
}

static int run(int argc, char **argv)
{
    const struct cli_pt_format *fmt = cli_pt_format("arm64-4k");
    const char *image = NULL;
    unsigned long long root = 0, base = 0;
    bool json = false, have_root = false;
    uint32_t flags = 0;
    int nmaps = 0;
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"no-blocks", no_argument, NULL, 'B'},
        {"no-cont", no_argument, NULL, 'C'},
        {"map", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"image", required_argument, NULL, 'i'},
        {"root", required_argument, NULL, 'r'},
        {"base", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char shortopts[] = ":hf:m:ji:r:b:";
    int c;
    /* First pass: everything but the maps, which need the format's granule. */
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(cli_cmd_ptdump.usage, stdout), 0;
        case 'f':
            if (!(fmt = cli_pt_format(optarg)))
                return cli_usage_error("ptdump", "--format '%s': unknown format (see --help)",
                                       optarg);
            break;
        case 'B': flags |= MMP_PT_NO_BLOCKS; break;
        case 'C': flags |= MMP_PT_NO_CONT; break;
        case 'm': nmaps++; break;
        case 'j': json = true; break;
        case 'i': image = optarg; break;
        case 'r':
        case 'b':
            if (!parse_u64(optarg, c == 'r' ? &root : &base))
                return cli_usage_error("ptdump", "--%s '%s': not an address",
                                       c == 'r' ? "root" : "base", optarg);
            have_root |= c == 'r';
            break;
        default: return cli_opt_error("ptdump", c, argv, longopts);
        }
    }
    if ((c = cli_no_operands("ptdump", argc, argv)))
        return c;
    if (!nmaps && !image)
        return cli_usage_error("ptdump", "nothing to dump: give --map VA:PA:SIZE or --image FILE");
    if (image && nmaps)
        return cli_usage_error("ptdump", "--image and --map exclude each other");
    if (image && !have_root)
        return cli_usage_error("ptdump", "--image needs --root PA (the table's physical address)");
    if (!image && (have_root || base))
        return cli_usage_error("ptdump", "--root and --base only go with --image");
    if (image && flags) /* an image's leaves are what its tables say */
        return cli_usage_error("ptdump", "--no-blocks and --no-cont only go with --map");
    struct mmp_pt_config cfg = fmt->cfg;
    cfg.flags |= flags;
    if (have_root && root % 4096)
        return cli_usage_error("ptdump", "--root 0x%llx: not aligned to 4 KiB", root);

    static unsigned char zero_table[65536] __attribute__((aligned(65536)));
    struct image im = {.pa = base, .root_pa = root, .zero = zero_table};
    struct mmp_pt_ops img_ops = {.alloc_table = img_alloc,
                                 .free_table = img_free,
                                 .phys_to_virt = img_p2v,
                                 .tlb_flush = NULL,
                                 .ctx = &im};
    struct mmp_pt *pt;
    int rc;
    if (image) {
        if ((rc = open_image(&im, image)))
            return cli_error("ptdump", "--image '%s': %s", image,
                             rc == -ENODATA ? "empty file" : strerror(-rc));
        if (root < base || root - base >= im.len)
            return cli_usage_error("ptdump",
                                   "--root 0x%llx: outside the image (0x%llx..0x%llx with --base)",
                                   root, base, base + im.len - 1);
    }
    rc = mmp_pt_create(&pt, &cfg, image ? &img_ops : NULL);
    if (rc) {
        struct mmp_pt_reason r;
        char why[200] = "";
        if (mmp_pt_config_check(&cfg, image ? &img_ops : NULL, &r) == rc)
            mmp_pt_reason_text(&r, why, sizeof why);
        return cli_error("ptdump", "cannot create the table: %s%s%s", mmp_strerror(rc),
                         *why ? ": " : "", why);
    }
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    if (image) {
        if (root - base + inf.root_bytes > im.len)
            rc = cli_usage_error("ptdump", "--root 0x%llx: the %u-byte root runs past the image",
                                 root, inf.root_bytes);
        else if (root % inf.root_bytes && inf.root_bytes <= 65536)
            rc = cli_usage_error("ptdump", "--root 0x%llx: not aligned to the %u-byte root",
                                 root, inf.root_bytes);
        else
            memcpy(im.root, im.base + (root - base), inf.root_bytes);
        if (rc) {
            mmp_pt_destroy(pt);
            return rc;
        }
    }

    /* Second pass: the maps (into a fresh table). */
    uint64_t lo = UINT64_MAX, hi = 0;
    cli_getopt_start();
    while (!image && (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c != 'm')
            continue;
        unsigned long long v[3];
        uint32_t attrs;
        if ((rc = parse_map(optarg, v, &attrs))) {
            mmp_pt_destroy(pt);
            return rc;
        }
        rc = mmp_pt_map(pt, v[0], v[1], v[2], attrs, 0);
        if (rc) {
            rc = map_refused(pt, optarg, rc);
            mmp_pt_destroy(pt);
            return rc;
        }
        lo = v[0] < lo ? v[0] : lo;
        hi = v[0] + v[2] - 1 > hi ? v[0] + v[2] - 1 : hi;
    }
    /* An image: the whole input space (both canonical halves on x86-64). */
    uint64_t ranges[2][2] = {{lo, hi - lo + 1}, {0, 0}};
    int nranges = 1;
    if (image) {
        uint64_t half = inf.format == MMP_PT_X86_64 ? 1ull << (inf.va_bits - 1) : 0;
        ranges[0][0] = 0;
        ranges[0][1] = half ? half : 1ull << inf.va_bits;
        if (half) {
            ranges[1][0] = ~0ull << (inf.va_bits - 1);
            ranges[1][1] = half;
            nranges = 2;
        }
    }
    if (json) {
        printf("{\"format\": \"%s\", \"levels\": %u, \"start_level\": %d, \"granule\": %u, "
               "\"va_bits\": %u, \"pa_bits\": %u, \"root_bytes\": %u, \"root_tables\": %u",
               fmt->name, inf.levels, inf.start_level, inf.granule, inf.va_bits, inf.pa_bits,
               inf.root_bytes, inf.root_tables);
        if (image) { /* a table built from --map has no physical address: no root */
            printf(", \"image\": ");
            cli_json_string(stdout, image);
            printf(", \"base\": ");
            cli_json_hex(stdout, base);
            printf(", \"root\": ");
            cli_json_hex(stdout, root);
        }
        printf(", \"regions\": [");
        struct jwalk w = {.first = true};
        for (int i = 0; i < nranges && !rc; i++)
            rc = mmp_pt_walk(pt, ranges[i][0], ranges[i][1], json_leaf, &w);
        jregion_emit(&w.r, &w.first);
        struct mmp_pt_usage u;
        mmp_pt_usage(pt, &u);
        printf("\n  ], \"usage\": {\"pages\": %" PRIu64 ", \"blocks\": %" PRIu64
               ", \"cont_runs\": %" PRIu64 ", \"mapped_bytes\": %" PRIu64
               ", \"table_pages\": %" PRIu64 "}",
               u.pages, u.blocks, u.cont_runs, u.mapped_bytes, u.table_pages);
        if (image)
            printf(", \"pointers_outside_image\": %u", im.outside);
        printf("}\n");
    } else {
        printf("format %s: %u levels from level %d, granule %u, root %u bytes (%u table%s)\n",
               fmt->name, inf.levels, inf.start_level, inf.granule, inf.root_bytes,
               inf.root_tables, inf.root_tables > 1 ? "s concatenated" : "");
        if (image)
            printf("image %s: PA 0x%llx..0x%llx, root at PA 0x%llx\n", image, base,
                   base + im.len - 1, root);
        for (int i = 0; i < nranges && !rc; i++)
            rc = mmp_pt_dump(pt, ranges[i][0], ranges[i][1], print_line,
                             i + 1 < nranges ? (void *)&nranges : NULL);
        if (image && im.outside)
            printf("note: %u table pointer%s outside the image, read as empty tables\n",
                   im.outside, im.outside == 1 ? "" : "s");
    }
    mmp_pt_destroy(pt);
    if (im.base)
        munmap((void *)im.base, im.len);
    free(im.root);
    return rc ? cli_error("ptdump", "%s", mmp_strerror(rc)) : 0;
}

const struct cli_command cli_cmd_ptdump = {
    .name = "ptdump",
    .summary = "build a page table from mappings and dump its leaves",
    .usage = "usage: mmport ptdump [-f F] [--no-blocks] [--no-cont] [-j] -m VA:PA:SIZE[:ATTRS] ...\n"
             "       mmport ptdump -i FILE -r PA [-b PA] [-f F] [-j]\n\n"
             "Maps each range into a fresh table of format F and prints one line per\n"
             "region of leaves contiguous in VA and PA with identical attributes and leaf\n"
             "kind (VA range, PA, size, block / cont / page with leaf size and level,\n"
             "attributes), then the totals: pages, contiguous runs, blocks, table pages.\n\n"
             "  -f, --format F    x86-64, x86-64-la57, x86-ept (Intel EPT, 4-level), x86-ept-5,\n"
             "                    x86-ept-mbec (mode-based execute control, execute-only\n"
             "                    allowed), x86-npt (AMD nested paging), arm64-4k (default),\n"
             "                    arm64-16k, arm64-64k, arm64-el2-4k (single-range EL2),\n"
             "                    arm64-s2-4k (40-bit IPA), arm64-s2-16k, arm64-s2-64k; 52-bit\n"
             "                    VA and PA (FEAT_LPA2 / FEAT_LPA): arm64-4k-lpa2,\n"
             "                    arm64-16k-lpa2, arm64-64k-lpa, arm64-s2-4k-lpa2,\n"
             "                    arm64-s2-16k-lpa2, arm64-s2-64k-lpa\n"
             "  -m, --map M       VA:PA:SIZE[:ATTRS]; sizes take K/M/G suffixes; ATTRS:\n"
             "                    letters r w x u g (and X, user-mode execute, x86-ept-mbec\n"
             "                    only; x is then supervisor) and a memory type wb (default),\n"
             "                    nc, device (or, x86-ept only, wc, wt, wp), comma separated,\n"
             "                    e.g. 0x40000000:0x80000000:2M:rw,device; VA, PA and SIZE\n"
             "                    must be multiples of the granule; every leaf needs r (EPT:\n"
             "                    or execute-only with x86-ept-mbec); u and g only in stage-1\n"
             "                    tables; a refused map names the rule and exits 2\n"
             "      --no-blocks   never use block leaves\n"
             "      --no-cont     never set the arm64 contiguous bit\n"
             "  -j, --json        one JSON object: the geometry, \"regions\" (va, pa, size,\n"
             "                    kind, leaf_size, level, leaves, prot, mem) and \"usage\";\n"
             "                    addresses are \"0x...\" strings, sizes numbers\n"
             "  -i, --image FILE  decode an existing table in a raw memory image (a guest or\n"
             "                    hypervisor dump) instead of --map: the whole input address\n"
             "                    space is dumped; table pointers outside the image read as\n"
             "                    empty tables (counted)\n"
             "  -b, --base PA     physical address of the image's first byte (default 0)\n"
             "  -r, --root PA     physical address of the root table in the image; the JSON\n"
             "                    has \"root\" only then (a table built from --map has none)\n",
    .run = run,
};
