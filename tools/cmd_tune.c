/* SPDX-License-Identifier: MIT */
/* mmport tune: measure the clearing kernels here and write a tuning file. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <mmport/mmport.h>

#include "clear_tuning.h"
#include "cli.h"
#include "progress.h"

/*
 * The default output directory: $MMPORT_CACHE_DIR, else
 * $XDG_CACHE_HOME/mmport, else $HOME/.cache/mmport; NULL without any.
 */
static const char *cache_dir(char *buf, size_t cap)
{
    const char *d = getenv("MMPORT_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME");
    const char *h = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(buf, cap, "%s", d);
    else if (x && *x)
        n = snprintf(buf, cap, "%s/mmport", x);
    else if (h && *h)
        n = snprintf(buf, cap, "%s/.cache/mmport", h);
    else
        return NULL;
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

static int run(int argc, char **argv)
{
    static char cache[512], dirbuf[512];
    const char *path = NULL, *dir = NULL;
    unsigned long long size = 0;
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"size", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(cli_cmd_tune.usage, stdout), 0;
        case 'o': path = optarg; break;
        case 's':
            if (!cli_parse_size(optarg, &size))
                return cli_usage_error("tune", "--size '%s': not a size (e.g. 256M)", optarg);
            if (size < (4u << 20) || size % 4096)
                return cli_usage_error("tune", "--size '%s': below 4M or not a 4 KiB multiple",
                                       optarg);
            break;
        default: return cli_opt_error("tune", c, argv, longopts);
        }
    }
    if ((c = cli_no_operands("tune", argc, argv)))
        return c;
    if (!path) {
        dir = cache_dir(dirbuf, sizeof dirbuf);
        if (!dir || mmp_core_clear_cache_path(dir, mmp_cpu_features(), cache, sizeof cache) < 0)
            return cli_error("tune", "no cache directory (HOME unset, or too long): give -o FILE");
        /* its last directory only, as the library does */
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return cli_error("tune", "cannot create %s (%s): create its parent or give -o FILE",
                             dir, strerror(errno));
        path = cache;
    }
    if (!size) { /* 4 x the LLC, between 64 MiB and 1 GiB */
        size = mmp_cpu_features()->llc_bytes * 4;
        size = size < (64u << 20) ? (64u << 20) : size > (1u << 30) ? (1u << 30) : size;
    }
    char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return cli_error("tune", "cannot map %llu bytes", size);
    madvise(buf, size, MADV_HUGEPAGE);
    struct progress pr;
    progress_start(&pr, "measuring the clearing kernels", NULL);
    memset(buf, 1, size);
    static struct mmp_clear_calibration cal;
    int rc = mmp_clear_calibrate(buf, size, &cal);
    progress_finish(&pr);
    munmap(buf, size);
    if (rc)
        return cli_error("tune", "calibration failed: %s", mmp_strerror(rc));
    char text[4096];
    int n = mmp_clear_tuning_format(&cal, text, sizeof text);
    if (n < 0)
        return cli_error("tune", "cannot format: %s", mmp_strerror(n));
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
        return cli_error("tune", "cannot write %s", path);
    fputs(text, stdout);
    if (dir)
        printf("\nwrote %s; programs use it with MMPORT_TUNING=%s, or MMPORT_CACHE_DIR=%s "
               "(the file for their CPU model), or mmp_clear_tune(\"%s\", 0)\n",
               path, path, dir, dir);
    else
        printf("\nwrote %s; use it with MMPORT_TUNING=%s\n", path, path);
    return 0;
}

const struct cli_command cli_cmd_tune = {
    .name = "tune",
    .summary = "measure the clearing kernels here and write a tuning file",
    .usage = "usage: mmport tune [-o FILE] [--size BYTES]\n\n"
             "Measures every available clearing kernel at a few sizes (lines evicted\n"
             "before each sample), picks the hot kernel (fastest in cache), the cold\n"
             "kernel (fastest at the largest size) and the size from which cold wins,\n"
             "and writes them, bound to this CPU, to FILE. By default FILE is the\n"
             "per-CPU-model file clear-<cpu>.conf in the cache directory\n"
             "($MMPORT_CACHE_DIR, else $XDG_CACHE_HOME/mmport, else ~/.cache/mmport;\n"
             "that directory is created if its parent exists). The library measures\n"
             "nothing and reads no file by itself: a program uses the file with\n"
             "MMPORT_TUNING=FILE, or MMPORT_CACHE_DIR=DIR (the file for its CPU model\n"
             "there), or mmp_clear_tune(DIR, 0). A file for another CPU is ignored.\n\n"
             "  -o, --output=FILE  output file (default: the per-CPU-model file above)\n"
             "  --size=BYTES       largest size measured (default 4 x LLC, 64M..1G)\n",
    .run = run,
};
