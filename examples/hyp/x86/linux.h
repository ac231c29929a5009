/* SPDX-License-Identifier: MIT */
/* Loading a Linux bzImage with the 64-bit boot protocol (linux.c). */
#ifndef HV_LINUX_H
#define HV_LINUX_H

#include "svm.h"

struct e820_entry {
    uint64_t addr, size;
    uint32_t type; /* 1 RAM, 2 reserved, 3 ACPI, 4 ACPI NVS, 5 unusable */
} __attribute__((packed));

struct linux_boot {
    const uint8_t *kernel; /* the bzImage file */
    uint64_t kernel_size;
    const uint8_t *initrd;
    uint64_t initrd_size;
    const char *cmdline;
    const struct e820_entry *e820;
    unsigned e820_n;
    uint64_t rsdp; /* ACPI RSDP, 0 if none */
    /* Guest RAM: low (from 0) and high; the kernel goes low in the high
     * range, the initrd at its top. */
    uint64_t low_end, ram_base, ram_end;
    /* results */
    uint64_t load_addr, init_size, initrd_addr;
    uint16_t version;
};

/** Check the bzImage and lay it out in guest RAM with boot_params, command
 * line, GDT and identity page tables; 0, or -1 with a message in @p err. */
int linux_load(struct linux_boot *b, struct vcpu_entry *e, char *err, size_t errcap);

#endif
