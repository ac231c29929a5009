/* SPDX-License-Identifier: MIT */
/* Generic (portable C) target: provides no hooks itself. */
#ifndef MMPORT_ARCH_GENERIC_IMPL_H
#define MMPORT_ARCH_GENERIC_IMPL_H

#define MMP_ARCH_THIS MMP_ARCH_GENERIC

#endif
