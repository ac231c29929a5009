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
 * patches advised), and may scale the AUTO threshold. A row is the first
 * guess, not the last word: the first-use measurement (core/clear_verify.c)
 * still checks its choice among the kernels it allows, on every CPU. Each
 * row's reason names its measurement or public source; rows that change
 * nothing say what the table picks there and why that is right.
 */
#define MIDR_PART 0xff00fff0ull /* MIDR_EL1 Implementer [31:24], PartNum [15:4] */
const struct mmp_core_clear_quirk mmp_core_clear_quirks[] = {
    /* ---- Intel, family 6 ---- */
    {"intel-skylake-sp", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x55, 0x55, 0, 0, 0,
     B(AVX512_NT), 0,
     "Skylake-SP/Cascade Lake/Cooper Lake: 512-bit instructions drop the core to a "
     "lower AVX-512 frequency licence (Intel optimization manual, 'AVX-512 frequency'; "
     "LLVM prefers 256-bit vectors on Skylake-AVX512 for that reason, D67259); "
     "32-byte NT stores reach the same DRAM bandwidth"},
    {"intel-icelake-sp", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x6a, 0x6c, 0, 0, 0, 0, 64,
     "Ice Lake-SP/-D: mesh L3 like Emerald Rapids (CPUID reports the socket's L3, one "
     "core keeps its L2 plus a share): AUTO goes cold from LLC/64, inferred from the "
     "intel-emerald-rapids measurement and checked by the first-use scan (4-64 MiB)"},
    {"intel-sapphire-rapids", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x8f, 0x8f, 0, 0, 0, 0, 64,
     "Sapphire Rapids: same core and mesh-L3 design as Emerald Rapids (inferred from the "
     "EMR measurement, not measured itself); AUTO goes cold from LLC/64"},
    {"intel-alder-lake", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0x97, 0x9a, 0, 0, 0, 0, 0,
     "Alder Lake client (hybrid): nothing changed. ERMS and FSRM (Intel has ERMS since "
     "Ivy Bridge, FSRM since Ice Lake: RPCS3 PR 11079) make rep stosb the hot kernel; "
     "AVX-512 is fused off (later steppings), so AVX2 NT is the cold one; one core may fill the ring L3, "
     "so cold from the whole LLC. glibc's memset also turns non-temporal only on Intel, "
     "from a fraction of L3 (glibc 2.40 'x86: Add seperate non-temporal tunable for "
     "memset'; libc-alpha 2023-05 'Increase non_temporal_threshold to roughly "
     "sizeof_L3 / 4': rep movsb ~2x NT below that)"},
    {"intel-granite-rapids", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0xad, 0xae, 0, 0, 0, 0, 64,
     "Granite Rapids: mesh L3 like Emerald Rapids: AUTO cold from LLC/64, inferred "
     "from the intel-emerald-rapids measurement and checked by the first-use scan"},
    {"intel-raptor-lake", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0xb7, 0xbf, 0, 0, 0, 0, 0,
     "Raptor Lake client (also Lunar Lake 0xbd, Alder Lake-N 0xbe): as intel-alder-lake, "
     "nothing changed (ring L3, ERMS/FSRM, no AVX-512)"},
    {"intel-emerald-rapids", MMP_ARCH_X86_64, "GenuineIntel", 6, 6, 0xcf, 0xcf, 0, 0, 0, 0, 64,
     "Emerald Rapids: CPUID reports the whole socket's mesh L3 (260 MiB on a "
     "2-vCPU VM), but one core keeps only ~its 2 MiB L2 plus a share of it: measured "
     "(mmport bench clear, lines evicted first) rep stosb = NT at 4 MiB, NT 1.4x at "
     "8 MiB, 2.2x at 32 MiB; so AUTO goes cold from LLC/64"},
    /* ---- AMD and Hygon ---- */
    {"amd-zen1-2", MMP_ARCH_X86_64, "AuthenticAMD", 0x17, 0x17, 0, 0xff, 0, 0, B(REP_STOSB),
     0, 0,
     "Zen 1/2 have no ERMS (AMD added ERMS and FSRM with Zen 3) and their rep movsb/stosb "
     "is slow microcode (firedancer issue 1073); Linux clear_page uses rep stosq (REP_GOOD)"},
    {"hygon-dhyana", MMP_ARCH_X86_64, "HygonGenuine", 0x18, 0x18, 0, 0xff, 0, 0, B(REP_STOSB),
     0, 0, "Hygon Dhyana (family 0x18) is licensed Zen 1: no ERMS, as amd-zen1-2"},
    {"amd-zen3", MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x19, 0x00, 0x0f, 0, 0, 0, 0, 0,
     "Zen 3 (Milan): nothing changed: CLZERO ~42-46 GB/s per core vs 12-17 for rep "
     "stosb (measurement quoted in the Linux NT-clearing review); rep stosq over one "
     "extent 13.7 GB/s at 4 KiB, 15.1 at 2 MiB, 38.1 at 1 GiB (Linux 'x86/clear_page: "
     "introduce clear_pages()'), so whole extents, never page by page"},
    {"amd-zen4", MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x19, 0x10, 0x1f, 0, 0, 0,
     B(CLZERO), 0,
     "Zen 4 (Genoa): no CLZERO for cold clears: measured on a 2-vCPU Genoa "
     "VM (32 MiB L3), AUTO with CLZERO reached 0.65 of AVX-512/AVX2 NT at 1 GiB, and at "
     "16 MiB the two traded places run to run; CLZERO is meant for poison recovery, not "
     "fast zeroing (WikiChip 'CLZERO - x86'); AVX-512 NT is the cold kernel"},
    {"amd-zen3-client", MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x19, 0x20, 0x5f, 0, 0, 0, 0, 0,
     "Zen 3 client (Vermeer, Cezanne, Rembrandt): same core as amd-zen3"},
    {"amd-zen4-client", MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x19, 0x60, 0x7f, 0, 0, 0,
     B(CLZERO), 0, "Zen 4 client (Raphael, Phoenix): same core as amd-zen4"},
    {"amd-zen4c", MMP_ARCH_X86_64, "AuthenticAMD", 0x19, 0x19, 0xa0, 0xaf, 0, 0, 0,
     B(CLZERO), 0, "Zen 4c (Bergamo, Siena): same core as amd-zen4, smaller L3"},
    {"amd-zen5", MMP_ARCH_X86_64, "AuthenticAMD", 0x1a, 0x1a, 0x00, 0x4f, 0, 0, 0, 0, 0,
     "Zen 5: nothing changed: measured on 2-core EPYC VMs, 256 MiB-2 GiB: CLZERO ~35-54 "
     "GB/s, AVX NT ~22-25, glibc memset ~21-26; on a 2-vCPU "
     "VM (family 0x1a model 2) CLZERO, AVX2 and AVX-512 NT tied at 64 MiB (~67 GB/s) "
     "and rep stosb ~51-59. That VM reports the host socket's L3 (508 MiB, CPUID "
     "0x80000006; no TOPOEXT leaf): the first-use scan lowers cold_min to 4 MiB there"},
    /* ---- arm64: MIDR implementer/part (Linux cputype.h; Arm TRMs, MIDR_EL1) ---- */
    {"neoverse-n1", MMP_ARCH_ARM64, "", 0, 0, 0, 0, MIDR_PART, 0x4100d0c0, 0, 0, 0,
     "Neoverse N1 (also Ampere Altra/Altra Max, built from N1 cores: Phoronix 2022-05 "
     "'Ampere1 LLVM'): nothing changed: DC ZVA with 64-byte blocks (N1 TRM, DCZID_EL0 "
     "BS=4) for hot and cold, as Linux clear_page and glibc's memset (zva_size 64) do; "
     "no FEAT_MOPS (Armv8.2)"},
    {"neoverse-v1", MMP_ARCH_ARM64, "", 0, 0, 0, 0, MIDR_PART, 0x4100d400, 0, 0, 0,
     "Neoverse V1: nothing changed: as neoverse-n1 (64-byte DC ZVA, Armv8.4: no MOPS)"},
    {"neoverse-n2", MMP_ARCH_ARM64, "", 0, 0, 0, 0, MIDR_PART, 0x4100d490, 0, 0, 0,
     "Neoverse N2: nothing changed: as neoverse-n1 (64-byte DC ZVA, Armv9.0: no MOPS)"},
    {"neoverse-v2", MMP_ARCH_ARM64, "", 0, 0, 0, 0, MIDR_PART, 0x4100d4f0, 0, 0, 0,
     "Neoverse V2 (Grace, Graviton4): nothing changed: as neoverse-n1 (64-byte DC ZVA, "
     "Armv9.0: no MOPS)"},
    {"ampereone", MMP_ARCH_ARM64, "", 0, 0, 0, 0, MIDR_PART, 0xc000ac30, 0, 0, 0,
     "AmpereOne: Ampere's own Armv8.6 core (Phoronix 2022-05 'Ampere1 LLVM'): nothing "
     "changed: no FEAT_MOPS (Armv8.8), so DC ZVA/STP by block size; no public clearing "
     "figure, so the first-use measurement decides"},
    {"apple", MMP_ARCH_ARM64, "", 0, 0, 0, 0, 0xff000000ull, 0x61000000, 0, 0, 0,
     "Apple M1/M2/M3 (implementer 0x61; Firestorm/Icestorm and later, Armv8.4-8.6: "
     "Wikipedia 'Apple M1'): nothing changed: no FEAT_MOPS, DC ZVA by the block size "
     "DCZID_EL0 reports; no public clearing figure, so the first-use measurement decides"},
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
    uint32_t left_out = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        left_out |= mmp_core_clear_left_out(k) ? MMP_KBIT(k) : 0;
    unsigned hot, cold;
    switch (f->arch) {
    case MMP_ARCH_X86_64:
        hot = PICK(f, x86_hot, out->bad_hot | left_out);
        cold = PICK(f, x86_cold, out->bad_cold | left_out);
        break;
    case MMP_ARCH_ARM64:
        hot = PICK(f, arm_hot, out->bad_hot | left_out);
        cold = PICK(f, arm_cold, out->bad_cold | left_out);
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

bool mmp_core_parse_size(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || *s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    default: break;
    }
    if (shift) {
        if (x > (UINT64_MAX >> shift))
            return false;
        x <<= shift;
        s++;
    }
    if (*s)
        return false;
    *v = x;
    return true;
}

/*
 * The vendor as one word of a tuning file: spaces become '_' (Zhaoxin's
 * CPUID vendor is "  Shanghai  "), an empty one is "-".
 */
static char vendor_char(char c)
{
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.';
    return keep ? c : '_';
}

static bool vendor_word_is(const char *w, const char *vendor)
{
    if (!*vendor)
        return mmp_core_streq(w, "-");
    while (*vendor && *w == vendor_char(*vendor))
        w++, vendor++;
    return !*w && !*vendor;
}

void mmp_core_clear_put_cpu_id(struct mmp_core_sink *o, const struct mmp_cpu_features *f,
                               char sep)
{
    char v[sizeof f->vendor], s[2] = {sep, '\0'};
    size_t i = 0;
    for (; f->vendor[i] && i + 1 < sizeof v; i++)
        v[i] = vendor_char(f->vendor[i]);
    v[i] = '\0';
    mmp_core_put(o, mmp_arch_name(f->arch)), mmp_core_put(o, s);
    mmp_core_put(o, i ? v : "-"), mmp_core_put(o, s);
    mmp_core_put_u64(o, f->family), mmp_core_put(o, s);
    mmp_core_put_u64(o, f->model), mmp_core_put(o, s);
    mmp_core_put_u64(o, f->midr);
}

void mmp_core_clear_put_cpu(struct mmp_core_sink *o, const struct mmp_cpu_features *f)
{
    mmp_core_put(o, "cpu ");
    mmp_core_clear_put_cpu_id(o, f, ' ');
    mmp_core_put(o, "\n");
}

/* Next space/tab-separated word of the line at *p (NUL-terminated), in place. */
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

static bool u64_is(const char *w, uint64_t want)
{
    uint64_t v;
    return mmp_core_parse_size(w, &v) && v == want;
}

static char refusal[160];

/* "line N: <a><b><c>" into refusal; returns it. */
static const char *refuse(unsigned line, const char *a, const char *b, const char *c)
{
    struct mmp_core_sink o = {refusal, sizeof refusal, 0};
    if (line)
        mmp_core_put(&o, "line "), mmp_core_put_u64(&o, line), mmp_core_put(&o, ": ");
    mmp_core_put(&o, a);
    mmp_core_put(&o, b ? b : "");
    mmp_core_put(&o, c ? c : "");
    return refusal;
}

/* Keys of a tuning file and how many values each takes. */
static const struct {
    const char *key;
    unsigned nval;
} keys[] = {{"cpu", 5}, {"hot", 1}, {"cold", 1}, {"cold_min", 1}};
#define NKEYS (sizeof keys / sizeof keys[0])

/*
 * The format written by mmp_clear_tuning_format():
 *   cpu <arch> <vendor|-> <family> <model> <midr>
 *   hot <kernel> / cold <kernel> / cold_min <bytes>
 * plus '#' comments and blank lines. Whole file or nothing: anything the
 * writer would not have written refuses the file, with the line and reason.
 */
const char *mmp_core_clear_tuning_apply(char *text, size_t len, const struct mmp_cpu_features *f,
                                        uint32_t usable, struct mmp_clear_policy *pol)
{
    if (!len)
        return refuse(0, "empty file", NULL, NULL);
    unsigned line = 1;
    for (size_t i = 0; i < len; i++) {
        if (!text[i])
            return refuse(line, "NUL byte", NULL, NULL);
        line += text[i] == '\n';
    }
    if (text[len - 1] != '\n')
        return refuse(line, "last line cut short (no newline at the end)", NULL, NULL);
    text[len] = '\0';
    struct mmp_clear_policy t = *pol;
    unsigned seen = 0;
    char *next = text;
    for (line = 1; *next; line++) {
        char *p = next;
        while (*next != '\n')
            next++;
        *next++ = '\0'; /* p is now one line */
        char *key = word(&p);
        if (!key || *key == '#')
            continue;
        unsigned ki = 0;
        while (ki < NKEYS && !mmp_core_streq(key, keys[ki].key))
            ki++;
        if (ki == NKEYS)
            return refuse(line, "unknown key '", key, "'");
        if (seen & (1u << ki))
            return refuse(line, "'", key, "' given twice");
        seen |= 1u << ki;
        char *v[6] = {0};
        unsigned nv = 0;
        while (nv < 6 && (v[nv] = word(&p)) != NULL)
            nv++;
        if (nv > keys[ki].nval)
            return refuse(line, "extra words after '", key, "'");
        if (nv < keys[ki].nval)
            return refuse(line, "'", key, "' lacks a value");
        if (ki == 0) {
            if (!mmp_core_streq(v[0], mmp_arch_name(f->arch)) || !vendor_word_is(v[1], f->vendor) ||
                !u64_is(v[2], f->family) || !u64_is(v[3], f->model) || !u64_is(v[4], f->midr))
                return refuse(line, "written for another CPU", NULL, NULL);
        } else if (ki == 1 || ki == 2) {
            int k = mmp_core_clear_lookup(v[0]);
            if (k < 0)
                return refuse(line, "unknown kernel '", v[0], "'");
            if (!(usable & MMP_KBIT(k)))
                return refuse(line, "kernel '", v[0], "' not usable on this CPU or build");
            if (ki == 1)
                t.hot = mmp_core_clear_kdesc[k].name;
            else
                t.cold = mmp_core_clear_kdesc[k].name;
        } else {
            uint64_t b;
            if (!mmp_core_parse_size(v[0], &b))
                return refuse(line, "bad cold_min '", v[0], "' (bytes, optional K/M/G)");
            t.cold_min = b;
            t.cold_min_from = "tuning";
        }
    }
    if (!(seen & 1u))
        return refuse(0, "no cpu line", NULL, NULL);
    *pol = t;
    pol->source = "tuning";
    return NULL;
}

static char tuning_text[MMP_CORE_TUNING_MAX + 1];
static char tuning_note[200];

static void apply_tuning_file(const char *path, const struct mmp_cpu_features *f, uint32_t usable,
                              struct mmp_clear_policy *pol)
{
    long n = mmp_host_read_file(path, tuning_text, sizeof tuning_text);
    const char *why;
    if (n == -MMP_ERANGE)
        why = refuse(0, "larger than 16 KiB", NULL, NULL);
    else if (n < 0)
        why = refuse(0, "cannot read MMPORT_TUNING", NULL, NULL);
    else
        why = mmp_core_clear_tuning_apply(tuning_text, (size_t)n, f, usable, pol);
    if (!why)
        return;
    struct mmp_core_sink o = {tuning_note, sizeof tuning_note, 0};
    mmp_core_put(&o, "table (tuning ignored: ");
    mmp_core_put(&o, why);
    mmp_core_put(&o, ")");
    pol->source = tuning_note;
}

static char cold_min_note[160], forced_note[200];

/* "<var>='<value>' <why>" into buf. */
static const char *env_note(char *buf, size_t cap, const char *var, const char *value,
                            const char *why)
{
    struct mmp_core_sink o = {buf, cap, 0};
    mmp_core_put(&o, var), mmp_core_put(&o, "='"), mmp_core_put(&o, value);
    mmp_core_put(&o, "' "), mmp_core_put(&o, why);
    return buf;
}

void mmp_core_clear_policy_in_force(struct mmp_clear_policy *pol, int *forced, int *forced_err)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    mmp_clear_policy_for(f, pol);
    uint32_t usable = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        usable |= mmp_core_clear_fn_of(k) ? MMP_KBIT(k) : 0;
    const char *path = mmp_host_getenv("MMPORT_TUNING");
    if (path && *path)
        apply_tuning_file(path, f, usable, pol);
    else if (!mmp_host_getenv("MMPORT_CLEAR"))
        mmp_core_clear_verify(f, usable, pol);
    uint64_t b;
    const char *cm = mmp_host_getenv("MMPORT_CLEAR_COLD_MIN");
    if (cm && mmp_core_parse_size(cm, &b)) {
        pol->cold_min = b;
        pol->cold_min_from = "env";
    } else if (cm && *cm) {
        pol->cold_min_error = env_note(cold_min_note, sizeof cold_min_note,
                                       "MMPORT_CLEAR_COLD_MIN", cm,
                                       "ignored: not a size (decimal bytes, optional K/M/G)");
    }
    *forced = -1;
    *forced_err = 0;
    const char *name = mmp_host_getenv("MMPORT_CLEAR");
    if (name && *name) {
        int k = mmp_core_clear_lookup(name);
        if (k < 0)
            *forced_err = -MMP_EINVAL;
        else if (!(usable & MMP_KBIT(k)))
            *forced_err = -MMP_ENOTSUP;
        else
            *forced = k, pol->forced = mmp_core_clear_kdesc[k].name;
        if (*forced_err)
            pol->forced_error = env_note(
                forced_note, sizeof forced_note, "MMPORT_CLEAR", name,
                k < 0 ? "is no kernel: every clear without opts->kernel fails (-EINVAL)"
                      : "cannot run on this CPU or build: every clear without opts->kernel "
                        "fails (-ENOTSUP)");
        pol->forced_status = *forced_err;
    }
}
