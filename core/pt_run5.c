/* SPDX-License-Identifier: MIT */
/* The update engine specialised for 5-level tables. */
#define PT_FIXED_NLEV 5
#define PT_RUN mmp_core_pt_run5
#include "pt_engine.h"
