/* SPDX-License-Identifier: MIT */
/* The update engine specialised for 3-level tables. */
#define PT_FIXED_NLEV 3
#define PT_RUN mmp_core_pt_run3
#include "pt_engine.h"
