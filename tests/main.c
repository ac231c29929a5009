/* SPDX-License-Identifier: MIT */
/*
 * The check runner: every suite in one binary. CK_RUN_SUITE / CK_RUN_CASE
 * select a subset (libcheck's own variables). When MMPORT_TEST_RESULTS
 * names a file, "passed failed skipped" is written there for the summary.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmp_test.h"

static char skip_log[4096];

void mmp_test_add(Suite *s, const TTest *test)
{
    TCase *tc = tcase_create(test->name);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

void mmp_test_note_skip(const char *test, const char *why)
{
    size_t n = strlen(test); /* check names test functions <name>_fn */
    if (n > 3 && strcmp(test + n - 3, "_fn") == 0)
        n -= 3;
    printf("SKIP %.*s: %s\n", (int)n, test, why);
    fflush(stdout);
    if (!skip_log[0])
        return;
    /* Tests run in forked children: append one line per skip. */
    int fd = open(skip_log, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) {
        if (write(fd, "s\n", 2) != 2)
            perror("skip log");
        close(fd);
    }
}

int mmp_test_emulated(void)
{
    const char *e = getenv("QEMU_CPU");
    return e && *e;
}

int mmp_test_slow(void)
{
    return mmp_test_emulated() || getenv("MMPORT_UNDER_VALGRIND") != NULL;
}

const char *mmp_test_foreign_cpu(void)
{
    if (mmp_test_emulated())
        return "under qemu-user, /proc and sysfs describe the host CPU, not the emulated one";
    if (getenv("MMPORT_UNDER_VALGRIND"))
        return "valgrind presents its own CPUID, unlike /proc and sysfs";
    return NULL;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    if (!f)
        return 0;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

int main(void)
{
    const char *results = getenv("MMPORT_TEST_RESULTS");
    if (results) {
        snprintf(skip_log, sizeof skip_log, "%s.skips", results);
        unlink(skip_log);
    }

    SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, mmp_suite_##name());
#include "suites.h"
#undef SUITE
    srunner_run_all(sr, CK_NORMAL);
    int run = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    int skipped = skip_log[0] ? count_lines(skip_log) : 0;
    if (results) {
        FILE *f = fopen(results, "w");
        if (f) {
            fprintf(f, "%d %d %d\n", run - failed - skipped, failed, skipped);
            fclose(f);
        }
        unlink(skip_log);
    }
    printf("%d passed, %d failed, %d skipped\n", run - failed - skipped, failed, skipped);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
