/* SPDX-License-Identifier: MIT */
/*
 * Reasons (include/mmport/pt_reason.h): every rule that refuses a call
 * records itself with the value that broke it, the errno stays what it
 * was, the text names the value, and the refused call changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define K4 4096ull

static const struct mmp_pt_config X86 = {MMP_PT_X86_64, 4096, 48, 46, 0, 0, 0, 0};
static const struct mmp_pt_config EPT = {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0};
static const struct mmp_pt_config S1 = {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0};
static const struct mmp_pt_config S2 = {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0};
static const struct mmp_pt_config SHARED = {MMP_PT_X86_64, 4096, 48, 0, MMP_PT_SHARED, 0, 0, 0};

enum call { MAP, UNMAP, PROTECT, LOOKUP };

struct refusal {
    const char *what;
    const struct mmp_pt_config *cfg;
    enum call call;
    uint64_t va, pa, size;
    uint32_t attrs, flags;
    int err;
    unsigned rule;
    uint64_t value, end, limit;
    const char *text; /* a part of the rendered reason */
};

static const struct refusal refusals[] = {
    {"va misaligned", &X86, MAP, 0x1001, 0, K4, RW, 0, -MMP_EINVAL, MMP_PT_RULE_VA_ALIGN, 0x1001,
     0, 4096, "input address 0x1001 is not aligned to the 4096-byte granule"},
    {"size 0", &X86, UNMAP, 0x1000, 0, 0, 0, 0, -MMP_EINVAL, MMP_PT_RULE_SIZE_ZERO, 0, 0, 4096,
     "size is 0"},
    {"size misaligned", &S1, PROTECT, 0, 0, 0x1800, RW, 0, -MMP_EINVAL, MMP_PT_RULE_SIZE_ALIGN,
     0x1800, 0, 4096, "size 0x1800 is not aligned"},
    {"pa misaligned", &X86, MAP, 0, 0x800, K4, RW, 0, -MMP_EINVAL, MMP_PT_RULE_PA_ALIGN, 0x800, 0,
     4096, "output address 0x800"},
    {"va wraps", &S1, UNMAP, 0xfffffffffffff000ull, 0, 2 * K4, 0, 0, -MMP_EOVERFLOW,
     MMP_PT_RULE_VA_WRAP, 0xfffffffffffff000ull, 0, 2 * K4, "wraps past 2^64"},
    {"pa wraps", &S1, MAP, 0, 0xfffffffffffff000ull, 2 * K4, RW, 0, -MMP_EOVERFLOW,
     MMP_PT_RULE_PA_WRAP, 0xfffffffffffff000ull, 0, 2 * K4, "output address 0xfffffffffffff000"},
    {"not canonical", &X86, MAP, 0x7ffffffff000ull, 0, 2 * K4, RW, 0, -MMP_ERANGE,
     MMP_PT_RULE_VA_CANONICAL, 0x7ffffffff000ull, 0x800000000fffull, 48,
     "input range 0x7ffffffff000-0x800000000fff is not canonical for 48-bit"},
    {"beyond va_bits", &S2, MAP, 1ull << 40, 0, K4, RW, 0, -MMP_ERANGE, MMP_PT_RULE_VA_RANGE,
     1ull << 40, (1ull << 40) + 0xfff, 40, "beyond va_bits 40"},
    {"lookup beyond va_bits", &S2, LOOKUP, 1ull << 40, 0, 0, 0, 0, -MMP_ERANGE,
     MMP_PT_RULE_VA_RANGE, 1ull << 40, (1ull << 40) + 0xfff, 40, "input range 0x10000000000"},
    {"beyond pa_bits", &X86, MAP, 0, 1ull << 54, K4, RW, 0, -MMP_ERANGE, MMP_PT_RULE_PA_RANGE,
     1ull << 54, (1ull << 54) + 0xfff, 46,
     "output range 0x40000000000000-0x40000000000fff beyond pa_bits 46"},
    {"map flags", &X86, MAP, 0, 0, K4, RW, 0x80, -MMP_EINVAL, MMP_PT_RULE_FLAGS, 0x80, 0, 0,
     "unknown flag bits 0x80"},
    {"EPT write-only", &EPT, MAP, 0, 0, K4, MMP_PROT_WRITE, 0, -MMP_EINVAL,
     MMP_PT_RULE_EPT_WRITE_NEEDS_READ, MMP_PROT_WRITE, 0, 0, "EPT: WRITE needs READ"},
    {"EPT execute-only", &EPT, MAP, 0, 0, K4, MMP_PROT_EXEC, 0, -MMP_EINVAL,
     MMP_PT_RULE_EPT_EXEC_ONLY, MMP_PROT_EXEC, 0, 0, "MMP_PT_EPT_XO"},
    {"EPT nothing", &EPT, PROTECT, 0, 0, K4, 0, 0, -MMP_EINVAL, MMP_PT_RULE_READ_NEEDED, 0, 0, 0,
     "needs MMP_PROT_READ"},
    {"EPT user", &EPT, MAP, 0, 0, K4, RW | MMP_PROT_USER, 0, -MMP_EINVAL,
     MMP_PT_RULE_NO_USER_GLOBAL, RW | MMP_PROT_USER, 0, 0, "USER and GLOBAL"},
    {"x86 uexec", &X86, MAP, 0, 0, K4, RW | MMP_PROT_UEXEC, 0, -MMP_EINVAL, MMP_PT_RULE_UEXEC,
     RW | MMP_PROT_UEXEC, 0, 0, "MMP_PT_EPT_MBEC"},
    {"x86 wc", &X86, MAP, 0, 0, K4, RW | MMP_MEM_WC, 0, -MMP_EINVAL, MMP_PT_RULE_MEM_TYPE,
     MMP_MEM_WC, 0, 0, "memory type 0x300"},
    {"unknown attribute", &S1, MAP, 0, 0, K4, RW | 0x40, 0, -MMP_EINVAL,
     MMP_PT_RULE_ATTRS_UNKNOWN, 0x40, 0, 0, "attribute bits 0x40"},
    {"s1 write without read", &S1, MAP, 0, 0, K4, MMP_PROT_WRITE, 0, -MMP_EINVAL,
     MMP_PT_RULE_READ_NEEDED, MMP_PROT_WRITE, 0, 0, "attrs 0x2"},
    {"s2 global", &S2, PROTECT, 0, 0, K4, RW | MMP_PROT_GLOBAL, 0, -MMP_EINVAL,
     MMP_PT_RULE_NO_USER_GLOBAL, RW | MMP_PROT_GLOBAL, 0, 0, "stage-1 tables"},
    {"map over a mapping", &X86, MAP, 0x3000, 0x3000, 2 * K4, RW, 0, -MMP_EEXIST,
     MMP_PT_RULE_EXISTS, 0x3000, 0x4fff, 0, "input range 0x3000-0x4fff holds a mapping"},
    {"shared: two pages", &SHARED, MAP, 0x10000, 0, 2 * K4, RW, 0, -MMP_ENOTSUP,
     MMP_PT_RULE_SHARED_ONE_SLOT, 0x10000, 0x11fff, 0, "is not one leaf slot"},
    {"shared: one-page map over one", &SHARED, MAP, 0x4000, 0, K4, RW, 0, -MMP_EEXIST,
     MMP_PT_RULE_EXISTS, 0x4000, 0x4fff, 0, "holds a mapping"},
};

/* What a refused call must leave as it was. */
struct shape {
    struct mmp_pt_stats st;
    struct mmp_pt_usage u;
};

static void shape_of(struct mmp_pt *pt, struct shape *s)
{
    memset(s, 0, sizeof *s);
    mmp_pt_stats(pt, &s->st);
    ck_assert_int_eq(mmp_pt_usage(pt, &s->u), 0);
}

static int call(struct mmp_pt *pt, const struct refusal *r)
{
    struct mmp_pt_leaf l;
    switch (r->call) {
    case MAP: return mmp_pt_map(pt, r->va, r->pa, r->size, r->attrs, r->flags);
    case UNMAP: return mmp_pt_unmap(pt, r->va, r->size);
    case PROTECT: return mmp_pt_protect(pt, r->va, r->size, r->attrs);
    case LOOKUP: return mmp_pt_lookup(pt, r->va, &l);
    }
    return 0;
}

START_TEST(every_rule_records_itself)
{
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const struct refusal *r = &refusals[i];
        struct mmp_pt pt;
        memset(&pt, 0, sizeof pt);
        ck_assert_int_eq(mmp_pt_init(&pt, r->cfg, NULL), 0);
        struct mmp_pt_reason why;
        ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
        ck_assert_uint_eq(why.rule, MMP_PT_RULE_NONE);
        ck_assert_int_eq(why.err, 0);
        /* Something mapped beside (0x3000..0x4fff): the refusal keeps it. */
        ck_assert_int_eq(mmp_pt_map(&pt, 0x3000, 0x3000, K4, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_map(&pt, 0x4000, 0x4000, K4, RW, 0), 0);
        struct shape before, after;
        shape_of(&pt, &before);
        ck_assert_msg(call(&pt, r) == r->err, "%s: %d, want %d", r->what, call(&pt, r), r->err);
        shape_of(&pt, &after);
        ck_assert_msg(memcmp(&before, &after, sizeof before) == 0, "%s: the table changed",
                      r->what);
        ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
        ck_assert_msg(why.rule == r->rule && why.err == r->err, "%s: rule %u err %d, want %u %d",
                      r->what, why.rule, why.err, r->rule, r->err);
        ck_assert_msg(why.value == r->value && why.end == r->end && why.limit == r->limit,
                      "%s: value 0x%llx end 0x%llx limit 0x%llx", r->what,
                      (unsigned long long)why.value, (unsigned long long)why.end,
                      (unsigned long long)why.limit);
        char text[256];
        int n = mmp_pt_why(&pt, text, sizeof text);
        ck_assert_int_eq(n, (int)strlen(text));
        ck_assert_msg(strstr(text, r->text), "%s: \"%s\" lacks \"%s\"", r->what, text, r->text);
        /* A successful call leaves the record as it was. */
        ck_assert_int_eq(mmp_pt_map(&pt, 0x200000, 0x200000, K4, RW, 0), 0);
        struct mmp_pt_reason again;
        ck_assert_int_eq(mmp_pt_reason(&pt, &again), 0);
        ck_assert_int_eq(memcmp(&why, &again, sizeof why), 0);
        mmp_pt_fini(&pt);
    }
}
END_TEST

/* Table pages: the root, then fail. */
static int allocs_left;
static void *alloc_some(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    if (allocs_left-- <= 0)
        return NULL;
    void *p = aligned_alloc(bytes, bytes);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}
static void free_page(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)pa, (void)bytes;
    free(va);
}

START_TEST(out_of_memory_and_other_calls)
{
    struct mmp_pt_ops ops = {.alloc_table = alloc_some, .free_table = free_page};
    struct mmp_pt pt;
    struct mmp_pt_reason why;
    memset(&pt, 0, sizeof pt);
    allocs_left = 1;
    ck_assert_int_eq(mmp_pt_init(&pt, &X86, &ops), 0);
    ck_assert_int_eq(mmp_pt_map(&pt, 0x1000, 0x1000, K4, RW, 0), -MMP_ENOMEM);
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_NOMEM);
    ck_assert_int_eq(why.err, -MMP_ENOMEM);
    ck_assert_uint_eq(why.value, 0x1000);
    ck_assert_uint_eq(why.end, 0x1fff);

    struct mmp_pt_regs regs;
    ck_assert_int_eq(mmp_pt_regs(&pt, 0x1000, &regs), -MMP_EINVAL); /* PCID is 12 bits */
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_ID);
    ck_assert_uint_eq(why.value, 0x1000);
    ck_assert_uint_eq(why.limit, 0xfff);

    ck_assert_int_eq(mmp_pt_walk(&pt, 0, K4, NULL, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_NULL_ARG);

    ck_assert_int_eq(mmp_lazy_leave(&pt), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_LAZY_STATE);

    /* A miss is no failure: nothing recorded. */
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&pt, 0x5000, &l), -MMP_ENOENT);
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_LAZY_STATE);
    mmp_pt_fini(&pt);
    /* No live table: no reason to read, nothing written. */
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_map(&pt, 0x1000, 0x1000, K4, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(NULL, &why), -MMP_EINVAL);
}
END_TEST

struct bad_config {
    const char *what;
    struct mmp_pt_config cfg;
    int err;
    unsigned rule;
    uint64_t value;
    const char *text;
};

static const struct bad_config bad_configs[] = {
    {"format", {9, 4096, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL, MMP_PT_RULE_FORMAT, 9, "format 9"},
    {"flags", {MMP_PT_X86_64, 4096, 48, 0, 1u << 30, 0, 0, 0}, -MMP_EINVAL, MMP_PT_RULE_FLAGS,
     1u << 30, "0x40000000"},
    {"EPT flag on arm64", {MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EPT_AD, 0, 0, 0}, -MMP_EINVAL,
     MMP_PT_RULE_FLAG_FORMAT, MMP_PT_EPT_AD, "flag 0x200 is not for this format"},
    {"BBML2 on x86", {MMP_PT_X86_64, 4096, 48, 0, MMP_PT_BBML2, 0, 0, 0}, -MMP_EINVAL,
     MMP_PT_RULE_FLAG_FORMAT, MMP_PT_BBML2, "flag 0x2000"},
    {"flush_ranges", {MMP_PT_X86_64, 4096, 48, 0, 0, 9, 0, 0}, -MMP_EINVAL,
     MMP_PT_RULE_FLUSH_RANGES, 9, "flush_ranges 9 above 8"},
    {"max_leaf", {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 3000, 0}, -MMP_EINVAL,
     MMP_PT_RULE_MAX_LEAF, 3000, "max_leaf 0xbb8"},
    {"granule", {MMP_PT_X86_64, 8192, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL, MMP_PT_RULE_GEOMETRY,
     8192, "granule 8192, va_bits 48, pa_bits 0"},
    {"16K with 25 bits", {MMP_PT_ARM64_S1, 16384, 25, 0, 0, 0, 0, 0}, -MMP_ENOTSUP,
     MMP_PT_RULE_GEOMETRY, 16384, "the engine does not support"},
};

START_TEST(config_reasons)
{
    for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0]; i++) {
        const struct bad_config *b = &bad_configs[i];
        struct mmp_pt_reason why, why2;
        ck_assert_msg(mmp_pt_config_check(&b->cfg, NULL, &why) == b->err, "%s", b->what);
        ck_assert_msg(why.rule == b->rule && why.value == b->value && why.err == b->err,
                      "%s: rule %u value 0x%llx", b->what, why.rule,
                      (unsigned long long)why.value);
        /* init fails alike and keeps the reason in the storage. */
        struct mmp_pt pt;
        memset(&pt, 0x5a, sizeof pt);
        ck_assert_int_eq(mmp_pt_init(&pt, &b->cfg, NULL), b->err);
        ck_assert_int_eq(mmp_pt_reason(&pt, &why2), 0);
        ck_assert_int_eq(memcmp(&why, &why2, sizeof why), 0);
        char text[200];
        mmp_pt_why(&pt, text, sizeof text);
        ck_assert_msg(strstr(text, b->text), "%s: \"%s\" lacks \"%s\"", b->what, text, b->text);
        ck_assert_uint_eq(mmp_pt_root(&pt), 0); /* no table */
        mmp_pt_fini(&pt);                       /* nothing to free: does nothing */
    }
    struct mmp_pt_reason why;
    ck_assert_int_eq(mmp_pt_config_check(&X86, NULL, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_NONE);
    ck_assert_int_eq(mmp_pt_config_check(NULL, NULL, &why), -MMP_EINVAL);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_NULL_ARG);
    struct mmp_pt_ops no_free = {.alloc_table = alloc_some};
    ck_assert_int_eq(mmp_pt_config_check(&X86, &no_free, &why), -MMP_EINVAL);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_OPS);

    /* Init over a live table: -EBUSY, recorded in the live table. */
    struct mmp_pt pt;
    memset(&pt, 0, sizeof pt);
    ck_assert_int_eq(mmp_pt_init(&pt, &X86, NULL), 0);
    ck_assert_int_eq(mmp_pt_init(&pt, &X86, NULL), -MMP_EBUSY);
    ck_assert_int_eq(mmp_pt_reason(&pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_LIVE);
    ck_assert_int_eq(mmp_pt_map(&pt, 0, 0, K4, RW, 0), 0); /* still the table it was */
    mmp_pt_fini(&pt);
}
END_TEST

START_TEST(text_is_cut_like_snprintf)
{
    struct mmp_pt_reason r = {.rule = MMP_PT_RULE_PA_RANGE, .err = -MMP_ERANGE,
                              .value = 1ull << 54, .end = (1ull << 54) + 0xfff, .limit = 46};
    const char *want = "output range 0x40000000000000-0x40000000000fff beyond pa_bits 46";
    char buf[128];
    ck_assert_int_eq(mmp_pt_reason_text(&r, buf, sizeof buf), (int)strlen(want));
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(mmp_pt_reason_text(&r, NULL, 0), (int)strlen(want));
    memset(buf, 'z', sizeof buf);
    ck_assert_int_eq(mmp_pt_reason_text(&r, buf, 7), (int)strlen(want));
    ck_assert_str_eq(buf, "output");
    ck_assert_int_eq(buf[7], 'z'); /* nothing written past size */
    ck_assert_int_eq(mmp_pt_reason_text(&r, NULL, 5), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason_text(NULL, buf, 5), -MMP_EINVAL);
    /* Every rule has its own text. */
    for (unsigned k = 0; k <= MMP_PT_RULE_LAZY_DEPTH; k++) {
        struct mmp_pt_reason q = {.rule = k};
        ck_assert_int_gt(mmp_pt_reason_text(&q, buf, sizeof buf), 0);
        ck_assert_msg(!strstr(buf, "unknown rule"), "rule %u: \"%s\"", k, buf);
    }
    r.rule = 999;
    mmp_pt_reason_text(&r, buf, sizeof buf);
    ck_assert_str_eq(buf, "unknown rule 999");
}
END_TEST

Suite *mmp_suite_pt_reason(void)
{
    Suite *s = suite_create("pt_reason");
    MMP_ADD(s, every_rule_records_itself);
    MMP_ADD(s, out_of_memory_and_other_calls);
    MMP_ADD(s, config_reasons);
    MMP_ADD(s, text_is_cut_like_snprintf);
    return s;
}
