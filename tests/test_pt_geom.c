/* SPDX-License-Identifier: MIT */
/*
 * Table geometry at the edges of the documented ranges: the stage-2 64K
 * granule with a 32/33-bit IPA starts at level 2 with a small root.
 */
#include "pt_harness.h"

/* stage 2 with 64K granule and IPA 32/33 (documented valid)
 * starts at level 2 with a small root, as VTCR_EL2 allows. */
START_TEST(s2_64k_small_ipa)
{
    for (uint32_t ipa = 32; ipa <= 33; ipa++) {
        struct mmp_pt_config c = {MMP_PT_ARM64_S2, 65536, ipa, 0, 0, 0, 0, 0};
        struct tenv *e = tenv_new(&c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t G = 65536, top = (1ull << ipa) - G;
        ck_assert_int_eq(mmp_pt_map(&e->pt, G, 2 * G, G, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_map(&e->pt, top, 4 * G, G, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 1ull << ipa, 0, G, RW, 0), -MMP_ERANGE);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, top, &l), 0);
        ck_assert_uint_eq(l.pa, 4 * G);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, G, G), 0);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, top, G), 0);
        tenv_free(e);
    }
}
END_TEST

Suite *mmp_suite_pt_geom(void)
{
    Suite *s = suite_create("pt_geom");
    MMP_ADD(s, s2_64k_small_ipa);
    return s;
}
