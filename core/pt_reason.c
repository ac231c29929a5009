/* SPDX-License-Identifier: MIT */
/*
 * Why a page-table call failed: recording the rule (error paths only),
 * the configuration checks mmp_pt_init applies, and the English text.
 */
#include "pt_int.h"
#include "pt_reason.h"

/* ---- recording ------------------------------------------------------------ */

int mmp_core_pt_fail(const struct pt *cpt, int err, unsigned rule, uint64_t value, uint64_t end,
                     uint64_t limit)
{
    /* Word by word, atomically: shared tables fail from many threads. */
    struct pt *pt = (struct pt *)(uintptr_t)cpt;
    AO_store(&pt->why[0], (AO_t)((uint64_t)(uint32_t)err << 32 | rule));
    AO_store(&pt->why[1], (AO_t)value);
    AO_store(&pt->why[2], (AO_t)end);
    AO_store(&pt->why[3], (AO_t)limit);
    return err;
}

/* Is [va, last] one slot a shared call could change (a leaf size of the
 * table, aligned)? Tells "not one slot" from "a slot over a subtree". */
static bool one_slot(const struct mmp_pt_geom *g, uint64_t va, uint64_t last)
{
    for (unsigned d = 0; d < g->nlev; d++) {
        uint64_t sz = pt_slot_size(g, d);
        if (g->leaf_ok[d] && last - va + 1 == sz && !(va & (sz - 1)))
            return true;
    }
    return false;
}

int mmp_core_pt_fail_op(const struct pt *pt, int err, uint64_t va, uint64_t last)
{
    unsigned rule;
    switch (-err) {
    case MMP_EEXIST: rule = MMP_PT_RULE_EXISTS; break;
    case MMP_ENOMEM: rule = MMP_PT_RULE_NOMEM; break;
    case MMP_EAGAIN: rule = MMP_PT_RULE_CONTENDED; break;
    case MMP_EIO: rule = MMP_PT_RULE_CORRUPT; break;
    case MMP_ENOTSUP:
        rule = one_slot(&pt->g, va, last) ? MMP_PT_RULE_SHARED_SUBTREE
                                          : MMP_PT_RULE_SHARED_ONE_SLOT;
        break;
    case MMP_EINVAL: /* the engine's only one: a table page it cannot link */
        return mmp_core_pt_fail(pt, err, MMP_PT_RULE_TABLE_ALIGN, 0, 0,
                                (uint64_t)1 << pt->g.granule_shift);
    default: return err; /* a walk callback's own value: not the library's */
    }
    return mmp_core_pt_fail(pt, err, rule, va, last, 0);
}

int mmp_core_pt_fail_attrs(const struct pt *pt, unsigned rule, uint32_t attrs)
{
    uint64_t v = attrs;
    if (rule == MMP_PT_RULE_ATTRS_UNKNOWN)
        v = attrs & ~(uint32_t)(MMP_PROT_MASK | MMP_MEM_MASK | MMP_SW_MASK | MMP_SW_SET);
    else if (rule == MMP_PT_RULE_SW_BITS)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, rule, attrs & MMP_SW_MASK, 0, pt_sw_count(&pt->g));
    else if (rule == MMP_PT_RULE_MEM_TYPE)
        v = attrs & MMP_MEM_MASK;
    return mmp_core_pt_fail(pt, -MMP_EINVAL, rule, v, 0, 0);
}

/* ---- the configuration ------------------------------------------------------ */

#define CFG_EPT_FLAGS (MMP_PT_EPT_XO | MMP_PT_EPT_AD | MMP_PT_EPT_MBEC)
#define CFG_FLAGS                                                                  \
    (MMP_PT_NO_BLOCKS | MMP_PT_NO_CONT | MMP_PT_NO_FOLD | MMP_PT_FLUSH_ALL_OVER |      \
     MMP_PT_KEEP_TABLES | MMP_PT_EL2 | MMP_PT_S2FWB | MMP_PT_TRACK_HW | MMP_PT_SHARED |      \
     MMP_PT_BBML2 | MMP_PT_X86_SIZE_BBM | MMP_PT_GENERIC_DEPTH | MMP_PT_FLUSH_CONTEXT |      \
     CFG_EPT_FLAGS)

static int cfg_fail(struct mmp_pt_reason *r, int err, unsigned rule, uint64_t value,
                    uint64_t end, uint64_t limit)
{
    *r = (struct mmp_pt_reason){.rule = rule, .err = err, .value = value, .end = end,
                                .limit = limit};
    return err;
}

int mmp_core_pt_config_check(const struct mmp_pt_config *cfg, const struct mmp_pt_ops **ops,
                             struct mmp_pt_geom *g, struct mmp_pt_reason *r)
{
    *r = (struct mmp_pt_reason){0};
    if (!cfg)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    uint32_t fl = cfg->flags;
    if (fl & ~(uint32_t)CFG_FLAGS)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_FLAGS, fl & ~(uint32_t)CFG_FLAGS, 0, 0);
    if (cfg->flush_ranges > PT_MAX_RANGES)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_FLUSH_RANGES, cfg->flush_ranges, 0,
                        PT_MAX_RANGES);
    enum mmp_pt_format f = cfg->format;
    bool x86 = f == MMP_PT_X86_64 || f == MMP_PT_X86_NPT;
    bool arm = f == MMP_PT_ARM64_S1 || f == MMP_PT_ARM64_S2;
    if (!x86 && !arm && f != MMP_PT_X86_EPT)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_FORMAT, (uint64_t)f, 0, 0);
    uint32_t wrong = (f != MMP_PT_X86_EPT ? fl & CFG_EPT_FLAGS : 0) |
                     (!x86 ? fl & MMP_PT_X86_SIZE_BBM : 0) | /* an AMD erratum */
                     (!arm ? fl & MMP_PT_BBML2 : 0);
    if (wrong)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_FLAG_FORMAT, wrong & -wrong, 0, 0);
    if (!*ops)
        *ops = mmp_host_pt_default_ops();
    if (!*ops || !(*ops)->alloc_table || !(*ops)->free_table)
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_OPS, 0, 0, 0);
    if ((fl & MMP_PT_SHARED) && !(*ops)->retire_table && !mmp_host_epoch_ok())
        return cfg_fail(r, -MMP_EINVAL, MMP_PT_RULE_SHARED_RETIRE, 0, 0, 0);
    unsigned rule;
    int rc = mmp_core_pt_geom(g, cfg, &rule);
    if (rc && rule == MMP_PT_RULE_MAX_LEAF)
        return cfg_fail(r, rc, rule, cfg->max_leaf, 0, (uint64_t)1 << g->granule_shift);
    if (rc)
        return cfg_fail(r, rc, MMP_PT_RULE_GEOMETRY, cfg->granule,
                        (uint64_t)cfg->va_bits << 32 | cfg->pa_bits, fl);
    return 0;
}

int mmp_pt_config_check(const struct mmp_pt_config *cfg, const struct mmp_pt_ops *ops,
                        struct mmp_pt_reason *why)
{
    struct mmp_pt_geom g;
    struct mmp_pt_reason r;
    int rc = mmp_core_pt_config_check(cfg, &ops, &g, &r);
    if (why)
        *why = r;
    return rc;
}

/* ---- reading ---------------------------------------------------------------- */

int mmp_pt_reason(const struct mmp_pt *p, struct mmp_pt_reason *out)
{
    if (!p || !out)
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    mmp_host_assume_init(&pt->state, sizeof pt->state); /* storage may be garbage, as init's */
    if (pt->state != pt_state_of(p, PT_LIVE) && pt->state != pt_state_of(p, PT_FAILED))
        return -MMP_EINVAL;
    uint64_t w0 = (uint64_t)AO_load(&pt->why[0]);
    out->rule = (uint32_t)w0;
    out->err = (int32_t)(uint32_t)(w0 >> 32);
    out->value = (uint64_t)AO_load(&pt->why[1]);
    out->end = (uint64_t)AO_load(&pt->why[2]);
    out->limit = (uint64_t)AO_load(&pt->why[3]);
    return 0;
}

int mmp_pt_why(const struct mmp_pt *pt, char *buf, size_t size)
{
    struct mmp_pt_reason r;
    int rc = mmp_pt_reason(pt, &r);
    return rc ? rc : mmp_pt_reason_text(&r, buf, size);
}

/* ---- the text (no libc) ------------------------------------------------------ */

struct text {
    char *buf;
    size_t size, n; /* n: the whole length, also past size */
};

static void put(struct text *t, const char *s)
{
    for (; *s; s++, t->n++)
        if (t->n + 1 < t->size)
            t->buf[t->n] = *s;
}

static void put_hex(struct text *t, uint64_t v)
{
    char d[19];
    unsigned i = sizeof d - 1;
    d[i] = 0;
    do
        d[--i] = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    d[--i] = 'x';
    d[--i] = '0';
    put(t, d + i);
}

static void put_dec(struct text *t, uint64_t v)
{
    char d[21];
    unsigned i = sizeof d - 1;
    d[i] = 0;
    do
        d[--i] = (char)('0' + v % 10);
    while (v /= 10);
    put(t, d + i);
}

static void put_range(struct text *t, const char *what, const struct mmp_pt_reason *r)
{
    put(t, what);
    put(t, " range ");
    put_hex(t, r->value);
    put(t, "-");
    put_hex(t, r->end);
}

/* Rules whose text is one phrase and the attribute word. */
static const char *attr_rule(unsigned rule)
{
    switch (rule) {
    case MMP_PT_RULE_READ_NEEDED: return "every leaf needs MMP_PROT_READ";
    case MMP_PT_RULE_EPT_WRITE_NEEDS_READ:
        return "EPT: WRITE needs READ (a write-only entry is an EPT misconfiguration)";
    case MMP_PT_RULE_EPT_EXEC_ONLY:
        return "EPT: execute without READ needs MMP_PT_EPT_XO (a CPU that allows "
               "execute-only)";
    case MMP_PT_RULE_NO_USER_GLOBAL:
        return "USER and GLOBAL are for stage-1 tables: this table (stage 2, EPT, NPT or "
               "MMP_PT_EL2) rejects them";
    case MMP_PT_RULE_UEXEC: return "MMP_PROT_UEXEC needs an EPT table made with MMP_PT_EPT_MBEC";
    default: return NULL;
    }
}

static void text_of(struct text *t, const struct mmp_pt_reason *r)
{
    const char *a = attr_rule(r->rule);
    if (a) {
        put(t, a);
        put(t, ", attrs ");
        put_hex(t, r->value);
        return;
    }
    switch (r->rule) {
    case MMP_PT_RULE_NONE: put(t, "no failure recorded"); return;
    case MMP_PT_RULE_NULL_ARG: put(t, "a NULL argument"); return;
    case MMP_PT_RULE_FLAGS: put(t, "unknown flag bits "); put_hex(t, r->value); return;
    case MMP_PT_RULE_SIZE_ZERO: put(t, "size is 0"); return;
    case MMP_PT_RULE_VA_ALIGN:
    case MMP_PT_RULE_PA_ALIGN:
    case MMP_PT_RULE_SIZE_ALIGN:
        put(t, r->rule == MMP_PT_RULE_VA_ALIGN   ? "input address "
               : r->rule == MMP_PT_RULE_PA_ALIGN ? "output address "
                                                 : "size ");
        put_hex(t, r->value);
        put(t, " is not aligned to the ");
        put_dec(t, r->limit);
        put(t, "-byte granule");
        return;
    case MMP_PT_RULE_VA_WRAP:
    case MMP_PT_RULE_PA_WRAP:
        put(t, r->rule == MMP_PT_RULE_VA_WRAP ? "input address " : "output address ");
        put_hex(t, r->value);
        put(t, " + size ");
        put_hex(t, r->limit);
        put(t, " wraps past 2^64");
        return;
    case MMP_PT_RULE_VA_RANGE:
    case MMP_PT_RULE_PA_RANGE:
        put_range(t, r->rule == MMP_PT_RULE_VA_RANGE ? "input" : "output", r);
        put(t, r->rule == MMP_PT_RULE_VA_RANGE ? " beyond va_bits " : " beyond pa_bits ");
        put_dec(t, r->limit);
        return;
    case MMP_PT_RULE_VA_CANONICAL:
        put_range(t, "input", r);
        put(t, " is not canonical for ");
        put_dec(t, r->limit);
        put(t, "-bit addresses (both ends below 2^");
        put_dec(t, r->limit - 1);
        put(t, ", or both in the sign-extended upper half)");
        return;
    case MMP_PT_RULE_ATTRS_UNKNOWN:
        put(t, "attribute bits ");
        put_hex(t, r->value);
        put(t, " are not known to the format");
        return;
    case MMP_PT_RULE_MEM_TYPE:
        put(t, "memory type ");
        put_hex(t, r->value);
        put(t, " is not one the format has (WC, WT and WP are EPT only)");
        return;
    case MMP_PT_RULE_EXISTS:
        put_range(t, "input", r);
        put(t, " holds a mapping (MMP_MAP_REPLACE not given, or another thread mapped it)");
        return;
    case MMP_PT_RULE_SHARED_ONE_SLOT:
        put(t, "shared table: ");
        put_range(t, "input", r);
        put(t, " is not one leaf slot (a leaf size of the table, aligned to it)");
        return;
    case MMP_PT_RULE_SHARED_SUBTREE:
        put(t, "shared table: the slot ");
        put_range(t, "input", r);
        put(t, " holds a table with entries, which a shared call does not replace");
        return;
    case MMP_PT_RULE_CONTENDED:
        put(t, "shared table: another writer is changing an entry for ");
        put_range(t, "input", r);
        put(t, "; retry");
        return;
    case MMP_PT_RULE_NOMEM:
        put(t, "a table allocation failed (alloc_table) for ");
        put_range(t, "input", r);
        return;
    case MMP_PT_RULE_TABLE_ALIGN:
        put(t, "alloc_table returned a page not aligned to its ");
        put_dec(t, r->limit);
        put(t, " bytes");
        return;
    case MMP_PT_RULE_CORRUPT:
        put(t, "the table is corrupted (a reserved descriptor or a cycle) at or on the way to ");
        put_range(t, "input", r);
        return;
    case MMP_PT_RULE_ID:
        put(t, "id ");
        put_hex(t, r->value);
        put(t, " is wider than the format's (largest ");
        put_hex(t, r->limit);
        put(t, ")");
        return;
    case MMP_PT_RULE_LIVE:
        put(t, "the storage holds a live table: mmp_pt_fini it first");
        return;
    case MMP_PT_RULE_FORMAT: put(t, "unknown format "); put_dec(t, r->value); return;
    case MMP_PT_RULE_FLAG_FORMAT:
        put(t, "flag ");
        put_hex(t, r->value);
        put(t, " is not for this format");
        return;
    case MMP_PT_RULE_FLUSH_RANGES:
        put(t, "flush_ranges ");
        put_dec(t, r->value);
        put(t, " above ");
        put_dec(t, r->limit);
        return;
    case MMP_PT_RULE_MAX_LEAF:
        put(t, "max_leaf ");
        put_hex(t, r->value);
        put(t, " is not a power of two >= the ");
        put_dec(t, r->limit);
        put(t, "-byte granule");
        return;
    case MMP_PT_RULE_OPS:
        put(t, "ops: NULL in a freestanding build, or without alloc_table or free_table");
        return;
    case MMP_PT_RULE_SHARED_RETIRE:
        put(t, "MMP_PT_SHARED needs ops->retire_table in a build without the epoch scheme");
        return;
    case MMP_PT_RULE_GEOMETRY:
        put(t, "granule ");
        put_dec(t, r->value);
        put(t, ", va_bits ");
        put_dec(t, r->end >> 32);
        put(t, ", pa_bits ");
        put_dec(t, (uint32_t)r->end);
        put(t, ", flags ");
        put_hex(t, r->limit);
        put(t, r->err == -MMP_ENOTSUP ? ": a combination the engine does not support"
                                      : ": not a combination the format has");
        return;
    case MMP_PT_RULE_TRACK_MODE:
        put(t, "the table keeps no access state (x86 A flags, arm64 AF, EPT with MMP_PT_EPT_AD)");
        return;
    case MMP_PT_RULE_TRACK_CHUNK:
        put(t, "chunk ");
        put_hex(t, r->value);
        put(t, " is not a multiple of the ");
        put_dec(t, r->limit);
        put(t, "-byte granule");
        return;
    case MMP_PT_RULE_CANCELLED:
        put(t, "cancelled by the yield callback after ");
        put_hex(t, r->value);
        put(t, " bytes");
        return;
    case MMP_PT_RULE_NOT_WRITABLE:
        put(t, "a write fault at ");
        put_hex(t, r->value);
        put(t, ", whose leaf is not writable");
        return;
    case MMP_PT_RULE_LAZY_STATE:
        put(t, r->err == -MMP_EBUSY ? "mmp_lazy_leave of the last level while paused"
                                    : "not inside a lazy section (or not paused)");
        return;
    case MMP_PT_RULE_LAZY_DEPTH:
        put(t, "lazy nesting deeper than ");
        put_dec(t, r->limit);
        return;
    case MMP_PT_RULE_SW_BITS:
        put(t, "software bits ");
        put_hex(t, r->value);
        put(t, ": the format has ");
        put_dec(t, r->limit);
        put(t, " (MMP_SW(0) .. MMP_SW(");
        put_dec(t, r->limit ? r->limit - 1 : 0);
        put(t, "))");
        return;
    case MMP_PT_RULE_CALL_SHARED:
        put(t, "a shared call (MMP_CALL_SHARED) on a table made without MMP_PT_SHARED");
        return;
    case MMP_PT_RULE_CALL_LAZY:
        put(t, "a shared call while a lazy section (depth ");
        put_dec(t, r->value);
        put(t, ") is open on the table");
        return;
    case MMP_PT_RULE_MEMCACHE:
        if (r->limit == MMP_PT_MEMCACHE_PAGES && r->value > r->limit) {
            put(t, "memcache holds ");
            put_dec(t, r->value);
            put(t, " pages, more than MMP_PT_MEMCACHE_PAGES (");
            put_dec(t, r->limit);
            put(t, ")");
        } else {
            put(t, "memcache page ");
            put_hex(t, r->value);
            put(t, " is not aligned to the granule (");
            put_dec(t, r->limit);
            put(t, " bytes)");
        }
        return;
    case MMP_PT_RULE_MEMCACHE_DRY:
        put(t, "the call's memcache ran dry (");
        put_dec(t, r->limit);
        put(t, " pages left) for ");
        put_range(t, "input", r);
        return;
    default: put(t, "unknown rule "); put_dec(t, r->rule); return;
    }
}

int mmp_pt_reason_text(const struct mmp_pt_reason *r, char *buf, size_t size)
{
    if (!r || (!buf && size))
        return -MMP_EINVAL;
    struct text t = {.buf = buf, .size = size};
    text_of(&t, r);
    if (size)
        buf[t.n < size ? t.n : size - 1] = 0;
    return t.n > 0x7fffffff ? 0x7fffffff : (int)t.n;
}
