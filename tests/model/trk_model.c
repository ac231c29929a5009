/* SPDX-License-Identifier: MIT */
/* The tracking reference model (trk_model.h): an unsorted set per kind;
 * inputs record a few dozen pages at most. */
#include "trk_model.h"

#include <stdlib.h>

void trk_model_init(struct trk_model *m)
{
    for (int k = 0; k < 2; k++)
        m->pg[k] = NULL, m->n[k] = m->cap[k] = 0;
}

void trk_model_free(struct trk_model *m)
{
    for (int k = 0; k < 2; k++)
        free(m->pg[k]);
    trk_model_init(m);
}

void trk_model_add(struct trk_model *m, int kind, uint64_t page)
{
    for (size_t i = 0; i < m->n[kind]; i++)
        if (m->pg[kind][i] == page)
            return;
    if (m->n[kind] == m->cap[kind]) {
        m->cap[kind] = m->cap[kind] ? 2 * m->cap[kind] : 16;
        m->pg[kind] = realloc(m->pg[kind], m->cap[kind] * sizeof *m->pg[kind]);
        if (!m->pg[kind])
            abort();
    }
    m->pg[kind][m->n[kind]++] = page;
}

void trk_model_drop(struct trk_model *m, int kind, uint64_t va, uint64_t size)
{
    size_t w = 0;
    for (size_t i = 0; i < m->n[kind]; i++)
        if (m->pg[kind][i] - va >= size)
            m->pg[kind][w++] = m->pg[kind][i];
    m->n[kind] = w;
}

int trk_model_pass(struct trk_model *m, int kind, uint64_t va, uint64_t gran, uint64_t n,
                   const uint64_t *bm, uint64_t *missed)
{
    int rc = 0;
    for (size_t i = 0; i < m->n[kind] && !rc; i++) {
        uint64_t p = m->pg[kind][i], j = (p - va) / gran;
        if (p - va < n * gran && !(bm[j / 64] >> (j % 64) & 1)) {
            *missed = p;
            rc = -1;
        }
    }
    trk_model_drop(m, kind, va, n * gran);
    return rc;
}
