/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_model.h"

void pt_model_init(struct pt_model *m)
{
    memset(m, 0, sizeof *m);
}

void pt_model_free(struct pt_model *m)
{
    free(m->ext);
    memset(m, 0, sizeof *m);
}

static void insert_at(struct pt_model *m, size_t i, struct pt_model_extent e)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->ext = realloc(m->ext, m->cap * sizeof *m->ext);
        if (!m->ext)
            abort();
    }
    memmove(&m->ext[i + 1], &m->ext[i], (m->n - i) * sizeof *m->ext);
    m->ext[i] = e;
    m->n++;
}

static void remove_at(struct pt_model *m, size_t i)
{
    memmove(&m->ext[i], &m->ext[i + 1], (m->n - i - 1) * sizeof *m->ext);
    m->n--;
}

/* Splits extents so that no extent straddles @p at. */
static void cut(struct pt_model *m, uint64_t at)
{
    for (size_t i = 0; i < m->n; i++) {
        struct pt_model_extent *e = &m->ext[i];
        if (e->va < at && at - e->va < e->size) {
            uint64_t left = at - e->va;
            struct pt_model_extent right = {at, e->size - left, e->pa + left, e->attrs};
            e->size = left;
            insert_at(m, i + 1, right);
            return;
        }
    }
}

int pt_model_any_mapped(const struct pt_model *m, uint64_t va, uint64_t size)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct pt_model_extent *e = &m->ext[i];
        if (e->va < va + size && va < e->va + e->size)
            return 1;
    }
    return 0;
}

void pt_model_unmap(struct pt_model *m, uint64_t va, uint64_t size)
{
    cut(m, va);
    cut(m, va + size);
    for (size_t i = 0; i < m->n;) {
        if (m->ext[i].va >= va && m->ext[i].va + m->ext[i].size <= va + size)
            remove_at(m, i);
        else
            i++;
    }
}

void pt_model_map(struct pt_model *m, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs)
{
    pt_model_unmap(m, va, size);
    size_t i = 0;
    while (i < m->n && m->ext[i].va < va)
        i++;
    insert_at(m, i, (struct pt_model_extent){va, size, pa, attrs});
}

void pt_model_protect(struct pt_model *m, uint64_t va, uint64_t size, uint32_t attrs)
{
    cut(m, va);
    cut(m, va + size);
    for (size_t i = 0; i < m->n; i++)
        if (m->ext[i].va >= va && m->ext[i].va + m->ext[i].size <= va + size)
            m->ext[i].attrs = attrs;
}

int pt_model_lookup(const struct pt_model *m, uint64_t va, uint64_t *pa, uint32_t *attrs)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct pt_model_extent *e = &m->ext[i];
        if (va >= e->va && va - e->va < e->size) {
            *pa = e->pa + (va - e->va);
            *attrs = e->attrs;
            return 0;
        }
    }
    return -1;
}

/* Collects the engine's leaves, merged into maximal extents. */
struct collect {
    struct pt_model out;
};

static int collect_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct collect *c = arg;
    struct pt_model *o = &c->out;
    if (o->n) {
        struct pt_model_extent *last = &o->ext[o->n - 1];
        if (last->va + last->size == l->va && last->pa + last->size == l->pa &&
            last->attrs == l->attrs) {
            last->size += l->size;
            return 0;
        }
    }
    insert_at(o, o->n, (struct pt_model_extent){l->va, l->size, l->pa, l->attrs});
    return 0;
}

/* The model's extents clipped to the window and merged the same way. */
static void normalise(const struct pt_model *m, uint64_t va, uint64_t size,
                      struct pt_model *out)
{
    pt_model_init(out);
    for (size_t i = 0; i < m->n; i++) {
        struct pt_model_extent e = m->ext[i];
        if (e.va + e.size <= va || e.va >= va + size)
            continue;
        if (e.va < va) {
            e.pa += va - e.va;
            e.size -= va - e.va;
            e.va = va;
        }
        if (e.va + e.size > va + size)
            e.size = va + size - e.va;
        if (out->n) {
            struct pt_model_extent *last = &out->ext[out->n - 1];
            if (last->va + last->size == e.va && last->pa + last->size == e.pa &&
                last->attrs == e.attrs) {
                last->size += e.size;
                continue;
            }
        }
        insert_at(out, out->n, e);
    }
}

static int same_extent(const struct pt_model_extent *a, const struct pt_model_extent *b)
{
    return a->va == b->va && a->size == b->size && a->pa == b->pa && a->attrs == b->attrs;
}

int pt_model_compare(const struct pt_model *m, const struct mmp_pt *pt, uint64_t va,
                     uint64_t size, char *msg, size_t msglen)
{
    struct collect c;
    struct pt_model want;
    pt_model_init(&c.out);
    int rc = mmp_pt_walk(pt, va, size, collect_leaf, &c);
    if (rc) {
        snprintf(msg, msglen, "walk failed: %d", rc);
        pt_model_free(&c.out);
        return -1;
    }
    /* Leaves at the window's edges may extend beyond it: clip them. */
    struct pt_model got;
    normalise(&c.out, va, size, &got);
    pt_model_free(&c.out);
    normalise(m, va, size, &want);
    rc = 0;
    size_t n = got.n > want.n ? got.n : want.n;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i >= got.n || i >= want.n || !same_extent(&got.ext[i], &want.ext[i])) {
            const struct pt_model_extent *g = i < got.n ? &got.ext[i] : NULL;
            const struct pt_model_extent *w = i < want.n ? &want.ext[i] : NULL;
            snprintf(msg, msglen,
                     "extent %zu: table va=%#llx size=%#llx pa=%#llx attrs=%#x, "
                     "model va=%#llx size=%#llx pa=%#llx attrs=%#x",
                     i, g ? (unsigned long long)g->va : 0, g ? (unsigned long long)g->size : 0,
                     g ? (unsigned long long)g->pa : 0, g ? g->attrs : 0,
                     w ? (unsigned long long)w->va : 0, w ? (unsigned long long)w->size : 0,
                     w ? (unsigned long long)w->pa : 0, w ? w->attrs : 0);
            rc = -1;
        }
    }
    pt_model_free(&got);
    pt_model_free(&want);
    return rc;
}

struct leaf_rules {
    unsigned (*run_len_at)(uint64_t, void *);
    void *arg;
    /* the contiguous run being followed */
    uint64_t run_va, run_pa, run_leaf;
    uint32_t run_attrs;
    unsigned run_len, run_seen;
    char *msg;
    size_t msglen;
};

static int check_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct leaf_rules *r = arg;
    if ((l->va | l->pa) & (l->size - 1)) {
        snprintf(r->msg, r->msglen, "leaf va=%#llx pa=%#llx not aligned to its size %#llx",
                 (unsigned long long)l->va, (unsigned long long)l->pa,
                 (unsigned long long)l->size);
        return 1;
    }
    if (r->run_seen) { /* inside a run: this leaf must continue it */
        uint64_t off = (uint64_t)r->run_seen * r->run_leaf;
        if (l->kind != MMP_LEAF_CONT || l->size != r->run_leaf || l->va != r->run_va + off ||
            l->pa != r->run_pa + off || l->attrs != r->run_attrs) {
            snprintf(r->msg, r->msglen, "contiguous run at va=%#llx broken at va=%#llx",
                     (unsigned long long)r->run_va, (unsigned long long)l->va);
            return 1;
        }
        if (++r->run_seen == r->run_len)
            r->run_seen = 0;
        return 0;
    }
    if (l->kind != MMP_LEAF_CONT)
        return 0;
    unsigned len = r->run_len_at ? r->run_len_at(l->size, r->arg) : 0;
    uint64_t span = (uint64_t)len * l->size;
    if (!len || (l->va & (span - 1)) || (l->pa & (span - 1))) {
        snprintf(r->msg, r->msglen,
                 "contiguous leaf va=%#llx pa=%#llx size=%#llx does not start an aligned run of %u",
                 (unsigned long long)l->va, (unsigned long long)l->pa,
                 (unsigned long long)l->size, len);
        return 1;
    }
    r->run_va = l->va;
    r->run_pa = l->pa;
    r->run_leaf = l->size;
    r->run_attrs = l->attrs;
    r->run_len = len;
    r->run_seen = len > 1 ? 1 : 0;
    return 0;
}

int pt_model_check_leaves(const struct mmp_pt *pt, uint64_t va, uint64_t size,
                          unsigned (*run_len_at)(uint64_t leaf_size, void *arg), void *arg,
                          char *msg, size_t msglen)
{
    struct leaf_rules r = {.run_len_at = run_len_at, .arg = arg, .msg = msg, .msglen = msglen};
    int rc = mmp_pt_walk(pt, va, size, check_leaf, &r);
    if (!rc && r.run_seen) {
        snprintf(msg, msglen, "contiguous run at va=%#llx ends after %u of %u leaves",
                 (unsigned long long)r.run_va, r.run_seen, r.run_len);
        rc = 1;
    }
    return rc ? -1 : 0;
}
