/* SPDX-License-Identifier: MIT */
/* Shared helpers for the check suites. */
#ifndef MMPORT_TESTS_MMP_TEST_H
#define MMPORT_TESTS_MMP_TEST_H

#include <check.h>

/*
 * libcheck's passing assertion records its location with a write(2) (to
 * name the last place reached if the test later crashes). The suites assert
 * inside loops over every page of a region, where those writes were most of
 * the run time, tenfold so under valgrind and qemu-user; here only a failing
 * assertion calls into libcheck. A test that wants a crash located calls
 * mark_point() itself.
 */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                         \
    ((expr) ? (void)0                                                                    \
            : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed",      \
                                ##__VA_ARGS__))

/*
 * Every tests/test_<name>.c defines `Suite *mmp_suite_<name>(void)`; the
 * build generates the list (gen/suites.h), so a new file is all it takes.
 */
#define SUITE(name) Suite *mmp_suite_##name(void);
#include "suites.h"
#undef SUITE

/* Adds one test to a new case named after it, with a generous timeout
 * (the aarch64 suites run under emulation). */
void mmp_test_add(Suite *s, const TTest *test);
#define MMP_ADD(suite, fn) mmp_test_add((suite), fn)

/*
 * Marks the running test as skipped, printing why, and returns from it.
 * A skipped test is counted apart in the summary, never as passed.
 */
void mmp_test_note_skip(const char *test, const char *why);
#define MMP_SKIP(why)                                                                    \
    do {                                                                                 \
        mmp_test_note_skip(__func__, (why));                                             \
        return;                                                                          \
    } while (0)

/* True when running under qemu-user (set by the emulated check runs). */
int mmp_test_emulated(void);

/*
 * True where everything runs tens of times slower (qemu-user, valgrind):
 * randomized and large tests shrink their iteration counts there.
 */
int mmp_test_slow(void);

/*
 * Why the CPU the tests see is not the machine's (qemu-user, or valgrind,
 * which presents its own CPUID), or NULL. Tests that compare detection with
 * the host's /proc or sysfs skip with this reason.
 */
const char *mmp_test_foreign_cpu(void);

#endif
