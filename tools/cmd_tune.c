/* SPDX-License-Identifier: MIT */
/* mmport tune: measure the clearing kernels here and write a tuning file. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mmport/mmport.h>

#include "clear_impl.h"
#include "cli.h"
#include "progress.h"

static int run(int argc, char **argv)
{
    static char cache[512];
    const char *path = NULL; /* the file the library loads by default */
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
    if (!path && mmp_core_clear_cache_path(mmp_cpu_features(), cache, sizeof cache) < 0)
        return cli_error("tune", "no cache directory (HOME unset): give -o FILE");
    path = path ? path : cache;
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
    if (path == cache)
        printf("\nwrote %s: the library loads it by default on this CPU model (delete it to "
               "go back to the table)\n", path);
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
             "per-CPU-model file in the cache directory ($MMPORT_CACHE_DIR, else\n"
             "$XDG_CACHE_HOME/mmport, else ~/.cache/mmport), which the library loads\n"
             "by default; with -o, MMPORT_TUNING=FILE makes it use the file. A file for\n"
             "another CPU is ignored.\n\n"
             "  -o, --output=FILE  output file (default: the cache file, see mmport info)\n"
             "  --size=BYTES       largest size measured (default 4 x LLC, 64M..1G)\n",
    .run = run,
};
