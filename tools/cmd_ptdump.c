/* SPDX-License-Identifier: MIT */
/* mmport ptdump: build a table from --map arguments and dump it. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "cli.h"
#include "pt_formats.h"

/* "rwxug" letters and a memory type word: rw, rx,device, rwx,nc ... */
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
                case 'g': a |= MMP_PROT_GLOBAL; break;
                default: return false;
                }
            }
    }
    *out = a;
    return true;
}

static int print_line(void *arg, const char *line)
{
    (void)arg;
    puts(line);
    return 0;
}

static int run(int argc, char **argv)
{
    const struct cli_pt_format *fmt = cli_pt_format("arm64-4k");
    struct mmp_pt_config cfg;
    uint32_t flags = 0;
    int nmaps = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i]))
            return fputs(cli_cmd_ptdump.usage, stdout), 0;
        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (!(fmt = cli_pt_format(argv[++i])))
                return cli_usage_error("ptdump", "unknown format '%s'", argv[i]);
        } else if (strcmp(argv[i], "--no-blocks") == 0) {
            flags |= MMP_PT_NO_BLOCKS;
        } else if (strcmp(argv[i], "--no-cont") == 0) {
            flags |= MMP_PT_NO_CONT;
        } else if (strcmp(argv[i], "--map") == 0 && i + 1 < argc) {
            i++;
            nmaps++;
        } else {
            return cli_usage_error("ptdump", "unknown option '%s'", argv[i]);
        }
    }
    cfg = fmt->cfg;
    cfg.flags |= flags;
    struct mmp_pt *pt;
    int rc = mmp_pt_create(&pt, &cfg, NULL);
    if (rc)
        return cli_error("ptdump", "cannot create the table: %s", mmp_strerror(rc));
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--map") != 0)
            continue;
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argv[++i]);
        char *f[4] = {0};
        char *save = NULL;
        int n = 0;
        for (char *tok = strtok_r(spec, ":", &save); tok && n < 4; tok = strtok_r(NULL, ":", &save))
            f[n++] = tok;
        unsigned long long va, pa, size;
        uint32_t attrs = MMP_PROT_READ | MMP_PROT_WRITE;
        if (n < 3 || !cli_parse_size(f[0], &va) || !cli_parse_size(f[1], &pa) ||
            !cli_parse_size(f[2], &size) || (n == 4 && !parse_attrs(f[3], &attrs))) {
            mmp_pt_destroy(pt);
            return cli_usage_error("ptdump", "bad --map '%s' (VA:PA:SIZE[:ATTRS])", argv[i]);
        }
        rc = mmp_pt_map(pt, va, pa, size, attrs, 0);
        if (rc) {
            mmp_pt_destroy(pt);
            return cli_error("ptdump", "map %s: %s", argv[i], mmp_strerror(rc));
        }
        if (va < lo)
            lo = va;
        if (va + size - 1 > hi)
            hi = va + size - 1;
    }
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    printf("format %s: %u levels from level %d, granule %u, root %u bytes (%u table%s)\n",
           fmt->name, inf.levels, inf.start_level, inf.granule, inf.root_bytes,
           inf.root_tables, inf.root_tables > 1 ? "s concatenated" : "");
    if (nmaps)
        rc = mmp_pt_dump(pt, lo, hi - lo + 1, print_line, NULL);
    mmp_pt_destroy(pt);
    return rc ? cli_error("ptdump", "%s", mmp_strerror(rc)) : 0;
}

const struct cli_command cli_cmd_ptdump = {
    .name = "ptdump",
    .summary = "build a page table from mappings and dump its leaves",
    .usage = "usage: mmport ptdump [--format F] [--no-blocks] [--no-cont] --map VA:PA:SIZE[:ATTRS] ...\n\n"
             "Maps each range into a fresh table of format F and prints one line per\n"
             "region of leaves contiguous in VA and PA with identical attributes and leaf\n"
             "kind (VA range, PA, size, block / cont / page with leaf size and level,\n"
             "attributes), then the totals: pages, contiguous runs, blocks, table pages.\n\n"
             "  --format F   x86-64, x86-64-la57, x86-ept (Intel EPT, 4-level), x86-ept-5,\n"
             "               x86-npt (AMD nested paging), arm64-4k (default), arm64-16k, arm64-64k,\n"
             "               arm64-el2-4k (single-range EL2), arm64-s2-4k (40-bit IPA),\n"
             "               arm64-s2-16k, arm64-s2-64k\n"
             "  --map        sizes take K/M/G suffixes; ATTRS: letters r w x u g and a\n"
             "               memory type wb (default), nc, device (or, x86-ept only, wc, wt,\n"
             "               wp), comma separated,\n"
             "               e.g. 0x40000000:0x80000000:2M:rw,device\n",
    .run = run,
};
