/* SPDX-License-Identifier: MIT */
/* Usage counts and the text dump (freestanding: a tiny formatter, no libc). */
#include "pt_reason.h"
#include "pt_walk.h"

struct usage {
    const struct pt *pt;
    struct mmp_pt_usage *u;
    bool any[MMP_PT_MAXLEV]; /* the table at depth d has a valid entry */
};

static void usage_leaf(struct usage *w, unsigned d, unsigned i, uint64_t e)
{
    const struct mmp_pt_geom *g = &w->pt->g;
    w->u->mapped_bytes += (uint64_t)1 << g->shift[d];
    if (d + 1 == g->nlev)
        w->u->pages++;
    else
        w->u->blocks++;
    if ((e & g->cont_bit) && !(i & ((1u << g->cont[d]) - 1)))
        w->u->cont_runs++;
}

static int usage_entry(void *ctx, struct pt_slot *s)
{
    struct usage *w = (struct usage *)ctx;
    if (s->kind == PT_INV)
        return PT_SKIP;
    w->any[s->d] = true;
    if (s->kind == PT_LEAF) {
        usage_leaf(w, s->d, s->i, s->e);
        return PT_SKIP;
    }
    w->u->table_pages++;
    w->any[s->d + 1] = false;
    return pt_descend(s, pt_child(w->pt, s->e), PT_TABLE, false);
}

static int usage_span(void *ctx, struct pt_slot *s)
{
    struct usage *w = (struct usage *)ctx;
    const struct mmp_pt_geom *g = &w->pt->g;
    for (unsigned i = s->i, j = pt_idx(g, s->d, s->span_last); i <= j; i++) {
        uint64_t e = pt_ld_acquire(&s->t[i]);
        if (pt_kind(g, s->d, e) == PT_INV)
            continue;
        w->any[s->d] = true;
        usage_leaf(w, s->d, i, e);
    }
    return 0;
}

static int usage_post(void *ctx, struct pt_slot *s)
{
    struct usage *w = (struct usage *)ctx;
    if (!w->any[s->d + 1])
        w->u->empty_tables++;
    return 0;
}

static const struct pt_visitor usage_visitor = {
    .flags = PT_V_ACQUIRE | PT_V_CHECK, .entry = usage_entry, .span = usage_span,
    .post = usage_post};

int mmp_pt_usage(const struct mmp_pt *p, struct mmp_pt_usage *out)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    if (!out)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    __builtin_memset(out, 0, sizeof *out);
    out->table_pages = pt->g.root_bytes >> pt->g.granule_shift;
    struct usage w = {.pt = pt, .u = out};
    uint64_t last = pt_span_of(&pt->g, 0);
    int rc = pt_walk(&usage_visitor, &w, pt, pt->g.nlev, 0, pt->root, false, 0, last);
    return rc < 0 ? mmp_core_pt_fail_op(pt, rc, 0, last) : rc;
}

/* ---- formatting --------------------------------------------------------- */

struct buf {
    char s[160];
    unsigned n;
};

static void put(struct buf *b, const char *s)
{
    while (*s && b->n + 1 < sizeof b->s)
        b->s[b->n++] = *s++;
    b->s[b->n] = 0;
}

static void put_hex(struct buf *b, uint64_t v, unsigned digits)
{
    char t[19] = "0x";
    for (unsigned i = 0; i < digits; i++)
        t[2 + i] = "0123456789abcdef"[(v >> (4 * (digits - 1 - i))) & 0xf];
    t[2 + digits] = 0;
    put(b, t);
}

static void put_dec(struct buf *b, uint64_t v)
{
    char t[21];
    int i = 20;
    t[i] = 0;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b, t + i);
}

static void put_size(struct buf *b, uint64_t v)
{
    static const char unit[] = "KMGTPE";
    int u = -1;
    while (v >= 1024 && !(v & 1023) && u < 5) {
        v >>= 10;
        u++;
    }
    put_dec(b, v);
    if (u >= 0) {
        char s[2] = {unit[u], 0};
        put(b, s);
    }
}

static void put_attrs(struct buf *b, uint32_t a)
{
    char s[6] = "-----";
    if (a & MMP_PROT_READ) s[0] = 'r';
    if (a & MMP_PROT_WRITE) s[1] = 'w';
    if (a & MMP_PROT_EXEC) s[2] = 'x';
    if (a & MMP_PROT_USER) s[3] = 'u';
    if (a & MMP_PROT_UEXEC) s[3] = 'X'; /* EPT MBEC: the user column, execute */
    if (a & MMP_PROT_GLOBAL) s[4] = 'g';
    put(b, s);
    static const char *const mem[] = {" normal-wb", " normal-nc", " device", " wc", " wt", " wp"};
    unsigned m = (a & MMP_MEM_MASK) >> 8;
    put(b, mem[m < sizeof mem / sizeof mem[0] ? m : 2]);
}

struct dump {
    int (*out)(void *, const char *);
    void *arg;
    bool have;
    struct mmp_pt_leaf cur; /* region so far: va, pa, size = bytes */
    uint64_t leaf_size;
};

static const char *kind_name(unsigned k)
{
    return k == MMP_LEAF_CONT ? "cont" : k == MMP_LEAF_BLOCK ? "block" : "page";
}

static int emit(struct dump *dm)
{
    struct buf b = {.n = 0};
    put_hex(&b, dm->cur.va, 16);
    put(&b, "-");
    put_hex(&b, dm->cur.va + dm->cur.size - 1, 16);
    put(&b, " -> ");
    put_hex(&b, dm->cur.pa, 13);
    put(&b, " ");
    put_size(&b, dm->cur.size);
    put(&b, " ");
    put(&b, kind_name(dm->cur.kind));
    put(&b, "(");
    put_size(&b, dm->leaf_size);
    put(&b, " L");
    put_dec(&b, dm->cur.level);
    put(&b, ") ");
    put_attrs(&b, dm->cur.attrs);
    return dm->out(dm->arg, b.s);
}

static int dump_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct dump *dm = (struct dump *)arg;
    if (dm->have && dm->cur.va + dm->cur.size == l->va && dm->cur.pa + dm->cur.size == l->pa &&
        dm->cur.attrs == l->attrs && dm->cur.kind == l->kind && dm->leaf_size == l->size) {
        dm->cur.size += l->size;
        return 0;
    }
    if (dm->have) {
        int rc = emit(dm);
        if (rc)
            return rc;
    }
    dm->cur = *l;
    dm->leaf_size = l->size;
    dm->have = true;
    return 0;
}

int mmp_pt_dump(const struct mmp_pt *p, uint64_t va, uint64_t size,
                int (*out)(void *arg, const char *line), void *arg)
{
    if (!out)
        return pt_live(p) ? mmp_core_pt_fail(cpt_of(p), -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0)
                          : -MMP_EINVAL;
    struct dump dm = {.out = out, .arg = arg};
    int rc = mmp_pt_walk(p, va, size, dump_leaf, &dm);
    if (rc)
        return rc;
    if (dm.have && (rc = emit(&dm)) != 0)
        return rc;
    struct mmp_pt_usage u;
    if ((rc = mmp_pt_usage(p, &u)) != 0)
        return rc;
    struct buf b = {.n = 0};
    put(&b, "total: ");
    put_size(&b, u.mapped_bytes);
    put(&b, " mapped, ");
    put_dec(&b, u.pages);
    put(&b, " pages, ");
    put_dec(&b, u.cont_runs);
    put(&b, " contiguous runs, ");
    put_dec(&b, u.blocks);
    put(&b, " blocks, ");
    put_dec(&b, u.table_pages);
    put(&b, " table pages");
    return out(arg, b.s);
}
