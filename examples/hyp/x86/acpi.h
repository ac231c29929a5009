/* SPDX-License-Identifier: MIT */
/* Reading the firmware's ACPI tables (acpi.c). */
#ifndef HV_ACPI_H
#define HV_ACPI_H

#include "hv.h"

/** Physical address of the ACPI RSDP, or 0. */
uint64_t acpi_find_rsdp(void);
/** The FADT's PM1a_CNT_BLK I/O port, or 0. */
uint16_t acpi_pm1a_cnt(uint64_t rsdp);

#endif
