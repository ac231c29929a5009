/* SPDX-License-Identifier: MIT */
/*
 * Recording why a page-table call failed (include/mmport/pt_reason.h).
 * Only error paths call these: a successful call pays nothing.
 */
#ifndef MMPORT_CORE_PT_REASON_H
#define MMPORT_CORE_PT_REASON_H

#include <mmport/pt_reason.h>

struct pt;
struct mmp_pt_geom;

/* Record rule (enum mmp_pt_rule) and its values in pt; returns err. pt
 * may be a const table (lookups and walks record too: the storage is the
 * caller's, never a const object). */
int mmp_core_pt_fail(const struct pt *pt, int err, unsigned rule, uint64_t value, uint64_t end,
                     uint64_t limit) __attribute__((cold, noinline));

/* An error of the engine or a walk over [va, last] (-EEXIST, -ENOMEM,
 * -EAGAIN, -EIO, -ENOTSUP, -EINVAL of a misaligned table page): its rule
 * from the errno and the table's mode. Returns err. */
int mmp_core_pt_fail_op(const struct pt *pt, int err, uint64_t va, uint64_t last)
    __attribute__((cold, noinline));

/* A leaf the format refused: rule is what fmt->leaf returned. Returns -EINVAL. */
int mmp_core_pt_fail_attrs(const struct pt *pt, unsigned rule, uint32_t attrs)
    __attribute__((cold, noinline));

/* mmp_pt_init's checks of cfg and *ops (NULL: replaced by the default
 * ops), with g filled on success; on failure r holds the reason. */
int mmp_core_pt_config_check(const struct mmp_pt_config *cfg, const struct mmp_pt_ops **ops,
                             struct mmp_pt_geom *g, struct mmp_pt_reason *r);

#endif
