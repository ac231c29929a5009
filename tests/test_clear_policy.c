/* SPDX-License-Identifier: MIT */
/*
 * Clearing policy overrides: the tuning file (whole file or nothing, with
 * the reason), MMPORT_CLEAR and MMPORT_CLEAR_COLD_MIN refusals reported
 * through struct mmp_clear_policy, sizes with suffixes, tuning files for
 * vendors with spaces, and the calibration buffer zeroed to its last byte.
 * The environment is read once per process: every case runs in a child.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "clear_measure.h"
#include "clear_tuning.h"
#include "mmp_test.h"

/* Runs fn(arg) in a child process (fresh environment state); fails the test if fn fails. */
static void in_child(const char *what, void (*fn)(const void *arg), const void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed", what);
}

/* In a child: fails it with a message on stderr. */
#define CHILD_ASSERT(cond, ...)                                                          \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            _exit(1);                                                                    \
        }                                                                                \
    } while (0)

static void cpu_line(char *buf, size_t cap)
{
    struct mmp_core_sink o = {buf, cap, 0};
    mmp_core_clear_put_cpu(&o, mmp_cpu_features());
}

/* ---- the tuning file, through MMPORT_TUNING ------------------------------ */

struct tuning_case {
    const char *what;
    const char *text;
    size_t len;
    const char *source; /* substring of policy.source */
    uint64_t cold_min;  /* when applied */
};

static void tuning_child(const void *arg)
{
    const struct tuning_case *c = arg;
    char path[] = "/tmp/mmport-tuning-XXXXXX";
    int fd = mkstemp(path);
    CHILD_ASSERT(fd >= 0, "mkstemp");
    CHILD_ASSERT(write(fd, c->text, c->len) == (ssize_t)c->len, "write");
    close(fd);
    setenv("MMPORT_TUNING", path, 1);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    unlink(path);
    CHILD_ASSERT(strstr(p.source, c->source), "%s: source '%s', want '%s'", c->what, p.source,
                 c->source);
    if (strcmp(c->source, "tuning") == 0)
        CHILD_ASSERT(p.cold_min == c->cold_min, "%s: cold_min %llu, want %llu", c->what,
                     (unsigned long long)p.cold_min, (unsigned long long)c->cold_min);
}

static void tuning_case(const char *what, const char *text, size_t len, const char *source,
                        uint64_t cold_min)
{
    struct tuning_case c = {what, text, len, source, cold_min};
    in_child(what, tuning_child, &c);
}

/* Issue 15 bug 1: the tuner writes UINT64_MAX when cold never wins; it must load. */
START_TEST(tuner_file_with_cold_never_loads)
{
    struct mmp_clear_policy table;
    mmp_clear_policy_for(mmp_cpu_features(), &table);
    struct mmp_clear_calibration cal = {.nsizes = 1, .size = {1u << 20}, .hot = table.hot,
                                        .cold = table.cold, .cold_min = UINT64_MAX};
    char text[2048];
    int n = mmp_clear_tuning_format(&cal, text, sizeof text);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(text, "cold_min 18446744073709551615\n"));
    tuning_case("cold_min UINT64_MAX", text, (size_t)n, "tuning", UINT64_MAX);
}
END_TEST

/* Issue 15 bug 2: no silent truncation at 4 KiB; a file too large is refused whole. */
START_TEST(tuning_file_read_whole)
{
    char line[128];
    cpu_line(line, sizeof line);
    static char text[MMP_CORE_TUNING_MAX + 64];
    /* 4,101 bytes: comments, the cpu line, and cold_min as the last line */
    const char *last = "cold_min 33554432\n";
    size_t n = 0;
    n += (size_t)snprintf(text, sizeof text, "%s", line);
    while (n + strlen(last) < 4101) {
        size_t room = 4101 - strlen(last) - n;
        size_t w = room > 64 ? 64 : room;
        memset(text + n, '#', w - 1);
        text[n + w - 1] = '\n';
        n += w;
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "%s", last);
    ck_assert_uint_eq(n, 4101);
    tuning_case("4101-byte file", text, n, "tuning", 32u << 20);
    /* past the limit: refused, even though every line is fine */
    n = (size_t)snprintf(text, sizeof text, "%s", line);
    while (n < MMP_CORE_TUNING_MAX + 10) {
        memcpy(text + n, "# padding\n", 10);
        n += 10;
    }
    tuning_case("oversized file", text, n, "larger than 16 KiB", 0);
    /* a NUL byte read from the file */
    n = (size_t)snprintf(text, sizeof text, "%scold_min 4096\n", line);
    text[n - 3] = '\0';
    tuning_case("NUL byte", text, n, "line 2: NUL byte", 0);
}
END_TEST

/* ---- the tuning parser, directly ------------------------------------------- */

static uint32_t all_supported(const struct mmp_cpu_features *f)
{
    uint32_t m = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        m |= mmp_core_clear_supported(f, k) ? MMP_KBIT(k) : 0;
    return m;
}

/* Applies text for f; returns the refusal (NULL: applied) and the policy in *p. */
static const char *apply(const struct mmp_cpu_features *f, const char *text,
                         struct mmp_clear_policy *p)
{
    static char buf[4096];
    size_t len = strlen(text);
    ck_assert_uint_lt(len, sizeof buf);
    memcpy(buf, text, len + 1);
    mmp_clear_policy_for(f, p);
    return mmp_core_clear_tuning_apply(buf, len, f, all_supported(f), p);
}

static struct mmp_cpu_features fake_intel(void)
{
    struct mmp_cpu_features f = {.arch = MMP_ARCH_X86_64, .family = 6, .model = 0x97,
                                 .flags = MMP_CPU_SSE2 | MMP_CPU_ERMS | MMP_CPU_REP_GOOD,
                                 .llc_bytes = 30u << 20};
    snprintf(f.vendor, sizeof f.vendor, "GenuineIntel");
    return f;
}

START_TEST(tuning_parser_whole_file_or_nothing)
{
    struct mmp_cpu_features f = fake_intel();
    const char *cpu = "cpu x86_64 GenuineIntel 6 151 0\n";
    char text[512];
    struct mmp_clear_policy p, table;
    mmp_clear_policy_for(&f, &table);
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"hot unrolled extra\n", "line 2: extra words after 'hot'"},
        {"cold_min 1 2\n", "line 2: extra words after 'cold_min'"},
        {"hot\n", "line 2: 'hot' lacks a value"},
        {"hot unrolled\nhot rep_stosq\n", "line 3: 'hot' given twice"},
        {"hot no_such_kernel\n", "line 2: unknown kernel 'no_such_kernel'"},
        {"hot dc_zva\n", "line 2: kernel 'dc_zva' not usable"},
        {"cold_min lots\n", "line 2: bad cold_min 'lots'"},
        {"cold_min 18446744073709551616\n", "bad cold_min"},
        {"colour blue\n", "line 2: unknown key 'colour'"},
        {"cold_min 4096", "line 2: last line cut short"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s", cpu, bad[i].body);
        const char *why = apply(&f, text, &p);
        ck_assert_msg(why && strstr(why, bad[i].why), "case %zu: '%s', want '%s'", i,
                      why ? why : "(applied)", bad[i].why);
        /* nothing of the file applied, not even the lines before the fault */
        ck_assert_str_eq(p.hot, table.hot);
        ck_assert_uint_eq(p.cold_min, table.cold_min);
        ck_assert_str_eq(p.source, "table");
    }
    ck_assert_ptr_nonnull(strstr(apply(&f, "", &p), "empty file"));
    ck_assert_ptr_nonnull(strstr(apply(&f, "hot unrolled\n", &p), "no cpu line"));
    ck_assert_ptr_nonnull(
        strstr(apply(&f, "cpu x86_64 GenuineIntel 6 152 0\n", &p), "another CPU"));
    /* a NUL byte in the middle, with a newline after it */
    char nul[64];
    int n = snprintf(nul, sizeof nul, "%shot unrolled\n", cpu);
    nul[n - 5] = '\0';
    mmp_clear_policy_for(&f, &p);
    const char *why = mmp_core_clear_tuning_apply(nul, (size_t)n, &f, all_supported(&f), &p);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "line 2: NUL byte"));
    /* and the good file, with comments, blank lines, CRLF and suffixes */
    snprintf(text, sizeof text, "# c\n\n%shot unrolled\r\ncold movnti\ncold_min 64K\n", cpu);
    ck_assert_ptr_null(apply(&f, text, &p));
    ck_assert_str_eq(p.hot, "unrolled");
    ck_assert_str_eq(p.cold, "movnti");
    ck_assert_uint_eq(p.cold_min, 64u << 10);
    ck_assert_str_eq(p.cold_min_from, "tuning");
    ck_assert_str_eq(p.source, "tuning");
}
END_TEST

/* Issue 15 bug 4: Zhaoxin's vendor "  Shanghai  " has spaces; its own file must load. */
START_TEST(tuning_file_for_vendor_with_spaces)
{
    struct mmp_cpu_features f = {.arch = MMP_ARCH_X86_64, .family = 7, .model = 0x3b,
                                 .flags = MMP_CPU_SSE2 | MMP_CPU_ERMS | MMP_CPU_REP_GOOD,
                                 .llc_bytes = 32u << 20};
    memcpy(f.vendor, "  Shanghai  ", 13);
    struct mmp_clear_calibration cal = {.nsizes = 1, .size = {1u << 20}, .hot = "rep_stosq",
                                        .cold = "movnti", .cold_min = 8u << 20};
    char text[2048];
    int n = mmp_core_clear_tuning_format_for(&cal, &f, text, sizeof text);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(text, "cpu x86_64 __Shanghai__ 7 59 0\n"));
    struct mmp_clear_policy p;
    ck_assert_ptr_null(apply(&f, text, &p));
    ck_assert_str_eq(p.hot, "rep_stosq");
    ck_assert_uint_eq(p.cold_min, 8u << 20);
    /* ...and it is still for that vendor only */
    memcpy(f.vendor, "Shanghai", 9);
    ck_assert_ptr_nonnull(apply(&f, text, &p));
}
END_TEST

START_TEST(sizes_parse_strictly)
{
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {{"0", 0},           {"4096", 4096},        {"64K", 64u << 10},
                {"64k", 64u << 10}, {"2M", 2u << 20},      {"1G", 1u << 30},
                {"18446744073709551615", UINT64_MAX},       {"17179869183G", 17179869183ull << 30}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 1;
        ck_assert_msg(mmp_core_parse_size(good[i].s, &v), "%s", good[i].s);
        ck_assert_uint_eq(v, good[i].v);
    }
    static const char *const bad[] = {"",   "1.5M", "0x1000", "-5",  " 64", "64 ", "64KB",
                                      "K",  "18446744073709551616", "17179869184G", "1T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        ck_assert_msg(!mmp_core_parse_size(bad[i], &v), "'%s' accepted", bad[i]);
        ck_assert_uint_eq(v, 7);
    }
}
END_TEST

/* ---- the environment, reported through the policy -------------------------- */

struct env_case {
    const char *var, *value;
    int status;            /* forced_status wanted (MMPORT_CLEAR) */
    uint64_t cold_min;     /* wanted (MMPORT_CLEAR_COLD_MIN), 0 = refused */
};

static void env_child(const void *arg)
{
    const struct env_case *c = arg;
    setenv(c->var, c->value, 1);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    if (strcmp(c->var, "MMPORT_CLEAR") == 0) {
        CHILD_ASSERT(p.forced_status == c->status, "'%s': status %d, want %d", c->value,
                     p.forced_status, c->status);
        CHILD_ASSERT((p.forced_error != NULL) == (c->status != 0), "'%s': forced_error %s",
                     c->value, p.forced_error ? p.forced_error : "NULL");
        if (c->status) {
            CHILD_ASSERT(strstr(p.forced_error, c->value), "'%s' not named in '%s'", c->value,
                         p.forced_error);
            CHILD_ASSERT(!p.forced, "forced set");
            /* and the clears fail as the policy says */
            void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            CHILD_ASSERT(mmp_clear_pages(m, 1) == c->status, "clear did not fail");
        }
        return;
    }
    struct mmp_clear_policy table;
    mmp_clear_policy_for(mmp_cpu_features(), &table);
    if (c->cold_min) {
        CHILD_ASSERT(!p.cold_min_error && p.cold_min == c->cold_min &&
                         strcmp(p.cold_min_from, "env") == 0,
                     "'%s': cold_min %llu from %s", c->value, (unsigned long long)p.cold_min,
                     p.cold_min_from);
    } else {
        CHILD_ASSERT(p.cold_min_error && strstr(p.cold_min_error, c->value),
                     "'%s' refused silently", c->value);
        CHILD_ASSERT(p.cold_min == table.cold_min, "'%s' changed cold_min", c->value);
    }
}

START_TEST(env_refusals_reported)
{
    /* a kernel of the other arch: unusable here */
    const char *other = mmp_cpu_features()->arch == MMP_ARCH_X86_64 ? "dc_zva" : "avx2_nt";
    const struct env_case cases[] = {
        {"MMPORT_CLEAR", "bogus", -MMP_EINVAL, 0},
        {"MMPORT_CLEAR", " movnti", -MMP_EINVAL, 0},
        {"MMPORT_CLEAR", other, -MMP_ENOTSUP, 0},
        {"MMPORT_CLEAR", "memset", 0, 0},
        {"MMPORT_CLEAR_COLD_MIN", "64k", 0, 64u << 10},
        {"MMPORT_CLEAR_COLD_MIN", "2M", 0, 2u << 20},
        {"MMPORT_CLEAR_COLD_MIN", "18446744073709551615", 0, UINT64_MAX},
        {"MMPORT_CLEAR_COLD_MIN", "1.5M", 0, 0},
        {"MMPORT_CLEAR_COLD_MIN", "0x1000", 0, 0},
        {"MMPORT_CLEAR_COLD_MIN", "-5", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        in_child(cases[i].value, env_child, &cases[i]);
}
END_TEST

/* Issue 15 bug 5: a length that is not a multiple of 4 KiB is zeroed to its last byte. */
START_TEST(calibrate_zeroes_the_tail)
{
    if (mmp_test_emulated())
        MMP_SKIP("timing only; under qemu-user clocks say nothing and it takes minutes");
    size_t len = (4u << 20) + 100, map = (4u << 20) + 8192;
    unsigned char *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    memset(p, 0xa5, map);
    struct mmp_clear_calibration cal;
    ck_assert_int_eq(mmp_clear_calibrate(p, len, &cal), 0);
    for (size_t i = 0; i < len; i++)
        ck_assert_msg(p[i] == 0, "byte %zu of %zu not zero", i, len);
    for (size_t i = len; i < map; i++)
        ck_assert_msg(p[i] == 0xa5, "byte %zu past the buffer written", i);
    munmap(p, map);
}
END_TEST

/* ---- measuring only when asked: mmp_clear_tune() and the cache file ------------ */

static void policy_child(const void *arg)
{
    const char *want = arg; /* prefix of policy.source */
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    CHILD_ASSERT(strncmp(p.source, want, strlen(want)) == 0, "source '%s', want '%s...'",
                 p.source, want);
}

/* A fresh directory under /tmp for one test (removed by rm_tree). */
static void tmp_dir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/mmport-tune-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Entries of a directory other than . and .. (-1 if it cannot be opened). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void read_text(const char *path, char *text, size_t cap)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, cap - 1, f);
    fclose(f);
    text[n] = '\0';
}

/* A hand-written file for this CPU: hot unrolled/stp/memset, cold_min 64 KiB. */
static const char *hand_hot(void)
{
    switch (mmp_cpu_features()->arch) {
    case MMP_ARCH_X86_64: return "unrolled";
    case MMP_ARCH_ARM64: return "stp";
    default: return "memset";
    }
}

static void hand_file(const char *path)
{
    char line[128], text[512];
    cpu_line(line, sizeof line);
    snprintf(text, sizeof text, "# written by hand\n%shot %s\ncold_min 64K\n", line, hand_hot());
    write_text(path, text);
}

struct tune_case {
    const char *dir;
    unsigned flags;
    int rc;             /* mmp_clear_tune()'s return */
    const char *source; /* prefix of policy.source after it */
    bool hand;          /* the hand-written file is in force */
};

static void tune_child(const void *arg)
{
    const struct tune_case *c = arg;
    struct mmp_clear_policy before, after;
    mmp_clear_policy(&before);
    int rc = mmp_clear_tune(c->dir, c->flags);
    mmp_clear_policy(&after);
    CHILD_ASSERT(rc == c->rc, "mmp_clear_tune(%s, %u): %d, want %d", c->dir ? c->dir : "NULL",
                 c->flags, rc, c->rc);
    if (rc) /* a failed call changes nothing */
        CHILD_ASSERT(strcmp(after.source, before.source) == 0 &&
                         after.cold_min == before.cold_min && strcmp(after.hot, before.hot) == 0,
                     "failed call changed the policy to '%s'", after.source);
    CHILD_ASSERT(strncmp(after.source, c->source, strlen(c->source)) == 0,
                 "source '%s', want '%s...'", after.source, c->source);
    CHILD_ASSERT(!c->hand || (strcmp(after.hot, hand_hot()) == 0 && after.cold_min == 65536 &&
                              strcmp(after.cold_min_from, "tuning") == 0),
                 "hand file not applied: hot %s cold_min %llu", after.hot,
                 (unsigned long long)after.cold_min);
    if (!rc && c->source[0] == 'm') /* measured: kernels this CPU runs, cold_min from it */
        CHILD_ASSERT(strcmp(after.cold_min_from, "tuning") == 0, "cold_min from %s",
                     after.cold_min_from);
    /* clearing still works with the new policy */
    unsigned char *p = mmap(NULL, 64 * 4096, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 0xa5, 64 * 4096);
    CHILD_ASSERT(mmp_clear_pages(p, 64) == 0, "clear after tune");
    for (size_t i = 0; i < 64 * 4096; i++)
        CHILD_ASSERT(p[i] == 0, "byte %zu not cleared", i);
}

/* Errors change nothing, create nothing; a file in the directory is loaded, not measured. */
START_TEST(tune_loads_or_refuses_without_measuring)
{
    char dir[64], sub[128], path[512], deep[192], text[4096];
    tmp_dir(dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s/cache", dir);
    snprintf(deep, sizeof deep, "%s/no/such", dir);
    char longdir[600];
    memset(longdir, 'a', sizeof longdir - 1);
    longdir[0] = '/';
    longdir[sizeof longdir - 1] = '\0';
    const struct tune_case bad[] = {
        {dir, 2, -MMP_EINVAL, "table", false},
        {"", 0, -MMP_EINVAL, "table", false},
        {longdir, 0, -MMP_ERANGE, "table", false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        in_child("bad arguments", tune_child, &bad[i]);
    ck_assert_int_eq(entries(dir), 0);
    /* a file there: loaded, hot and cold_min from it, nothing written */
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_gt(mmp_core_clear_cache_path(sub, mmp_cpu_features(), path, sizeof path), 0);
    hand_file(path);
    in_child("load", tune_child, &(struct tune_case){sub, 0, 0, "cached file ", true});
    read_text(path, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "# written by hand\n"));
    ck_assert_int_eq(entries(sub), 1);
    /* MMPORT_CACHE_DIR at first use: the same file, read only */
    setenv("MMPORT_CACHE_DIR", sub, 1);
    in_child("MMPORT_CACHE_DIR", tune_child, &(struct tune_case){bad[0].dir, 2, -MMP_EINVAL,
                                                                   "cached file ", true});
    /* a broken one is reported at first use and not applied */
    write_text(path, "cpu x86_64\n");
    in_child("broken file", policy_child, "table (cached file ");
    unlink(path);
    in_child("no file", policy_child, "table (no cached file ");
    unsetenv("MMPORT_CACHE_DIR");
    /* a directory whose parent is missing: nothing created, -ENOENT (measuring first) */
    if (!mmp_test_slow()) {
        in_child("parent missing", tune_child,
                 &(struct tune_case){deep, 0, -MMP_ENOENT, "table", false});
        struct stat st;
        ck_assert_int_ne(stat(deep, &st), 0);
        snprintf(text, sizeof text, "%s/no", dir);
        ck_assert_int_ne(stat(text, &st), 0);
    }
    rm_tree(dir);
}
END_TEST

/* MMPORT_CLEAR_COLD_MIN wins over a loaded file; checked in a child. */
static void env_wins_child(const void *arg)
{
    (void)arg;
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    CHILD_ASSERT(p.cold_min == (1u << 20) && strcmp(p.cold_min_from, "env") == 0,
                 "cold_min %llu from %s", (unsigned long long)p.cold_min, p.cold_min_from);
    CHILD_ASSERT(mmp_clear_tune(getenv("MMPORT_CACHE_DIR"), 0) == 0, "tune");
    mmp_clear_policy(&p);
    CHILD_ASSERT(p.cold_min == (1u << 20) && strcmp(p.cold_min_from, "env") == 0,
                 "after tune: cold_min %llu from %s", (unsigned long long)p.cold_min,
                 p.cold_min_from);
    CHILD_ASSERT(strcmp(p.hot, hand_hot()) == 0, "hot %s", p.hot);
}

START_TEST(tune_keeps_the_environment_overrides)
{
    char dir[64], path[512];
    tmp_dir(dir, sizeof dir);
    ck_assert_int_gt(mmp_core_clear_cache_path(dir, mmp_cpu_features(), path, sizeof path), 0);
    hand_file(path);
    setenv("MMPORT_CACHE_DIR", dir, 1);
    setenv("MMPORT_CLEAR_COLD_MIN", "1M", 1);
    in_child("env and tune", env_wins_child, NULL);
    unsetenv("MMPORT_CLEAR_COLD_MIN");
    unsetenv("MMPORT_CACHE_DIR");
    rm_tree(dir);
}
END_TEST

/* Measuring: only in mmp_clear_tune(); the file written, created one level deep, reused. */
START_TEST(tune_measures_and_caches_when_asked)
{
    if (mmp_test_slow())
        MMP_SKIP("measures real clearing speed (64 MiB rounds): minutes under qemu-user or "
                 "valgrind, and meaningless there");
    char dir[64], sub[128], path[512], text[8192];
    tmp_dir(dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s/cache", dir);
    /* measure, keep nothing */
    in_child("measure", tune_child,
             &(struct tune_case){NULL, 0, 0, "measured by mmp_clear_tune()", false});
    ck_assert_int_eq(entries(dir), 0);
    /* measure into a directory that does not exist yet: created, file written */
    in_child("measure and cache", tune_child,
             &(struct tune_case){sub, 0, 0, "measured by mmp_clear_tune(), cached in ", false});
    ck_assert_int_gt(mmp_core_clear_cache_path(sub, mmp_cpu_features(), path, sizeof path), 0);
    read_text(path, text, sizeof text);
    char line[128];
    cpu_line(line, sizeof line);
    ck_assert_ptr_nonnull(strstr(text, line));
    ck_assert_ptr_nonnull(strstr(text, "\nhot "));
    ck_assert_ptr_nonnull(strstr(text, "\ncold "));
    ck_assert_ptr_nonnull(strstr(text, "\ncold_min "));
    ck_assert_int_eq(entries(sub), 1); /* no temporary left */
    /* loaded next time */
    in_child("cached", tune_child, &(struct tune_case){sub, 0, 0, "cached file ", false});
    /* AGAIN measures over a good file and replaces it; a broken file is replaced too */
    hand_file(path);
    in_child("again", tune_child,
             &(struct tune_case){sub, MMP_CLEAR_TUNE_AGAIN, 0, "measured by", false});
    read_text(path, text, sizeof text);
    ck_assert_ptr_null(strstr(text, "# written by hand"));
    write_text(path, "bogus\n");
    in_child("broken", tune_child, &(struct tune_case){sub, 0, 0, "measured by", false});
    read_text(path, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "\ncold_min "));
    rm_tree(dir);
}
END_TEST

/* The default first clear reads and writes no file: no cache directory appears in HOME. */
static void default_child(const void *arg)
{
    (void)arg;
    unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    CHILD_ASSERT(mmp_clear_pages(p, 1) == 0, "clear");
    struct mmp_clear_policy pol;
    mmp_clear_policy(&pol);
    CHILD_ASSERT(strcmp(pol.source, "table") == 0, "source %s", pol.source);
}

START_TEST(default_policy_touches_no_file)
{
    char home[64];
    tmp_dir(home, sizeof home);
    const char *old_home = getenv("HOME");
    char saved[512];
    snprintf(saved, sizeof saved, "%s", old_home ? old_home : "");
    setenv("HOME", home, 1);
    unsetenv("XDG_CACHE_HOME");
    in_child("default clear", default_child, NULL);
    ck_assert_int_eq(entries(home), 0);
    if (old_home)
        setenv("HOME", saved, 1);
    rm_tree(home);
}
END_TEST

/* ---- the quirk table against the CPUs its rows name ------------------------------ */

/* Real CPU identities (CPUID family/model, MIDR_EL1) and the row each must match. */
static const struct named_cpu {
    enum mmp_arch arch;
    const char *vendor;
    uint32_t family, model;
    uint64_t midr;
    const char *row; /* NULL: no row */
} named_cpus[] = {
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x55, 0, "intel-skylake-sp"},     /* Cascade Lake */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x6a, 0, "intel-icelake-sp"},
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x6c, 0, "intel-icelake-sp"},     /* Ice Lake-D */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x8f, 0, "intel-sapphire-rapids"},
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x97, 0, "intel-alder-lake"},     /* Alder Lake-S */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x9a, 0, "intel-alder-lake"},     /* Alder Lake-P */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0xad, 0, "intel-granite-rapids"},
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0xb7, 0, "intel-raptor-lake"},
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0xbf, 0, "intel-raptor-lake"},    /* Raptor Lake-S */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0xcf, 0, "intel-emerald-rapids"}, /* the dev machine */
    {MMP_ARCH_X86_64, "GenuineIntel", 6, 0x8c, 0, NULL},                   /* Tiger Lake: none */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x17, 0x31, 0, "amd-zen1-2"},        /* Rome */
    {MMP_ARCH_X86_64, "HygonGenuine", 0x18, 0x00, 0, "hygon-dhyana"},
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x01, 0, "amd-zen3"},          /* Milan */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x21, 0, "amd-zen3-client"},   /* Vermeer */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x11, 0, "amd-zen4"},          /* Genoa */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x61, 0, "amd-zen4-client"},   /* Raphael */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0xa0, 0, "amd-zen4c"},         /* Bergamo */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x1a, 0x02, 0, "amd-zen5"},          /* Turin (issue 15 VM) */
    {MMP_ARCH_X86_64, "AuthenticAMD", 0x1a, 0x44, 0, "amd-zen5"},          /* Granite Ridge */
    {MMP_ARCH_ARM64, "ARM", 0, 0, 0x413fd0c1, "neoverse-n1"},  /* N1 r3p1, Ampere Altra */
    {MMP_ARCH_ARM64, "ARM", 0, 0, 0x411fd401, "neoverse-v1"},  /* Graviton3 */
    {MMP_ARCH_ARM64, "ARM", 0, 0, 0x410fd490, "neoverse-n2"},
    {MMP_ARCH_ARM64, "ARM", 0, 0, 0x410fd4f0, "neoverse-v2"},  /* Grace */
    {MMP_ARCH_ARM64, "Ampere", 0, 0, 0xc00fac30, "ampereone"},
    {MMP_ARCH_ARM64, "Apple", 0, 0, 0x611f0221, "apple"},      /* M1 Icestorm */
    {MMP_ARCH_ARM64, "Apple", 0, 0, 0x611f0330, "apple"},      /* M2 Avalanche */
    {MMP_ARCH_ARM64, "ARM", 0, 0, 0x411fd070, NULL},           /* Cortex-A57: none */
};

static struct mmp_cpu_features named_features(const struct named_cpu *c)
{
    struct mmp_cpu_features f = {.arch = c->arch, .family = c->family, .model = c->model,
                                 .midr = c->midr, .llc_bytes = 32u << 20};
    snprintf(f.vendor, sizeof f.vendor, "%s", c->vendor);
    if (c->arch == MMP_ARCH_X86_64) {
        f.flags = MMP_CPU_SSE2 | MMP_CPU_ERMS | MMP_CPU_FSRM | MMP_CPU_REP_GOOD | MMP_CPU_AVX2 |
                  MMP_CPU_AVX512F | MMP_CPU_CLZERO;
    } else {
        f.flags = MMP_CPU_DC_ZVA;
        f.zva_block = 64;
    }
    return f;
}

/* Each row is matched by the CPUs it names (first match wins), and every row is named. */
START_TEST(quirk_rows_match_the_cpus_they_name)
{
    bool named[64] = {false};
    ck_assert_uint_le(mmp_core_clear_nquirks, 64);
    for (size_t i = 0; i < sizeof named_cpus / sizeof named_cpus[0]; i++) {
        const struct named_cpu *c = &named_cpus[i];
        struct mmp_cpu_features f = named_features(c);
        struct mmp_clear_policy p;
        ck_assert_int_eq(mmp_clear_policy_for(&f, &p), 0);
        if (!c->row) {
            ck_assert_msg(!p.quirk, "%s %u/0x%x midr 0x%llx matched %s", c->vendor, c->family,
                          c->model, (unsigned long long)c->midr, p.quirk);
            continue;
        }
        ck_assert_msg(p.quirk && strcmp(p.quirk, c->row) == 0,
                      "%s %u/0x%x midr 0x%llx: row %s, want %s", c->vendor, c->family, c->model,
                      (unsigned long long)c->midr, p.quirk ? p.quirk : "(none)", c->row);
        for (size_t r = 0; r < mmp_core_clear_nquirks; r++)
            named[r] |= strcmp(mmp_core_clear_quirks[r].name, c->row) == 0;
    }
    for (size_t r = 0; r < mmp_core_clear_nquirks; r++) {
        const struct mmp_core_clear_quirk *q = &mmp_core_clear_quirks[r];
        ck_assert_msg(named[r], "row %s: no named CPU tests it", q->name);
        /* no row without a reason that says what it rests on */
        ck_assert_msg(q->why && strlen(q->why) >= 40, "row %s: no reason", q->name);
    }
    /* Zen 4: AVX-512 NT for cold (CLZERO lost 0.65x at 1 GiB); Zen 5 keeps CLZERO */
    struct mmp_cpu_features f = named_features(&named_cpus[15]);
    struct mmp_clear_policy p;
    mmp_clear_policy_for(&f, &p);
    ck_assert_str_eq(p.cold, "avx512_nt");
    f = named_features(&named_cpus[18]);
    mmp_clear_policy_for(&f, &p);
    ck_assert_str_eq(p.cold, "clzero");
}
END_TEST

/*
 * No row contradicts the first-use measurement: for a CPU of every row, the
 * measurement compares only kernels the row allows (the table's pick among
 * them), keeps the row's choice when nothing is 5% faster, and still moves
 * to another allowed kernel that is: a row is a first guess, never a pin.
 */
START_TEST(verification_respects_every_row)
{
    for (size_t i = 0; i < sizeof named_cpus / sizeof named_cpus[0]; i++) {
        struct mmp_cpu_features f = named_features(&named_cpus[i]);
        struct mmp_clear_policy p;
        mmp_clear_policy_for(&f, &p);
        uint32_t usable = 0;
        for (unsigned k = 0; k < MMP_K_COUNT; k++)
            usable |= mmp_core_clear_supported(&f, k) ? MMP_KBIT(k) : 0;
        uint32_t hc, cc;
        mmp_core_clear_verify_candidates(usable, &p, &hc, &cc);
        int hot = mmp_core_clear_lookup(p.hot), cold = mmp_core_clear_lookup(p.cold);
        ck_assert(hc & MMP_KBIT(hot));
        ck_assert(cc & MMP_KBIT(cold));
        ck_assert_uint_eq(hc & p.bad_hot, 0);
        ck_assert_uint_eq(cc & p.bad_cold, 0);
        ck_assert_uint_eq((hc | cc) & ~usable, 0);
        uint64_t ns[MMP_K_COUNT];
        for (unsigned k = 0; k < MMP_K_COUNT; k++)
            ns[k] = 1000;
        ck_assert_uint_eq(mmp_core_clear_verify_pick(cc, (unsigned)cold, ns), (unsigned)cold);
        for (unsigned k = 0; k < MMP_K_COUNT; k++) {
            if (!(cc & MMP_KBIT(k)) || k == (unsigned)cold)
                continue;
            ns[k] = 960; /* 4%: not enough */
            ck_assert_uint_eq(mmp_core_clear_verify_pick(cc, (unsigned)cold, ns), (unsigned)cold);
            ns[k] = 900; /* 10% */
            ck_assert_uint_eq(mmp_core_clear_verify_pick(cc, (unsigned)cold, ns), k);
            ns[k] = 1000;
        }
        /* the row's threshold stands where the times agree with it */
        uint64_t size[5], th[5], tc[5];
        for (unsigned j = 0; j < 5; j++) {
            size[j] = (4ull << 20) << j;
            bool is_cold = size[j] >= p.cold_min;
            th[j] = is_cold ? 1300 : 1000;
            tc[j] = is_cold ? 1000 : 1300;
        }
        ck_assert_uint_eq(mmp_core_clear_verify_cold_min(p.cold_min, size, th, tc, 5),
                          p.cold_min);
    }
}
END_TEST

/* AUTO's threshold from the first-use scan (fake times, ns per clear). */
START_TEST(verification_checks_the_threshold)
{
    const uint64_t M = 1u << 20;
    uint64_t size[5] = {4 * M, 8 * M, 16 * M, 32 * M, 64 * M};
    /* the issue 15 Zen 5 VM: LLC read as 508 MiB, cold 20% faster from 4 MiB on */
    uint64_t th[5] = {120, 240, 480, 960, 1920}, tc[5] = {100, 200, 400, 800, 1600};
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(508 * M, size, th, tc, 5), 4 * M);
    /* all within 5%: the table's threshold stands */
    uint64_t tie[5] = {102, 204, 408, 816, 1632};
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(508 * M, size, tie, tc, 5), 508 * M);
    /* hot 10% faster at 4 MiB, cold faster from 8 MiB: cold from 8 MiB */
    uint64_t th2[5] = {90, 240, 480, 960, 1920};
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(4 * M, size, th2, tc, 5), 8 * M);
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(512 * M, size, th2, tc, 5), 8 * M);
    /* cold loses at 64 MiB: beyond what was measured, or the table's if larger */
    uint64_t th3[5] = {120, 240, 480, 960, 1400};
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(4 * M, size, th3, tc, 5), 128 * M);
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(1024 * M, size, th3, tc, 5), 1024 * M);
    /* noise: cold wins at 4 and 64 but loses at 16: cold from 32 MiB (the larger sizes count) */
    uint64_t th4[5] = {120, 240, 300, 960, 1920};
    ck_assert_uint_eq(mmp_core_clear_verify_cold_min(508 * M, size, th4, tc, 5), 32 * M);
}
END_TEST

Suite *mmp_suite_clear_policy(void)
{
    /* The environment decides what the policy reads: start from none of it. */
    unsetenv("MMPORT_TUNING");
    unsetenv("MMPORT_CACHE_DIR");
    Suite *s = suite_create("clear_policy");
    MMP_ADD(s, tuner_file_with_cold_never_loads);
    MMP_ADD(s, tuning_file_read_whole);
    MMP_ADD(s, tuning_parser_whole_file_or_nothing);
    MMP_ADD(s, tuning_file_for_vendor_with_spaces);
    MMP_ADD(s, sizes_parse_strictly);
    MMP_ADD(s, env_refusals_reported);
    MMP_ADD(s, calibrate_zeroes_the_tail);
    MMP_ADD(s, default_policy_touches_no_file);
    MMP_ADD(s, tune_loads_or_refuses_without_measuring);
    MMP_ADD(s, tune_keeps_the_environment_overrides);
    MMP_ADD(s, tune_measures_and_caches_when_asked);
    MMP_ADD(s, quirk_rows_match_the_cpus_they_name);
    MMP_ADD(s, verification_respects_every_row);
    MMP_ADD(s, verification_checks_the_threshold);
    return s;
}
