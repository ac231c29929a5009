/* SPDX-License-Identifier: MIT */
/* One map/unmap/protect call as the engine (core/pt_engine.h) sees it. */
#ifndef MMPORT_CORE_PT_OP_H
#define MMPORT_CORE_PT_OP_H

#include "pt_int.h"

enum { OP_MAP, OP_UNMAP, OP_PROT };
enum { V_REAL, V_INV, V_LEAF }; /* prepare pass: real table, or one the call would create */

#define OPF_REPLACE 1u
#define OPF_NOBLOCK 2u
#define OPF_NOCONT 4u
#define OPF_NOFOLD 8u

/* Entries handled per break-before-make chunk of protect/unmap; a multiple
 * of every contiguous run length (at most 128), so runs never straddle. */
#define CHUNK 128u

struct pt_op {
    struct pt *pt;
    const struct mmp_pt_geom *g;
    int kind;
    unsigned flags;
    uint32_t attrs;
    uint64_t delta; /* map: pa - va (mod 2^64) */
    uint64_t tmpl[MMP_PT_MAXLEV];
    void *res; /* reserved table pages, linked through entries 0/1 */
    uint64_t res_pa;
    uint64_t nres;
};

#endif
