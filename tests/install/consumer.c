/* SPDX-License-Identifier: MIT */
/*
 * A program outside the tree, built against an installed mmport with
 * nothing but `pkg-config --cflags --libs mmport`: proves the installed
 * headers are self-contained and the library links and runs.
 */
#include <stdio.h>
#include <string.h>

#include <mmport/mmport.h>

int main(void)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    if (strcmp(mmp_version(), MMP_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", MMP_VERSION_STRING, mmp_version());
        return 1;
    }
    printf("consumer: mmport %s on %s\n", mmp_version(), mmp_arch_name(f->arch));
    return 0;
}
