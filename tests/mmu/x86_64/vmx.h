/* SPDX-License-Identifier: MIT */
/* Intel VMX host for the EPT targets (vmx.c). */
#ifndef MMPORT_TESTS_MMU_X86_64_VMX_H
#define MMPORT_TESTS_MMU_X86_64_VMX_H

#include <stdint.h>

#include "payload.h"

#define VMX_EXIT_VMCALL 18u
#define VMX_EXIT_EPT_VIOLATION 48u
#define VMX_EXIT_EPT_MISCONFIG 49u
/* EPT-violation exit qualification (SDM vol. 3C Table 28-7). */
#define EQ_R 0x1ull
#define EQ_W 0x2ull
#define EQ_X 0x4ull
#define EQ_READABLE 0x8ull
#define EQ_WRITABLE 0x10ull
#define EQ_EXECUTABLE 0x20ull
#define EQ_LINEAR_VALID 0x80ull
#define EQ_FINAL 0x100ull /* with bit 7: the access was to the translated address */

struct pl_vmx_exit {
    uint32_t reason; /* basic exit reason in 15:0; ~0 when VM entry failed */
    uint64_t qual, gpa, rax;
};

enum { PL_VMX_LOAD, PL_VMX_STORE, PL_VMX_EXEC };

/** Enter VMX root operation and build the VMCS; -1 with *why when the CPU cannot. */
int pl_vmx_init(const char **why);
/** IA32_VMX_EPT_VPID_CAP (valid after pl_vmx_init). */
uint64_t pl_vmx_ept_cap(void);
/** Use @p eptp for the guest (and INVEPT it). */
int pl_vmx_set_eptp(uint64_t eptp);
/** INVEPT the guest's translations. */
void pl_vmx_invept(void);
/** Run the guest once for @p op at @p gpa; 0 when it reached VMCALL. */
int pl_vmx_probe(int op, uint64_t gpa, uint64_t value, struct pl_vmx_exit *x);

#endif
