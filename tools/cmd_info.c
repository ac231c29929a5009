/* SPDX-License-Identifier: MIT */
/* mmport info: what mmport detected about this CPU. */
#include <inttypes.h>
#include <string.h>

#include <mmport/mmport.h>

#include "cli.h"

static void print_flags(FILE *out, uint32_t flags, bool json)
{
    bool first = true;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *name = mmp_cpu_flag_name(bit);
        if (!name || !(flags & bit))
            continue;
        if (json) {
            fputs(first ? "" : ", ", out);
            cli_json_string(out, name);
        } else {
            fprintf(out, "%s%s", first ? "" : " ", name);
        }
        first = false;
    }
    if (first && !json)
        fputs("(none)", out);
}

static void print_table(const struct mmp_cpu_features *f)
{
    printf("mmport %s on %s\n\n", mmp_version(), mmp_arch_name(f->arch));
    printf("  %-16s %s\n", "vendor", f->vendor[0] ? f->vendor : "(unknown)");
    if (f->arch == MMP_ARCH_X86_64)
        printf("  %-16s family 0x%x model 0x%x stepping %u\n", "cpu", f->family, f->model,
               f->stepping);
    if (f->arch == MMP_ARCH_ARM64) {
        if (f->midr)
            printf("  %-16s 0x%08" PRIx64 " (implementer 0x%02x part 0x%03x r%up%u)\n",
                   "midr", f->midr, (unsigned)(f->midr >> 24) & 0xff,
                   (unsigned)(f->midr >> 4) & 0xfff, (unsigned)(f->midr >> 20) & 0xf,
                   (unsigned)f->midr & 0xf);
        else
            printf("  %-16s (not readable)\n", "midr");
        if (f->zva_prohibited)
            printf("  %-16s prohibited (DCZID_EL0.DZP)\n", "dc zva");
        else
            printf("  %-16s %u-byte blocks\n", "dc zva", f->zva_block);
        printf("  %-16s 0x%" PRIx64 " / 0x%" PRIx64 "\n", "hwcap / hwcap2", f->hwcap,
               f->hwcap2);
    }
    printf("  %-16s ", "features");
    print_flags(stdout, f->flags, false);
    printf("\n");
    if (f->llc_bytes)
        printf("  %-16s %" PRIu64 " KiB (from %s)\n", "last-level cache", f->llc_bytes >> 10,
               f->llc_source);
    else
        printf("  %-16s unknown\n", "last-level cache");
}

static void print_json(const struct mmp_cpu_features *f)
{
    printf("{\"version\": ");
    cli_json_string(stdout, mmp_version());
    printf(", \"arch\": ");
    cli_json_string(stdout, mmp_arch_name(f->arch));
    printf(", \"cpu\": {\"vendor\": ");
    cli_json_string(stdout, f->vendor);
    printf(", \"family\": %u, \"model\": %u, \"stepping\": %u, \"midr\": %" PRIu64
           ", \"zva_block\": %u, \"zva_prohibited\": %s, \"hwcap\": %" PRIu64
           ", \"hwcap2\": %" PRIu64 ", \"llc_bytes\": %" PRIu64 ", \"llc_source\": ",
           f->family, f->model, f->stepping, f->midr, f->zva_block,
           f->zva_prohibited ? "true" : "false", f->hwcap, f->hwcap2, f->llc_bytes);
    cli_json_string(stdout, f->llc_source);
    printf(", \"features\": [");
    print_flags(stdout, f->flags, true);
    printf("]}}\n");
}

static int run(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i]))
            return fputs(cli_cmd_info.usage, stdout), 0;
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
    }
    const struct mmp_cpu_features *f = mmp_cpu_features();
    if (json)
        print_json(f);
    else
        print_table(f);
    return 0;
}

const struct cli_command cli_cmd_info = {
    .name = "info",
    .summary = "show the CPU features mmport detected",
    .usage = "usage: mmport info [--json]\n\n"
             "Prints the CPU as mmport sees it: vendor and model (x86 CPUID or arm64\n"
             "MIDR_EL1), the feature bits that choose clearing kernels, the DC ZVA block\n"
             "size (arm64) and the last-level cache size with its source.\n\n"
             "  --json   one JSON object instead of the table\n",
    .run = run,
};
