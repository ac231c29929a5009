/* SPDX-License-Identifier: MIT */
/* The update engine specialised for 2-level tables. */
#define PT_FIXED_NLEV 2
#define PT_RUN mmp_core_pt_run2
#include "pt_engine.h"
