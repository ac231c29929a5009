/* SPDX-License-Identifier: MIT */
/*
 * x86-64 hooks for the page-table scenarios: 4-level and (where CPUID has
 * LA57) 5-level tables, CR3 loading, the tlb_flush hook (INVLPG / CR3 /
 * CR4.PGE helpers of arch/x86/tlb.h) and the check of one VA by real
 * loads, stores and calls with the #PF handler recording CR2 and the
 * error code. x86 has no address-translation instruction, so the output
 * address is checked with a token stamped into the expected frame, and
 * the memory type by decoding the descriptor through the live IA32_PAT.
 * NPT targets (MMP_PT_X86_NPT) are the nested table of an SVM guest
 * (svm.c): the same checks, made by the guest, with nested page faults
 * (#VMEXIT NPF, EXITINFO1/2) in place of #PF. EPT targets
 * (MMP_PT_X86_EPT, under Bochs) are the EPT of a VMX guest (vmx.c): EPT
 * violations (exit qualification, guest-physical address) in place of #PF.
 */
#include "arch.h"
#include "mmu.h"
#include "svm.h"
#include "tlb.h"
#include "vmx.h"

/* Scratch RAM: the second GiB (QEMU pc -m 2G), less its last 2 MiB so the
 * identity map never needs a 1 GiB page (qemu64 has none). */
const uint64_t pl_scratch_lo = 0x40000000ull, pl_scratch_hi = 0x7fe00000ull;

const struct pl_ident pl_arch_ident[] = {
    { 0x40000000ull, 0x3fe00000ull, MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_GLOBAL },
};
const unsigned pl_arch_nident = PL_ARRAY_SIZE(pl_arch_ident);

const uint32_t pl_ret_insn = 0xc3; /* ret */
const unsigned pl_ret_insn_size = 1;

#define CR4_SMEP (1ull << 20)
#define CR4_SMAP (1ull << 21)
#define F_LA57 1u
#define F_NPT 2u
#define F_EPT 4u

static uint64_t cr4_extra; /* SMEP/SMAP when the CPU has them */

static struct pl_target *add(struct pl_target *t, int *n, unsigned va_bits, uint64_t max_leaf,
                             const char *name)
{
    struct pl_target *x = &t[(*n)++];
    pl_snprintf(x->name, sizeof(x->name), "%s", name);
    x->cfg.format = MMP_PT_X86_64;
    x->cfg.granule = 4096;
    x->cfg.va_bits = va_bits;
    x->cfg.pa_bits = 0;
    x->cfg.flags = 0;
    x->window = 0x4000000000ull; /* 256 GiB */
    /* Upper canonical half; for 5-level one that 4-level cannot reach. */
    x->far_va = va_bits == 57 ? 0xff00000000200000ull : 0xffffff8000200000ull;
    x->max_leaf = max_leaf;
    x->sparse_span = 0;
    x->prot_mask = MMP_PROT_MASK;
    x->arch_flags = va_bits == 57 ? F_LA57 : 0;
    return x;
}

/* The nested table of an SVM guest: input = guest-physical, below the
 * guest's 1 TiB identity map (and QEMU's 40-bit guest MAXPHYADDR). */
static void add_npt(struct pl_target *t, int *n, unsigned va_bits, uint64_t max_leaf,
                    const char *name)
{
    struct pl_target *x = add(t, n, va_bits, max_leaf, name);
    x->cfg.format = MMP_PT_X86_NPT;
    x->far_va = 0;
    x->sparse_span = 1ull << 40;
    x->prot_mask = MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC;
    x->arch_flags |= F_NPT;
}

static void add_ept(struct pl_target *t, int *n, unsigned va_bits, uint64_t max_leaf,
                    uint32_t flags, const char *name)
{
    add_npt(t, n, va_bits, max_leaf, name);
    struct pl_target *x = &t[*n - 1];
    x->cfg.format = MMP_PT_X86_EPT;
    x->cfg.flags = flags;
    x->arch_flags = (x->arch_flags & ~F_NPT) | F_EPT;
}

/* EPT under a VMX-capable CPU (Bochs): 4-level, 4-level with A/D and
 * execute-only where the CPU has them, 5-level where it has that walk. */
static void ept_targets(struct pl_target *t, int *n, int max, uint64_t max_leaf)
{
    const char *why = 0;
    if (pl_vmx_init(&why)) {
        pl_skip(why, "x86 EPT (Intel VMX)");
        return;
    }
    uint64_t cap = pl_vmx_ept_cap();
    pl_printf("note: IA32_VMX_EPT_VPID_CAP %lx: execute-only %s, 2M %s, 1G %s, A/D %s, "
              "5-level walk %s\n", cap, cap & 1 ? "yes" : "no", cap >> 16 & 1 ? "yes" : "no",
              cap >> 17 & 1 ? "yes" : "no", cap >> 21 & 1 ? "yes" : "no",
              cap >> 7 & 1 ? "yes" : "no");
    uint64_t leaf = !(cap >> 16 & 1) ? 4096 : !(cap >> 17 & 1) ? 2ull << 20 : max_leaf;
    if (leaf < (2ull << 20)) {
        pl_skip("no 2 MiB EPT pages (IA32_VMX_EPT_VPID_CAP bit 16)", "x86 EPT");
        return;
    }
    if (*n < max)
        add_ept(t, n, 48, leaf, 0, "x86 EPT 4-level (VMX guest, EPTP)");
    uint32_t fl = (cap & 1 ? MMP_PT_EPT_XO : 0) | (cap >> 21 & 1 ? MMP_PT_EPT_AD : 0);
    if (!fl)
        pl_skip("neither execute-only nor A/D in IA32_VMX_EPT_VPID_CAP", "x86 EPT XO|AD");
    else if (*n < max)
        add_ept(t, n, 48, leaf, fl, "x86 EPT 4-level, EPT_XO|EPT_AD as the CPU has them");
    if (!(cap >> 7 & 1))
        pl_skip("IA32_VMX_EPT_VPID_CAP bit 7 clear (no page-walk length 5 on this CPU model)",
                "x86 EPT 5-level");
    else if (*n < max)
        add_ept(t, n, 57, leaf, 0, "x86 EPT 5-level (VMX guest, walk length 5)");
}

static int have_svm;

int pl_arch_targets(struct pl_target *t, int max)
{
    uint32_t r[4];
    int n = 0;
    pl_cpuid(0x80000001, 0, r);
    if (!(r[3] & (1u << 20))) {
        pl_skip("CPUID.80000001:EDX.NX clear: mmport always sets XD for non-exec",
                "x86-64 page tables");
        return 0;
    }
    uint64_t max_leaf = (r[3] & (1u << 26)) ? 1ull << 30 : 2ull << 20;
    if (max_leaf < (1ull << 30))
        pl_printf("note: no 1 GiB pages (CPUID.80000001:EDX.Page1GB): 1 GiB leaves not used\n");
    pl_cpuid(7, 0, r);
    cr4_extra = ((r[1] & (1u << 7)) ? CR4_SMEP : 0) | ((r[1] & (1u << 20)) ? CR4_SMAP : 0);
    if (max >= 1)
        add(t, &n, 48, max_leaf, "x86-64 4-level (48-bit VA)");
    if (max - n >= 1) { /* the MMU sets A and D (dirty-logging scenario) */
        add(t, &n, 48, max_leaf, "x86-64 4-level, TRACK_HW");
        t[n - 1].cfg.flags = MMP_PT_TRACK_HW;
    }
    if (max >= 3) {
        add(t, &n, 48, max_leaf, "x86-64 4-level, NO_BLOCKS|FLUSH_ALL_OVER|KEEP_TABLES");
        t[n - 1].cfg.flags = MMP_PT_NO_BLOCKS | MMP_PT_FLUSH_ALL_OVER | MMP_PT_KEEP_TABLES;
        t[n - 1].cfg.flush_ranges = 1;
    }
    if (!(r[2] & (1u << 16)))
        pl_skip("CPUID.7.0:ECX.LA57 clear on this CPU model", "x86-64 5-level (57-bit VA)");
    else if (max >= 2)
        add(t, &n, 57, max_leaf, "x86-64 5-level (57-bit VA)");
    int la57 = (r[2] >> 16) & 1;
    const char *why = 0;
    if (max_leaf < (1ull << 30))
        pl_skip("no 1 GiB pages: the SVM guest's identity map needs them", "x86 NPT (AMD SVM)");
    else if (pl_svm_init(&why))
        pl_skip(why, "x86 NPT (AMD SVM nested paging)");
    else {
        have_svm = 1;
        if (max - n >= 1)
            add_npt(t, &n, 48, max_leaf, "x86 NPT 4-level (SVM guest, nCR3)");
        if (!la57)
            pl_skip("CPUID.7.0:ECX.LA57 clear (5-level NPT follows the host's CR4.LA57)",
                    "x86 NPT 5-level");
        else if (max - n >= 1)
            add_npt(t, &n, 57, max_leaf, "x86 NPT 5-level (SVM guest, host in LA57)");
    }
    if (max_leaf < (1ull << 30))
        pl_skip("no 1 GiB pages: the VMX guest's identity map needs them", "x86 EPT (Intel VMX)");
    else
        ept_targets(t, &n, max, max_leaf);
    return n;
}

static void write_cr4(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr4" ::"r"(v) : "memory");
}

/* The host's 5-level view of the boot map, for 5-level NPT. */
static uint64_t host_pml5[512] __attribute__((aligned(4096)));
static int npt_active;

static int ept_active;
static void ept_misconfig_checks(const struct pl_target *t, struct mmp_pt *pt);

static int ept_activate(const struct pl_target *t, const struct mmp_pt *pt)
{
    struct mmp_pt_regs regs;
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    /* EPTP (SDM 3C 25.6.11): WB walks, length - 1 in 5:3, A/D in bit 6 */
    uint64_t want = mmp_pt_root(pt) | 6 | (uint64_t)(inf.levels - 1) << 3 |
                    (t->cfg.flags & MMP_PT_EPT_AD ? 1ull << 6 : 0);
    if (mmp_pt_regs(pt, 0, &regs) || regs.root != want) {
        pl_printf("  mmp_pt_regs: EPTP %lx, want %lx\n", regs.root, want);
        return -1;
    }
    if (pl_vmx_set_eptp(regs.root))
        return -1;
    ept_active = 1;
    ept_misconfig_checks(t, (struct mmp_pt *)(uintptr_t)pt);
    return 0;
}

static int npt_activate(const struct pl_target *t, const struct mmp_pt *pt)
{
    struct mmp_pt_regs regs;
    if (mmp_pt_regs(pt, 0, &regs) || regs.root != mmp_pt_root(pt)) {
        pl_printf("  mmp_pt_regs: nCR3 %lx, root %lx\n", regs.root, mmp_pt_root(pt));
        return -1;
    }
    /* The nested walk has as many levels as the host's paging at VMRUN. */
    if (t->arch_flags & F_LA57) {
        host_pml5[0] = (uint64_t)(uintptr_t)boot_pml4 | 3;
        pl_x86_set_paging((uint64_t)(uintptr_t)host_pml5, 1);
    }
    pl_svm_set_ncr3(regs.root);
    npt_active = 1;
    return 0;
}

int pl_arch_activate(const struct pl_target *t, const struct mmp_pt *pt)
{
    if (t->arch_flags & F_NPT)
        return npt_activate(t, pt);
    if (t->arch_flags & F_EPT)
        return ept_activate(t, pt);
    uint64_t root = mmp_pt_root(pt);
    if (root >> 32) {
        pl_printf("  root %lx above 4 GiB: cannot switch paging modes\n", root);
        return -1;
    }
    pl_x86_set_paging(root, t->arch_flags & F_LA57);
    mmp_arch_tlb_flush_global(); /* a CR3 load keeps global entries */
    /* SMEP/SMAP make USER observable from CPL 0 (SDM 3A 4.6.1). */
    write_cr4(pl_read_cr(4) | cr4_extra);
    return 0;
}

void pl_arch_deactivate(void)
{
    npt_active = ept_active = 0;
    write_cr4(pl_read_cr(4) & ~(CR4_SMEP | CR4_SMAP));
    pl_boot_paging_restore();
    mmp_arch_tlb_flush_global();
}

void pl_arch_tlb_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    if (npt_active) /* the guest's entries; the host never walks the NPT */
        pl_svm_flush();
    else if (ept_active)
        pl_vmx_invept();
    else
        pl_x86_flush(va, size, flags);
}

static int bad(uint64_t va, const char *what, uint64_t want, uint64_t got)
{
    pl_printf("  mismatch at %lx: MMU: %s: want %lx, got %lx\n", va, what, want, got);
    return 1;
}

/* Memory type of a leaf through the live PAT (SDM 3A 4.9.2, 13.12.3):
 * index = PAT * 4 + PCD * 2 + PWT; PAT is bit 7 in a PTE, bit 12 in
 * 2 MiB / 1 GiB leaves. Types: 0 UC, 1 WC, 4 WT, 5 WP, 6 WB, 7 UC-. */
static unsigned mem_type(uint64_t desc, uint64_t leaf_size)
{
    unsigned pat = (unsigned)(leaf_size == 4096 ? (desc >> 7) & 1 : (desc >> 12) & 1);
    unsigned idx = pat * 4 + (unsigned)((desc >> 4) & 1) * 2 + (unsigned)((desc >> 3) & 1);
    return (unsigned)(pl_rdmsr(MSR_PAT) >> (idx * 8)) & 7;
}

static const unsigned type_of_mem[3] = { 6, 7, 0 }; /* WB, UC- (NC), UC (device) */

static uint64_t token_seq;

uint64_t pl_npt_compared; /* guest accesses checked through the nested table */

/* A nested page fault at gPA @p gpa with error bits @p err (P, W, ID): U
 * is always set (nested accesses are user accesses), bit 32 marks the
 * final translation, not a guest page-table access. */
static int npf_bad(uint64_t va, const char *what, const struct pl_svm_exit *x, uint64_t gpa,
                   uint64_t err)
{
    uint64_t want = err | NPF_U | NPF_FINAL, m = NPF_P | NPF_W | NPF_U | NPF_ID | NPF_FINAL | NPF_WALK;
    if (x->code == SVM_EXIT_NPF && x->info2 == gpa && (x->info1 & m) == want)
        return 0;
    pl_printf("  mismatch at %lx: SVM guest: %s: want NPF EXITINFO1 %lx at %lx, got exit %lx "
              "EXITINFO1 %lx EXITINFO2 %lx\n", va, what, want, gpa, x->code, x->info1, x->info2);
    return 1;
}

static int npt_check(uint64_t va, const struct pl_expect *e, int real)
{
    struct pl_svm_exit x;
    uint64_t v8 = va & ~7ull;
    if (!e->mapped) {
        if (!real)
            return 0;
        pl_npt_compared++;
        pl_svm_probe(PL_SVM_LOAD, v8, 0, &x);
        if (npf_bad(va, "load from an unmapped gPA", &x, v8, 0))
            return 1;
        pl_svm_probe(PL_SVM_STORE, v8, 0, &x);
        return npf_bad(va, "store to an unmapped gPA", &x, v8, NPF_W);
    }
    uint32_t a = e->attrs;
    unsigned mem = (a & MMP_MEM_MASK) >> 8;
    if (e->desc && mem_type(e->desc, e->leaf_size) != type_of_mem[mem])
        return bad(va, "memory type through IA32_PAT (host PAT, nested entry)", type_of_mem[mem],
                   mem_type(e->desc, e->leaf_size));
    if (!real)
        return 0;
    pl_npt_compared++;
    volatile uint64_t *phys = (volatile uint64_t *)(uintptr_t)(e->pa & ~7ull);
    uint64_t tok = 0x6e70740000000000ull ^ (++token_seq << 8) ^ va;
    *phys = tok;
    if (pl_svm_probe(PL_SVM_LOAD, v8, 0, &x) || x.rax != tok)
        return bad(va, "guest load through the nested table (exit code or value)", tok,
                   x.code == SVM_EXIT_VMMCALL ? x.rax : x.code);
    int fault = pl_svm_probe(PL_SVM_STORE, v8, ~tok, &x);
    if (!(a & MMP_PROT_WRITE)) {
        if (npf_bad(va, "guest store to a read-only gPA", &x, v8, NPF_P | NPF_W) || *phys != tok)
            return 1;
    } else if (fault || *phys != ~tok) {
        return bad(va, "guest store through the nested table (exit code or value)", ~tok,
                   fault ? x.code : *phys);
    }
    if (mem != 0)
        return 0;
    *(volatile uint8_t *)(uintptr_t)e->pa = (uint8_t)pl_ret_insn;
    fault = pl_svm_probe(PL_SVM_EXEC, va, 0, &x);
    if (a & MMP_PROT_EXEC) {
        if (fault)
            return bad(va, "guest call into an executable gPA (exit code)", SVM_EXIT_VMMCALL,
                       x.code);
    } else if (npf_bad(va, "guest call into a non-executable gPA", &x, va, NPF_P | NPF_ID)) {
        return 1;
    }
    return 0;
}

uint64_t pl_ept_compared; /* guest accesses checked through the EPT */

/* An EPT violation at gPA @p gpa: the access in bits 2:0, the translation's
 * R/W/X in 5:3, a final translation of a guest linear address (7, 8). */
static int eptv_bad(uint64_t va, const char *what, const struct pl_vmx_exit *x, uint64_t gpa,
                    uint64_t acc, uint32_t attrs)
{
    uint64_t perm = (attrs & MMP_PROT_READ ? EQ_READABLE : 0) |
                    (attrs & MMP_PROT_WRITE ? EQ_WRITABLE : 0) |
                    (attrs & MMP_PROT_EXEC ? EQ_EXECUTABLE : 0);
    uint64_t want = acc | perm | EQ_LINEAR_VALID | EQ_FINAL, m = 0x1bf;
    if ((x->reason & 0xffff) == VMX_EXIT_EPT_VIOLATION && x->gpa == gpa && (x->qual & m) == want)
        return 0;
    pl_printf("  mismatch at %lx: VMX guest: %s: want EPT violation, qualification %lx at %lx; "
              "got exit %x qualification %lx gPA %lx\n", va, what, want, gpa, x->reason, x->qual,
              x->gpa);
    return 1;
}

static int ept_check(uint64_t va, const struct pl_expect *e, int real)
{
    struct pl_vmx_exit x;
    uint64_t v8 = va & ~7ull;
    if (!real)
        return 0; /* the memory type is EPT's own (no live register to decode it through) */
    pl_ept_compared++;
    if (!e->mapped) {
        pl_vmx_probe(PL_VMX_LOAD, v8, 0, &x);
        if (eptv_bad(va, "load from an unmapped gPA", &x, v8, EQ_R, 0))
            return 1;
        pl_vmx_probe(PL_VMX_STORE, v8, 0, &x);
        return eptv_bad(va, "store to an unmapped gPA", &x, v8, EQ_W, 0);
    }
    uint32_t a = e->attrs;
    volatile uint64_t *phys = (volatile uint64_t *)(uintptr_t)(e->pa & ~7ull);
    uint64_t tok = 0x6570740000000000ull ^ (++token_seq << 8) ^ va;
    *phys = tok;
    int fault = pl_vmx_probe(PL_VMX_LOAD, v8, 0, &x);
    if (!(a & MMP_PROT_READ)) {
        if (eptv_bad(va, "guest load from an execute-only gPA", &x, v8, EQ_R, a))
            return 1;
    } else if (fault || x.rax != tok) {
        return bad(va, "guest load through the EPT (exit reason or value)", tok,
                   fault ? x.reason : x.rax);
    }
    fault = pl_vmx_probe(PL_VMX_STORE, v8, ~tok, &x);
    if (!(a & MMP_PROT_WRITE)) {
        if (eptv_bad(va, "guest store to a read-only gPA", &x, v8, EQ_W, a) || *phys != tok)
            return 1;
    } else if (fault || *phys != ~tok) {
        return bad(va, "guest store through the EPT (exit reason or value)", ~tok,
                   fault ? x.reason : *phys);
    }
    if ((a & MMP_MEM_MASK) != MMP_MEM_NORMAL_WB)
        return 0;
    *(volatile uint8_t *)(uintptr_t)e->pa = (uint8_t)pl_ret_insn;
    fault = pl_vmx_probe(PL_VMX_EXEC, va, 0, &x);
    if (a & MMP_PROT_EXEC) {
        if (fault)
            return bad(va, "guest call into an executable gPA (exit reason)", VMX_EXIT_VMCALL,
                       x.reason);
    } else if (eptv_bad(va, "guest call into a non-executable gPA", &x, va, EQ_X, a)) {
        return 1;
    }
    return 0;
}

/*
 * What SDM 3C 29.3.3.1 calls a misconfiguration, the CPU reports as one
 * (exit 49) and mmport refuses to build (-EINVAL): a leaf of the identity
 * map is rewritten behind mmport's back, probed, and restored.
 */
static void ept_misconfig_checks(const struct pl_target *t, struct mmp_pt *pt)
{
    uint64_t gpa = pl_scratch_lo + 0x3000;
    uint64_t *d = pl_arch_desc_ptr(t, pt, gpa);
    if (!d) {
        pl_result(0, "%s: a leaf for the misconfiguration probes", t->name);
        return;
    }
    uint64_t saved = *d, cap = pl_vmx_ept_cap();
    static const struct {
        uint64_t clear, set;
        uint32_t attrs; /* the same request to mmport */
        const char *what;
    } m[] = {
        {0x7, 0x2, MMP_PROT_WRITE, "write without read (bits 2:0 = 010)"},
        {0x7, 0x6, MMP_PROT_WRITE | MMP_PROT_EXEC, "write+execute without read (110)"},
        {0x38, 0x10, 0, "reserved memory type 2 (bits 5:3)"},
        {0x38, 0x38, 0, "reserved memory type 7 (bits 5:3)"},
        {0x7, 0x4, MMP_PROT_EXEC, "execute-only (100) without the capability"},
    };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(m); i++) {
        if (i == 4 && (cap & 1)) {
            pl_skip("the CPU allows execute-only translations (IA32_VMX_EPT_VPID_CAP bit 0)",
                    "%s: EPT misconfiguration: %s", t->name, m[i].what);
            continue;
        }
        struct pl_vmx_exit x;
        *d = (saved & ~m[i].clear) | m[i].set;
        pl_vmx_invept();
        pl_vmx_probe(PL_VMX_LOAD, gpa, 0, &x);
        *d = saved;
        pl_vmx_invept();
        int hw = (x.reason & 0xffff) == VMX_EXIT_EPT_MISCONFIG && x.gpa == gpa;
        int refused = !m[i].attrs ||
                      mmp_pt_map(pt, 0x7f00000000ull, pl_scratch_lo, 4096, m[i].attrs, 0) ==
                          -MMP_EINVAL;
        pl_result(hw && refused,
                  "%s: EPT misconfiguration: %s: the CPU exits with 49 at the gPA (got %u at %lx)%s",
                  t->name, m[i].what, x.reason & 0xffff, x.gpa,
                  m[i].attrs ? ", mmp_pt_map refuses it" : "");
    }
    struct pl_vmx_exit x;
    pl_result(pl_vmx_probe(PL_VMX_LOAD, gpa, 0, &x) == 0,
              "%s: the restored leaf translates again", t->name);
    if (!(t->cfg.flags & MMP_PT_EPT_XO))
        return;
    /* Execute-only (bits 2:0 = 100b) where the CPU allows it: fetch works,
     * load and store are EPT violations showing "executable" only. */
    const uint64_t xva = 0x7f00000000ull, xpa = pl_scratch_lo + 0x5000;
    int ok = mmp_pt_map(pt, xva, xpa, 4096, MMP_PROT_EXEC, 0) == 0;
    struct pl_expect e = {1, xpa, MMP_PROT_EXEC, 0, 4096}, e2 = e;
    e2.pa += 0x800;
    uint64_t before = pl_ept_compared;
    ok = ok && ept_check(xva, &e, 1) == 0 && ept_check(xva + 0x800, &e2, 1) == 0;
    ok = mmp_pt_unmap(pt, xva, 4096) == 0 && ok;
    pl_vmx_invept();
    pl_result(ok, "%s: execute-only leaf: guest fetch works, load and store are EPT violations "
              "(%lu addresses)", t->name, pl_ept_compared - before);
}

int pl_arch_check(const struct pl_target *t, uint64_t va, const struct pl_expect *e, int real)
{
    if (t->arch_flags & F_NPT)
        return npt_check(va, e, real);
    if (t->arch_flags & F_EPT)
        return ept_check(va, e, real);
    struct pl_probe p;
    uint64_t v8 = va & ~7ull;
    if (!e->mapped) {
        if (!real)
            return 0;
        pl_probe_load(v8, &p);
        if (p.vec != 14 || p.err != 0 || p.cr2 != v8)
            return bad(va, "load from an unmapped VA (#PF error code)", 0, p.vec ? p.err : ~0ull);
        pl_probe_store(v8, 0, &p);
        if (p.vec != 14 || p.err != PF_W || p.cr2 != v8)
            return bad(va, "store to an unmapped VA (#PF error code)", PF_W, p.vec ? p.err : ~0ull);
        return 0;
    }
    uint32_t a = e->attrs;
    unsigned mem = (a & MMP_MEM_MASK) >> 8;
    if (e->desc && mem_type(e->desc, e->leaf_size) != type_of_mem[mem])
        return bad(va, "memory type through IA32_PAT", type_of_mem[mem],
                   mem_type(e->desc, e->leaf_size));
    if (!real)
        return 0;

    int user = (a & MMP_PROT_USER) != 0;
    int smap = user && (cr4_extra & CR4_SMAP), smep = user && (cr4_extra & CR4_SMEP);
    volatile uint64_t *phys = (volatile uint64_t *)(uintptr_t)(e->pa & ~7ull);
    uint64_t tok = 0x6d6d750000000000ull ^ (++token_seq << 8) ^ va;
    *phys = tok;
    pl_probe_load(v8, &p);
    if (smap) { /* supervisor data access to a user page: #PF P */
        if (p.vec != 14 || p.err != PF_P || p.cr2 != v8)
            return bad(va, "load from a user VA with SMAP (#PF error code)", PF_P,
                       p.vec ? p.err : ~0ull);
    } else if (p.vec || p.value != tok) {
        return bad(va, "load through the mapping (#PF error or value)", tok,
                   p.vec ? p.err : p.value);
    }
    pl_probe_store(v8, ~tok, &p);
    if (smap || !(a & MMP_PROT_WRITE)) {
        if (p.vec != 14 || p.err != (PF_P | PF_W) || p.cr2 != v8 || *phys != tok)
            return bad(va, "store to a read-only or SMAP-protected VA (#PF error code)",
                       PF_P | PF_W, p.vec ? p.err : ~0ull);
    } else if (p.vec || *phys != ~tok) {
        return bad(va, "store through the mapping (#PF error or value)", ~tok,
                   p.vec ? p.err : *phys);
    }
    if (mem != 0)
        return 0; /* instruction fetch only from WB memory */
    *(volatile uint8_t *)(uintptr_t)e->pa = (uint8_t)pl_ret_insn;
    pl_probe_exec(va, &p);
    if ((a & MMP_PROT_EXEC) && !smep) {
        if (p.vec)
            return bad(va, "call into an executable VA (#PF error code)", 0, p.err);
    } else if (p.vec != 14 || p.err != (PF_P | PF_ID) || p.cr2 != va) {
        return bad(va, "call into a non-executable or SMEP-protected VA (#PF error code)",
                   PF_P | PF_ID, p.vec ? p.err : ~0ull);
    }
    return 0;
}

uint64_t *pl_arch_desc_ptr(const struct pl_target *t, const struct mmp_pt *pt, uint64_t va)
{
    unsigned levels = t->cfg.va_bits == 57 ? 5 : 4;
    uint64_t *tbl = (uint64_t *)(uintptr_t)mmp_pt_root(pt);
    for (unsigned d = 0; d < levels; d++) {
        unsigned level = levels - d; /* 5/4 .. 1 */
        uint64_t *ent = &tbl[(va >> (12 + 9 * (level - 1))) & 511];
        if (!(*ent & 1))
            return 0;
        if (level == 1 || ((level == 2 || level == 3) && (*ent & 0x80)))
            return ent;
        tbl = (uint64_t *)(uintptr_t)(*ent & 0x000ffffffffff000ull);
    }
    return 0;
}

/* Set PWT (bit 3): mmp_pt_lookup still reports WB (it decodes PWT only
 * with PCD), the PAT makes it write-through. */
void pl_arch_flip(const struct pl_target *t, uint64_t *desc)
{
    (void)t;
    *desc |= 1ull << 3;
    mmp_arch_tlb_flush_global();
}

int pl_arch_access(uint64_t va, int store, uint64_t value)
{
    struct pl_probe p;
    return (store ? pl_probe_store(va, value, &p) : pl_probe_load(va, &p)) != 0;
}

/* ---- a second CPU (common/smp.c; CPU 1 itself is smp.c) ---- */

int pl_arch_smp_target(struct pl_target *t, const char **why)
{
    if (pl_x86_smp_prepare(why))
        return -1;
    uint32_t r[4];
    pl_cpuid(0x80000001, 0, r);
    int n = 0;
    add(t, &n, 48, (r[3] & (1u << 26)) ? 1ull << 30 : 2ull << 20, "x86-64 4-level, SHARED");
    return 0;
}
