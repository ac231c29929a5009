/* SPDX-License-Identifier: MIT */
/*
 * A reference model of a page table, independent of the engine: a sorted
 * list of extents (va, size, pa, attrs). Operations mirror mmp_pt_map,
 * unmap and protect semantics at the level a caller sees (translations, not
 * descriptors); comparison folds the engine's leaves into the same extents.
 */
#ifndef MMPORT_TESTS_PT_MODEL_H
#define MMPORT_TESTS_PT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <mmport/pt.h>

struct pt_model_extent {
    uint64_t va, size, pa;
    uint32_t attrs;
};

struct pt_model {
    struct pt_model_extent *ext;
    size_t n, cap;
};

void pt_model_init(struct pt_model *m);
void pt_model_free(struct pt_model *m);
/* True if any byte of [va, va+size) is mapped. */
int pt_model_any_mapped(const struct pt_model *m, uint64_t va, uint64_t size);
void pt_model_map(struct pt_model *m, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs);
void pt_model_unmap(struct pt_model *m, uint64_t va, uint64_t size);
void pt_model_protect(struct pt_model *m, uint64_t va, uint64_t size, uint32_t attrs);
/* Translation of va: 0 with pa and attrs filled in, or -1 if unmapped. */
int pt_model_lookup(const struct pt_model *m, uint64_t va, uint64_t *pa, uint32_t *attrs);

/*
 * Compares the whole table in [va, va+size) with the model. Returns 0, or
 * -1 with a description of the first difference in msg.
 */
int pt_model_compare(const struct pt_model *m, const struct mmp_pt *pt, uint64_t va,
                     uint64_t size, char *msg, size_t msglen);

/*
 * Structural rules a caller can see through mmp_pt_walk: every leaf is
 * aligned (va and pa) to its size; leaves marked contiguous form whole,
 * naturally aligned runs of @p run_len leaves of one size, physically
 * contiguous, with identical attributes. run_len_at(size) gives the run
 * length for a leaf size (0 where the format has no contiguous runs).
 */
int pt_model_check_leaves(const struct mmp_pt *pt, uint64_t va, uint64_t size,
                          unsigned (*run_len_at)(uint64_t leaf_size, void *arg), void *arg,
                          char *msg, size_t msglen);

#endif
