/* SPDX-License-Identifier: MIT */
/* For `mmport bench map --depth`: the update engine with the depth read
 * from the table at every level (no specialisation). */
#define PT_RUN cli_bench_generic_run
#include "../core/pt_engine.h"
