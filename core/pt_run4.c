/* SPDX-License-Identifier: MIT */
/* The update engine specialised for 4-level tables. */
#define PT_FIXED_NLEV 4
#define PT_RUN mmp_core_pt_run4
#include "pt_engine.h"
