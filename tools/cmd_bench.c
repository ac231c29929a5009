/* SPDX-License-Identifier: MIT */
/* mmport bench <name>: dispatch to the benchmarks in tools/bench_<name>.c. */
#include <string.h>

#include "cli.h"

static const struct cli_command *const benches[] = {
#define COMMAND(n)
#define BENCH(n) &cli_bench_##n,
#include "commands.h"
#undef COMMAND
#undef BENCH
    NULL,
};

static int run(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("bench", "which benchmark? (see mmport bench --help)");
    for (size_t i = 0; benches[i]; i++)
        if (strcmp(benches[i]->name, argv[1]) == 0)
            return benches[i]->run(argc - 1, argv + 1);
    return cli_usage_error("bench", "no benchmark '%s'", argv[1]);
}

/* Lists the benchmarks; `mmport bench <name> --help` shows one. */
static const char usage[] =
    "usage: mmport bench <name> [options]   (mmport bench <name> --help)\n\n"
    "Benchmarks compare variants in one run and report ratios; the machines\n"
    "are shared and noisy, so absolute figures move between runs.\n"
    "  clear   clearing kernels vs glibc memset and per-page clearing\n"
    "  dirty   dirty-log start and harvest vs per-page lookups\n"
    "  fault   second-stage faults from many threads (shared mode vs a lock)\n"
    "  map     page-table map/unmap/protect per format and leaf policy\n";

const struct cli_command cli_cmd_bench = {
    .name = "bench",
    .summary = "run a benchmark (clear, dirty, fault, map)",
    .usage = usage,
    .run = run,
};
