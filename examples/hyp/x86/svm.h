/* SPDX-License-Identifier: MIT */
/* The guest vCPU: AMD SVM with nested paging (svm.c). */
#ifndef HV_SVM_H
#define HV_SVM_H

#include "hv.h"

/* Where the guest starts: the Linux 64-bit boot protocol's state. */
struct vcpu_entry {
    uint64_t rip, rsp, rsi, cr3;
    uint64_t gdt_base;
    uint16_t gdt_limit, cs, ds;
};

/* Why the guest stopped. */
enum vcpu_stop {
    STOP_POWEROFF = 0, /* ACPI sleep (S5) through PM1a_CNT */
    STOP_RESET,        /* reset through port 0xcf9 or the keyboard controller */
    STOP_BAD_GPA,  /* an access to guest-physical memory that is neither RAM nor device */
    STOP_SHUTDOWN, /* triple fault */
    STOP_ERROR,    /* an exit the hypervisor does not handle, or a failed VMRUN */
    STOP_TIMEOUT,  /* no init, or no power-off, within the deadline */
};

/*
 * Guest-physical doorbell pages: the guest's init touches page n (busybox
 * devmem, through /dev/mem) to tell the hypervisor event n. The first
 * access faults (nothing is mapped there), the hypervisor records the time
 * and maps a scratch page, and the access completes.
 */
#define HV_DOORBELL_GPA 0xfeb00000ull
enum { DOORBELL_INIT = 0, DOORBELL_OK = 1, DOORBELL_FAIL = 2, DOORBELL_N = 3 };

struct vcpu_stats {
    uint64_t exits, exits_npf, exits_io, exits_msr, exits_nmi, exits_other, reinjected;
    uint64_t kicks, ticks, flush_waits_tsc, flushes;
    uint64_t t_start, t_stop, t_doorbell[DOORBELL_N]; /* TSC; 0 = never */
    uint64_t code, info1, info2, rip;                 /* the exit that stopped it */
};
extern struct vcpu_stats vcpu_st;

/** Enable SVM and build the VMCB for @p e on nested table @p ncr3; 0 or -1 with *why. */
int vcpu_init(const struct vcpu_entry *e, uint64_t ncr3, uint16_t pm1a_cnt,
              const char **why);
/** Run the guest until it stops; the reason (details in vcpu_st). The
 * guest must ring DOORBELL_INIT within @p init_us and power off within
 * @p total_us (checked at exits: CPU 1 sends a periodic NMI, so a guest
 * halted with interrupts off is seen too). */
enum vcpu_stop vcpu_run(uint64_t init_us, uint64_t total_us);
/** CPU 1's periodic NMI to CPU 0 while the guest runs (the deadline check). */
void vcpu_tick(void);

#endif
