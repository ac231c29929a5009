/* SPDX-License-Identifier: MIT */
/*
 * The tuning file (layer 3; core/clear.c has the layers): format, parser
 * and the per-CPU-model file name. Depends on the kernel table only.
 */
#ifndef MMPORT_CORE_CLEAR_TUNING_H
#define MMPORT_CORE_CLEAR_TUNING_H

#include "clear_kernels.h"
#include "clear_text.h"

/* Largest tuning file accepted (bytes); a longer one is refused whole. */
#define MMP_CORE_TUNING_MAX (16u << 10)

/*
 * Applies the tuning file text[0, len) (modified in place; text[len] must
 * be writable) for CPU f onto *pol, whole or not at all: kernels must be in
 * the `usable` set (MMP_KBIT bits). Returns NULL when applied (pol->source
 * "tuning", cold_min_from "tuning" if it sets cold_min), else the reason it
 * was refused (valid until the next call).
 */
const char *mmp_core_clear_tuning_apply(char *text, size_t len, const struct mmp_cpu_features *f,
                                        uint32_t usable, struct mmp_clear_policy *pol);

/* mmp_clear_tuning_format() for CPU f. */
int mmp_core_clear_tuning_format_for(const struct mmp_clear_calibration *cal,
                                     const struct mmp_cpu_features *f, char *text, size_t cap);

/* Appends the "cpu <arch> <vendor> <family> <model> <midr>" line of a tuning file for f. */
void mmp_core_clear_put_cpu(struct mmp_core_sink *o, const struct mmp_cpu_features *f);

/* The five words of that line (the vendor as one word), separated by sep. */
void mmp_core_clear_put_cpu_id(struct mmp_core_sink *o, const struct mmp_cpu_features *f,
                               char sep);

/*
 * "<dir>/clear-<arch>-<vendor>-<family>-<model>-<midr>.conf", the
 * per-CPU-model tuning file in a cache directory (MMPORT_CACHE_DIR,
 * mmp_clear_tune(), mmport tune), into path. Returns its length, or
 * -MMP_ERANGE if cap is too small.
 */
int mmp_core_clear_cache_path(const char *dir, const struct mmp_cpu_features *f, char *path,
                              size_t cap);

#endif
