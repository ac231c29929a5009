/* SPDX-License-Identifier: MIT */
/*
 * Which engine instance a table runs (core/pt_engine.c): the one
 * specialised for its depth (chosen at creation), or the generic one that
 * reads the depth from the table. Only `mmport bench map --depth` switches.
 */
#ifndef MMPORT_CORE_PT_ENGINE_H
#define MMPORT_CORE_PT_ENGINE_H

#include <stdbool.h>

#include <mmport/pt.h>

void mmp_core_pt_engine_select(struct mmp_pt *p, bool generic);

#endif
