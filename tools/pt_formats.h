/* SPDX-License-Identifier: MIT */
/* Format names the page-table commands accept (mmport ptdump, bench map). */
#ifndef MMPORT_TOOLS_PT_FORMATS_H
#define MMPORT_TOOLS_PT_FORMATS_H

#include <string.h>

#include <mmport/mmport.h>

struct cli_pt_format {
    const char *name;
    struct mmp_pt_config cfg;
};

static const struct cli_pt_format cli_pt_formats[] = {
    {"x86-64", {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}},
    {"x86-64-la57", {MMP_PT_X86_64, 4096, 57, 0, 0, 0, 0, 0}},
    {"arm64-4k", {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}},
    {"arm64-16k", {MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}},
    {"arm64-64k", {MMP_PT_ARM64_S1, 65536, 48, 0, 0, 0, 0, 0}},
    {"arm64-el2-4k", {MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0}},
    {"arm64-s2-4k", {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}},
    {"arm64-s2-16k", {MMP_PT_ARM64_S2, 16384, 48, 0, 0, 0, 0, 0}},
    {"arm64-s2-64k", {MMP_PT_ARM64_S2, 65536, 48, 0, 0, 0, 0, 0}},
    {"arm64-4k-lpa2", {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}},
    {"arm64-16k-lpa2", {MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}},
    {"arm64-64k-lpa", {MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}},
    {"arm64-s2-4k-lpa2", {MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}},
    {"arm64-s2-16k-lpa2", {MMP_PT_ARM64_S2, 16384, 52, 52, 0, 0, 0, 0}},
    {"arm64-s2-64k-lpa", {MMP_PT_ARM64_S2, 65536, 52, 52, 0, 0, 0, 0}},
    {"x86-ept", {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0}},
    {"x86-ept-5", {MMP_PT_X86_EPT, 4096, 57, 0, 0, 0, 0, 0}},
    {"x86-ept-mbec", {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_MBEC | MMP_PT_EPT_XO, 0, 0, 0}},
    {"x86-npt", {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0}},
};
#define CLI_PT_NFORMATS (sizeof cli_pt_formats / sizeof cli_pt_formats[0])

static inline const struct cli_pt_format *cli_pt_format(const char *name)
{
    for (size_t i = 0; i < CLI_PT_NFORMATS; i++)
        if (strcmp(cli_pt_formats[i].name, name) == 0)
            return &cli_pt_formats[i];
    return NULL;
}

#endif
