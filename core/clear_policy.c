/* SPDX-License-Identifier: MIT */
/*
 * Clearing policy: which kernel for hot and for cold clears, and from which
 * size AUTO goes cold. Pure data and arithmetic over a struct
 * mmp_cpu_features, so every arch's table is built and tested on every
 * host. Then the overrides: MMPORT_CLEAR, MMPORT_CLEAR_COLD_MIN, and the
 * tuning file named by MMPORT_TUNING.
 */
#include "clear_impl.h"
#include "host.h"

#define B(k) MMP_KBIT(MMP_K_##k)

/*
 * Preference order per arch. A kernel is taken if the CPU supports it, the
 * matched quirk row does not bad-list it, and the CPU has `prefer` (a
 * feature that makes it fast, beyond what it needs to run). The last entry
 * of each list needs nothing and is never bad-listed.
 */
struct pref {
    uint8_t k;
    uint32_t prefer;
    bool zva64; /* only with 64-byte DC ZVA blocks */
};

/*
 * x86 hot: rep stosb where ERMS makes it fast, rep stosq where string ops
 * are microcoded well, else the unrolled loop (Linux clear_page's order).
 * x86 cold: CLZERO (~42-46 GB/s per core on Milan vs 12-17 for rep stosb),
 * then full-line NT stores, widest first: a 64-byte VMOVNTDQ writes a whole
 * line at once, MOVNTI needs eight stores to fill the write-combining buffer.
 */
static const struct pref x86_hot[] = {
    {MMP_K_REP_STOSB, MMP_CPU_ERMS, false}, {MMP_K_REP_STOSQ, MMP_CPU_REP_GOOD, false}, {MMP_K_UNROLLED, 0, false}};
static const struct pref x86_cold[] = {{MMP_K_CLZERO, 0, false},
                                       {MMP_K_AVX512_NT, 0, false},
                                       {MMP_K_AVX2_NT, 0, false},
                                       {MMP_K_MOVNTI, 0, false},
                                       {MMP_K_REP_STOSB, MMP_CPU_ERMS, false},
                                       {MMP_K_UNROLLED, 0, false}};
/*
 * arm64 hot: MOPS where present (glibc's memset_mops), DC ZVA with 64-byte
 * blocks (Linux clear_page uses DC ZVA), else STP. arm64 cold: DC ZVA, else STNP (the fallback when
 * DCZID_EL0.DZP prohibits DC ZVA).
 */
static const struct pref arm_hot[] = {{MMP_K_MOPS, 0, false}, {MMP_K_DC_ZVA, 0, true}, {MMP_K_STP, 0, false}};
static const struct pref arm_cold[] = {{MMP_K_DC_ZVA, 0, false}, {MMP_K_STNP, 0, false}};
static const struct pref gen_any[] = {{MMP_K_MEMSET, 0, false}};

/*
 * The quirk tables: rows match vendor + family/model range (x86) or MIDR
 * implementer/part (arm64); the first matching row applies. A row bad-lists
 * kernels for hot or cold clears (NT and CLZERO are on by default and
 * bad-listed per microarchitecture, as reviewers of the Linux NT-clearing
 * patches advised), and may scale the AUTO threshold.
 */
const struct mmp_core_clear_quirk mmp_core_clear_quirks[] = {
    {"intel-skylake-sp", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x55, 0x55, 0, 0, 0,
     B(AVX512_NT), 0,
     "Skylake-SP/Cascade Lake/Cooper Lake: 512-bit instructions drop the core to a "
     "lower AVX-512 frequency licence (Intel optimization manual, 'AVX-512 frequency'); "
     "32-byte NT stores reach the same DRAM bandwidth"},
    {"intel-emerald-rapids", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0xcf, 0xcf, 0, 0, 0, 0, 64,
     "Emerald Rapids: CPUID reports the whole socket's mesh L3 (260 MiB on the dev "
     "machine), but one core keeps only ~its 2 MiB L2 plus a share of it: measured "
     "(mmport bench clear, lines evicted first) rep stosb = NT at 4 MiB, NT 1.4x at "
     "8 MiB, 2.2x at 32 MiB; so AUTO goes cold from LLC/64"},
    {"intel-sapphire-rapids", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x8f, 0x8f, 0, 0, 0, 0, 64,
     "Sapphire Rapids: same core and mesh-L3 design as Emerald Rapids (inferred from the "
     "EMR measurement, not measured itself); AUTO goes cold from LLC/64"},
    {"amd-zen1-2", MMP_ARCH_X86_64, "AuthenticAMD", 0x17, 0x17, 0, 0xff, 0, 0, B(REP_STOSB),
     0, 0,
     "Zen 1/2 have no ERMS (AMD added ERMS and FSRM with Zen 3) and their rep movsb/stosb "
     "is slow microcode (firedancer issue 1073); Linux clear_page uses rep stosq (REP_GOOD)"},
    {"hygon-dhyana", MMP_ARCH_X86_64, "HygonGenuine", 0x18, 0x18, 0, 0xff, 0, 0, B(REP_STOSB),
     0, 0, "Hygon Dhyana is Zen 1: as amd-zen1-2"},
    /*
     * arm64: no row yet. The feature rules already cover what is public:
     * DC ZVA only where DCZID_EL0.DZP allows it, and for hot clears only
     * with 64-byte blocks (glibc picks its DC ZVA memsets only for
     * zva_size == 64, larger blocks zero more than a small clear needs).
     */
};
const size_t mmp_core_clear_nquirks = sizeof mmp_core_clear_quirks / sizeof mmp_core_clear_quirks[0];

static bool vendor_is(const struct mmp_cpu_features *f, const char *v)
{
    return !*v || mmp_core_streq(f->vendor, v);
}

const struct mmp_core_clear_quirk *mmp_core_clear_quirk_for(const struct mmp_cpu_features *f)
{
    for (size_t i = 0; i < mmp_core_clear_nquirks; i++) {
        const struct mmp_core_clear_quirk *q = &mmp_core_clear_quirks[i];
        if (q->arch != f->arch || !vendor_is(f, q->vendor))
            continue;
        if (q->arch == MMP_ARCH_X86_64 &&
            (f->family < q->fam_lo || f->family > q->fam_hi || f->model < q->model_lo ||
             f->model > q->model_hi))
            continue;
        if (q->arch == MMP_ARCH_ARM64 && (f->midr & q->midr_mask) != q->midr_val)
            continue;
        return q;
    }
    return NULL;
}

static unsigned pick(const struct mmp_cpu_features *f, const struct pref *list, size_t n,
                     uint32_t bad)
{
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned k = list[i].k;
        if (mmp_core_clear_supported(f, k) && !(bad & MMP_KBIT(k)) &&
            (f->flags & list[i].prefer) == list[i].prefer && (!list[i].zva64 || f->zva_block == 64))
            return k;
    }
    return list[n - 1].k;
}

#define PICK(f, l, bad) pick((f), (l), sizeof(l) / sizeof((l)[0]), (bad))

/* AUTO threshold when the LLC size is unknown. */
#define COLD_MIN_DEFAULT (8ull << 20)

int mmp_clear_policy_for(const struct mmp_cpu_features *f, struct mmp_clear_policy *out)
{
    if (!f || !out)
        return -MMP_EINVAL;
    *out = (struct mmp_clear_policy){0};
    const struct mmp_core_clear_quirk *q = mmp_core_clear_quirk_for(f);
    if (q) {
        out->quirk = q->name;
        out->quirk_why = q->why;
        out->bad_hot = q->bad_hot;
        out->bad_cold = q->bad_cold;
    }
    unsigned hot, cold;
    switch (f->arch) {
    case MMP_ARCH_X86_64:
        hot = PICK(f, x86_hot, out->bad_hot);
        cold = PICK(f, x86_cold, out->bad_cold);
        break;
    case MMP_ARCH_ARM64:
        hot = PICK(f, arm_hot, out->bad_hot);
        cold = PICK(f, arm_cold, out->bad_cold);
        break;
    default:
        hot = cold = PICK(f, gen_any, 0);
        break;
    }
    out->hot = mmp_core_clear_kdesc[hot].name;
    out->cold = mmp_core_clear_kdesc[cold].name;
    /* Non-temporal stores lose below the LLC size and win above it. */
    if (f->llc_bytes) {
        out->cold_min = f->llc_bytes / (q && q->llc_div ? q->llc_div : 1);
        out->cold_min_from = "llc";
    } else {
        out->cold_min = COLD_MIN_DEFAULT;
        out->cold_min_from = "default";
    }
    out->cold_min = (out->cold_min + MMP_PAGE_SIZE - 1) & ~(uint64_t)(MMP_PAGE_SIZE - 1);
    out->source = "table";
    return 0;
}

/* ---- overrides: environment and tuning file ------------------------------ */

static bool parse_u64(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || *s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (x > (~0ull - 9) / 10)
            return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    unsigned shift = *s == 'K' ? 10 : *s == 'M' ? 20 : *s == 'G' ? 30 : 0;
    if (shift) {
        if (x > (~0ull >> shift))
            return false;
        x <<= shift;
        s++;
    }
    if (*s)
        return false;
    *v = x;
    return true;
}

/* Next whitespace-separated word of the line at *p (NUL-terminated), in place. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    if (!*s) {
        *p = s;
        return NULL;
    }
    char *w = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r')
        s++;
    if (*s)
        *s++ = '\0';
    *p = s;
    return w;
}

static bool u32_is(const char *w, uint64_t want)
{
    uint64_t v;
    return w && parse_u64(w, &v) && v == want;
}

static char tuning_text[4096];
static char tuning_note[160];

static void note(const char *a, const char *b)
{
    size_t n = 0;
    for (const char *s = a; *s && n + 1 < sizeof tuning_note; s++)
        tuning_note[n++] = *s;
    for (const char *s = b; s && *s && n + 1 < sizeof tuning_note; s++)
        tuning_note[n++] = *s;
    tuning_note[n] = '\0';
}

/*
 * Applies a tuning file (format written by mmp_clear_tuning_format()):
 *   cpu <arch> <vendor|-> <family> <model> <midr>
 *   hot <kernel> / cold <kernel> / cold_min <bytes>
 * Whole file or nothing: a file for another CPU, an unknown key or kernel,
 * or a kernel this CPU cannot run leaves the table policy in force.
 */
static void apply_tuning(const char *path, const struct mmp_cpu_features *f,
                         struct mmp_clear_policy *pol)
{
    long n = mmp_host_read_file(path, tuning_text, sizeof tuning_text);
    if (n < 0) {
        note("table (tuning ignored: cannot read ", "MMPORT_TUNING)");
        pol->source = tuning_note;
        return;
    }
    struct mmp_clear_policy t = *pol;
    bool cpu_ok = false;
    char *next = tuning_text;
    const char *bad = NULL;
    while (*next && !bad) {
        char *p = next;
        while (*next && *next != '\n')
            next++;
        if (*next)
            *next++ = '\0'; /* p is now one line */
        char *key = word(&p);
        if (!key || *key == '#')
            continue;
        char *v = word(&p);
        if (mmp_core_streq(key, "cpu")) {
            char *vendor = word(&p), *fam = word(&p), *model = word(&p), *midr = word(&p);
            cpu_ok = v && vendor && mmp_core_streq(v, mmp_arch_name(f->arch)) &&
                     mmp_core_streq(vendor, f->vendor[0] ? f->vendor : "-") &&
                     u32_is(fam, f->family) && u32_is(model, f->model) && u32_is(midr, f->midr);
            if (!cpu_ok)
                bad = "written for another CPU";
        } else if (mmp_core_streq(key, "hot") || mmp_core_streq(key, "cold")) {
            int k = v ? mmp_core_clear_lookup(v) : -1;
            if (k < 0 || !mmp_core_clear_supported(f, (unsigned)k))
                bad = "kernel unknown or not usable here";
            else if (key[0] == 'h')
                t.hot = mmp_core_clear_kdesc[k].name;
            else
                t.cold = mmp_core_clear_kdesc[k].name;
        } else if (mmp_core_streq(key, "cold_min")) {
            uint64_t b;
            if (!v || !parse_u64(v, &b))
                bad = "bad cold_min";
            else
                t.cold_min = b, t.cold_min_from = "tuning";
        } else {
            bad = "unknown key";
        }
    }
    if (!bad && !cpu_ok)
        bad = "no cpu line";
    if (bad) {
        note("table (tuning ignored: ", bad);
        n = 0;
        while (tuning_note[n])
            n++;
        if (n + 1 < (long)sizeof tuning_note)
            tuning_note[n++] = ')', tuning_note[n] = '\0';
        pol->source = tuning_note;
        return;
    }
    *pol = t;
    pol->source = "tuning";
}

void mmp_core_clear_policy_in_force(struct mmp_clear_policy *pol, int *forced, int *forced_err)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    mmp_clear_policy_for(f, pol);
    const char *path = mmp_host_getenv("MMPORT_TUNING");
    if (path && *path)
        apply_tuning(path, f, pol);
    uint64_t b;
    const char *cm = mmp_host_getenv("MMPORT_CLEAR_COLD_MIN");
    if (cm && parse_u64(cm, &b)) {
        pol->cold_min = b;
        pol->cold_min_from = "env";
    }
    *forced = -1;
    *forced_err = 0;
    const char *name = mmp_host_getenv("MMPORT_CLEAR");
    if (name && *name) {
        int k = mmp_core_clear_lookup(name);
        if (k < 0)
            *forced_err = -MMP_EINVAL;
        else if (!mmp_core_clear_fn_of((unsigned)k))
            *forced_err = -MMP_ENOTSUP;
        else
            *forced = k, pol->forced = mmp_core_clear_kdesc[k].name;
    }
}
