/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz target over files without libFuzzer: each argument is an
 * input file or a directory of them. `make check` uses it to replay the
 * checked-in corpus deterministically with any compiler.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long replayed;

/* A target that counts injected failures exports this (weak: optional). */
extern unsigned long fuzz_pt_injected __attribute__((weak));
static unsigned long *const fuzz_injected = &fuzz_pt_injected;
/* ... and a target may report what the inputs covered. */
extern void fuzz_report(void) __attribute__((weak));

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    replayed++;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            continue;
        }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, by_name);
        for (int j = 0; j < n; j++) {
            if (ents[j]->d_name[0] != '.') {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], ents[j]->d_name);
                run_file(path);
            }
            free(ents[j]);
        }
        free(ents);
    }
    printf("replayed %lu inputs\n", replayed);
    if (fuzz_injected)
        printf("%lu allocation failures injected and survived\n", *fuzz_injected);
    if (fuzz_report)
        fuzz_report();
    return 0;
}
