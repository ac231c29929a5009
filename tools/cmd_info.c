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

static void print_clear(void)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    printf("\nclearing kernels\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-12s %-3s %s%s\n", k[i].name, k[i].available ? "yes" : "no", k[i].why,
               k[i].cold ? " [cold]" : "");
    printf("\nclearing policy (%s)\n", p.source);
    printf("  %-16s %s\n", "hot", p.hot);
    printf("  %-16s %s\n", "cold", p.cold);
    if (p.cold_min == UINT64_MAX)
        printf("  %-16s never (from %s): AUTO always uses %s\n", "cold_min", p.cold_min_from,
               p.hot);
    else
        printf("  %-16s %" PRIu64 " KiB (from %s): AUTO uses %s below, %s from there\n",
               "cold_min", p.cold_min >> 10, p.cold_min_from, p.hot, p.cold);
    if (p.forced)
        printf("  %-16s %s (MMPORT_CLEAR)\n", "forced", p.forced);
    if (p.forced_error)
        printf("  %-16s %s\n", "forced: refused", p.forced_error);
    if (p.cold_min_error)
        printf("  %-16s %s\n", "cold_min: env", p.cold_min_error);
    printf("  %-16s %s\n", "quirk", p.quirk ? p.quirk : "(none matched)");
    if (p.quirk_why)
        cli_print_wrapped("                   ", 19, p.quirk_why);
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
    if (f->llc_cores)
        printf("  %-16s %u\n", "cores sharing it", f->llc_cores);
    else
        printf("  %-16s unknown\n", "cores sharing it");
    if (f->l2_bytes)
        printf("  %-16s %" PRIu64 " KiB\n", "l2 per core", f->l2_bytes >> 10);
}

static void json_or_null(const char *s)
{
    if (s)
        cli_json_string(stdout, s);
    else
        printf("null");
}

static void print_json(const struct mmp_cpu_features *f)
{
    printf("{\"version\": ");
    cli_json_string(stdout, mmp_version());
    printf(", \"arch\": ");
    cli_json_string(stdout, mmp_arch_name(f->arch));
    printf(", \"cpu\": {\"vendor\": ");
    cli_json_string(stdout, f->vendor);
    printf(", \"family\": %u, \"model\": %u, \"stepping\": %u, \"midr\": ", f->family,
           f->model, f->stepping);
    cli_json_hex(stdout, f->midr);
    printf(", \"zva_block\": %u, \"zva_prohibited\": %s, \"hwcap\": ", f->zva_block,
           f->zva_prohibited ? "true" : "false");
    cli_json_hex(stdout, f->hwcap);
    printf(", \"hwcap2\": ");
    cli_json_hex(stdout, f->hwcap2);
    printf(", \"llc_bytes\": %" PRIu64 ", \"llc_source\": ", f->llc_bytes);
    cli_json_string(stdout, f->llc_source);
    printf(", \"llc_cores\": %u, \"l2_bytes\": %" PRIu64, f->llc_cores, f->l2_bytes);
    printf(", \"features\": [");
    print_flags(stdout, f->flags, true);
    printf("]}");
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    printf(", \"clear_kernels\": [");
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"name\": ", i ? ", " : "");
        cli_json_string(stdout, k[i].name);
        printf(", \"arch\": ");
        cli_json_string(stdout, mmp_arch_name(k[i].arch));
        printf(", \"available\": %s, \"cold\": %s, \"why\": ",
               k[i].available ? "true" : "false", k[i].cold ? "true" : "false");
        cli_json_string(stdout, k[i].why);
        printf("}");
    }
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    printf("], \"clear_policy\": {\"hot\": ");
    cli_json_string(stdout, p.hot);
    printf(", \"cold\": ");
    cli_json_string(stdout, p.cold);
    /* cold_min null: AUTO never goes cold (one size class) */
    char cold_min[24] = "null";
    if (p.cold_min != UINT64_MAX)
        snprintf(cold_min, sizeof cold_min, "%" PRIu64, p.cold_min);
    printf(", \"cold_min\": %s, \"cold_min_from\": ", cold_min);
    cli_json_string(stdout, p.cold_min_from);
    printf(", \"size_classes\": [{\"below\": %s, \"auto\": ", cold_min);
    cli_json_string(stdout, p.hot);
    printf("}");
    if (p.cold_min != UINT64_MAX) {
        printf(", {\"from\": %s, \"auto\": ", cold_min);
        cli_json_string(stdout, p.cold);
        printf("}");
    }
    printf("], \"forced\": ");
    json_or_null(p.forced);
    printf(", \"forced_error\": ");
    json_or_null(p.forced_error);
    printf(", \"forced_status\": %d, \"cold_min_error\": ", p.forced_status);
    json_or_null(p.cold_min_error);
    printf(", \"quirk\": ");
    json_or_null(p.quirk);
    printf(", \"quirk_why\": ");
    json_or_null(p.quirk_why);
    printf(", \"source\": ");
    cli_json_string(stdout, p.source);
    printf("}");
}

static int run(int argc, char **argv)
{
    bool json = false;
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":hj", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(cli_cmd_info.usage, stdout), 0;
        case 'j': json = true; break;
        default: return cli_opt_error("info", c, argv, longopts);
        }
    }
    if ((c = cli_no_operands("info", argc, argv)))
        return c;
    const struct mmp_cpu_features *f = mmp_cpu_features();
    if (json) {
        print_json(f);
        printf("}\n");
    } else {
        print_table(f);
        print_clear();
    }
    return 0;
}

const struct cli_command cli_cmd_info = {
    .name = "info",
    .summary = "show the CPU features mmport detected",
    .usage = "usage: mmport info [-j|--json]\n\n"
             "Prints the CPU as mmport sees it: vendor and model (x86 CPUID or arm64\n"
             "MIDR_EL1), the feature bits that choose clearing kernels, the DC ZVA block\n"
             "size (arm64), the last-level cache size with its source, the cores\n"
             "sharing it and the L2 per core; then every\n"
             "clearing kernel with its availability and the clearing policy in force\n"
             "(hot and cold kernel, AUTO threshold, quirk row matched).\n\n"
             "  -j, --json  one JSON object instead of the table (\"cpu\", \"clear_kernels\",\n"
             "              \"clear_policy\"); register values (midr, hwcap) are \"0x...\"\n"
             "              strings; cold_min is null when AUTO never goes cold\n",
    .run = run,
};
