/* SPDX-License-Identifier: MIT */
/*
 * A small flattened-device-tree reader and rewriter (Devicetree
 * Specification v0.4, chapter 5): enough to read QEMU's tree (memory,
 * CPUs, devices, /chosen) and to write the guest's copy with its own
 * memory node and /chosen, and the devices it does not get disabled.
 */
#ifndef HYP_ARM64_FDT_H
#define HYP_ARM64_FDT_H

#include <stddef.h>
#include <stdint.h>

#define FDT_MAGIC 0xd00dfeedu

/** One node as the walk reports it, after its properties were read. */
struct fdt_node {
    const char *name;
    int depth;          /* 1: a child of the root */
    unsigned index;     /* position in the tree, in walk order */
    const char *compat; /* the compatible list (NUL-separated) */
    int compat_len;
    const uint8_t *reg;
    int reg_len;
    const char *device_type;
    const char *method; /* "method" (the psci node) */
    const uint8_t *status;
    uint32_t reg_addr_cells,
        reg_size_cells; /* the parent's #address-cells / #size-cells */
};

/** 0 when @p fdt starts with a plausible header no bigger than @p max bytes. */
int fdt_check(const void *fdt, size_t max);
/** The total size of a checked tree. */
uint32_t fdt_size(const void *fdt);
/** Calls @p fn for every node (parents after their properties, before
 *  their children); a non-zero return stops the walk and is returned.
 *  -1 on a malformed tree. */
int fdt_nodes(const void *fdt, int (*fn)(void *arg, const struct fdt_node *n), void *arg);
/** Entry @p i of a node's reg property: address, and size in *size. 0 when absent. */
uint64_t fdt_reg(const struct fdt_node *n, int i, uint64_t *size);
/** Non-zero when @p compat is one of the node's compatible strings. */
int fdt_compatible(const struct fdt_node *n, const char *compat);
/** The value of property @p prop of the root's child @p node, or NULL. */
const char *fdt_prop_string(const void *fdt, const char *node, const char *prop);

/** What the guest's copy changes. */
struct fdt_edit {
    uint64_t mem_base, mem_size;       /* the only memory node */
    const char *bootargs;              /* /chosen */
    uint64_t initrd_start, initrd_end; /* /chosen; 0, 0: none */
    /* Top-level nodes for which this returns 0 get status = "disabled". */
    int (*keep)(const struct fdt_node *n);
};

/** Write the edited copy of @p in to @p out (@p cap bytes). Returns its
 *  size, or -1 (malformed input, or no room). */
long fdt_rewrite(const void *in, void *out, size_t cap, const struct fdt_edit *e);

#endif
