/* SPDX-License-Identifier: MIT */
/**
 * @file mmport.h
 * Umbrella header: include this one to get the whole public API.
 */
#ifndef MMPORT_MMPORT_H
#define MMPORT_MMPORT_H

#include <mmport/clear.h>
#include <mmport/common.h>
#include <mmport/cpu.h>
#include <mmport/pt.h>
#include <mmport/pt_reason.h>
#include <mmport/lazy.h>
#include <mmport/track.h>

#endif
