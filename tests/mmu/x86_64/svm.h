/* SPDX-License-Identifier: MIT */
/* AMD SVM host for the NPT targets (svm.c). */
#ifndef MMPORT_TESTS_MMU_X86_64_SVM_H
#define MMPORT_TESTS_MMU_X86_64_SVM_H

#include <stdint.h>

#include "payload.h"

#define SVM_EXIT_VMMCALL 0x81u
#define SVM_EXIT_NPF 0x400u
/* EXITINFO1 of a nested page fault (APM vol. 2 15.25.6). */
#define NPF_P 0x1ull
#define NPF_W 0x2ull
#define NPF_U 0x4ull
#define NPF_ID 0x10ull
#define NPF_FINAL (1ull << 32) /* fault on the final guest-physical address */
#define NPF_WALK (1ull << 33)  /* fault on a guest page-table access */

struct pl_svm_exit {
    uint64_t code, info1, info2, rax;
};

enum { PL_SVM_LOAD, PL_SVM_STORE, PL_SVM_EXEC };

/** Enable SVM and build the VMCB and the guest's tables; -1 with *why if the CPU lacks SVM/NPT. */
int pl_svm_init(const char **why);
/** The nested table the next VMRUN uses (flushes the guest's TLB once). */
void pl_svm_set_ncr3(uint64_t ncr3);
/** Have the next VMRUN flush the guest's TLB entries (TLB_CONTROL = 1). */
void pl_svm_flush(void);
/** Run the guest once for @p op at @p gpa; 0 when it reached VMMCALL. */
int pl_svm_probe(int op, uint64_t gpa, uint64_t value, struct pl_svm_exit *x);

#endif
