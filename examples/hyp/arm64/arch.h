/* SPDX-License-Identifier: MIT */
/* The arm64 half of the reference hypervisor: registers, exits, vCPUs. */
#ifndef HYP_ARM64_ARCH_H
#define HYP_ARM64_ARCH_H

#include <stdint.h>

#include "gmm.h"
#include "hyp.h"
#include "summary.h"

#define read_sysreg(r)                                                                   \
    ({                                                                                   \
        uint64_t v_;                                                                     \
        __asm__ volatile("mrs %0, " #r : "=r"(v_));                                      \
        v_;                                                                              \
    })
#define write_sysreg(r, v) __asm__ volatile("msr " #r ", %0" ::"r"((uint64_t)(v)))
#define isb() __asm__ volatile("isb" ::: "memory")

/* The guest's registers as an exit saved them (start.S), and the EL2
 * syndrome registers of the exit. */
struct hyp_frame {
    uint64_t x[31];
    uint64_t elr, spsr, esr, far, hpfar;
};

/* ESR_EL2 (Arm ARM D19.2.37): exception class and the abort ISS fields. */
#define ESR_EC(esr) (((esr) >> 26) & 0x3f)
#define EC_WFX 0x01
#define EC_HVC64 0x16
#define EC_SMC64 0x17
#define EC_IABT_LOW 0x20
#define EC_DABT_LOW 0x24
#define ESR_ISV (1ull << 24)
#define ESR_SRT(esr) (((esr) >> 16) & 0x1f)
#define ESR_FNV (1ull << 10)
#define ESR_S1PTW (1ull << 7)
#define ESR_WNR (1ull << 6)
#define ESR_FSC(esr) ((esr)&0x3f)

/* HCR_EL2 bits the hypervisor sets (D19.2.48). */
#define HCR_VM (1ull << 0)
#define HCR_SWIO (1ull << 1)
#define HCR_TWI (1ull << 13)
#define HCR_TSC (1ull << 19)
#define HCR_RW (1ull << 31)
#define HCR_APK (1ull << 40)
#define HCR_API (1ull << 41)

/* One vCPU per physical CPU, never moved. */
enum vcpu_state { VCPU_OFF, VCPU_ON_PENDING, VCPU_ON };
struct vcpu {
    uint64_t mpidr; /* the guest's MPIDR (= the physical one) */
    volatile AO_t state;
    uint64_t entry, context; /* PSCI CPU_ON: where and with what it starts */
    volatile AO_t parked;    /* stopped at EL2 for the end of the run */
    volatile AO_t in_wfi;    /* waiting in the hypervisor's WFI */
};

/* Layout of host RAM and the guest (main.c). */
struct hyp_layout {
    uint64_t ram_base, ram_size;   /* host RAM (QEMU's memory node) */
    uint64_t kernel_pa, initrd_pa; /* where the runner's loader put the files */
    uint64_t initrd_size;
    uint64_t guest_pa, shadow_pa, swap_pa; /* guest RAM backing and its two copies */
    uint64_t guest_ipa, guest_size;
    uint64_t dtb_ipa, initrd_ipa;
};

extern struct gmm hyp_gmm;
extern struct hyp_run hyp_run;
extern struct vcpu hyp_vcpus[HYP_MAX_CPUS];
extern unsigned hyp_nvcpus;
extern struct hyp_layout hyp_layout;
extern uint64_t hyp_uart;
extern uint64_t hyp_doorbell_ipa;

/* start.S */
void hyp_secondary_entry(void);
__attribute__((noreturn)) void hyp_enter_guest(uint64_t entry, uint64_t x0, uint64_t sp);
extern uint8_t hyp_stacks[], __text_start[], __text_end[], __image_end[];
#define HYP_STACK_SIZE 0x8000

/* mmu.c: the EL2 stage-1 table and the ops of the stage-2 table. */
int hyp_el2_mmu_init(void);
void hyp_el2_mmu_on(void);
uint64_t hyp_el2_mmu_teardown(void);
extern const struct mmp_pt_ops hyp_s2_ops;
extern struct hyp_arena hyp_s2_arena;
void hyp_tlbi_ipa_local(uint64_t ipa);

/* psci.c */
int64_t hyp_psci_real(uint64_t fn, uint64_t a, uint64_t b, uint64_t c);
void hyp_psci(struct hyp_frame *f, unsigned cpu);
#define PSCI_VERSION 0x84000000u
#define PSCI_CPU_OFF 0x84000002u
#define PSCI_CPU_ON_64 0xc4000003u
#define PSCI_SYSTEM_OFF 0x84000008u

/* exit.c */
void hyp_vcpu_setup(unsigned cpu);
__attribute__((noreturn)) void hyp_end(unsigned cpu, const char *why);
void hyp_exit(struct hyp_frame *f, uint64_t idx);

#endif
