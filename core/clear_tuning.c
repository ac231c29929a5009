/* SPDX-License-Identifier: MIT */
/*
 * The tuning file (layer 3; core/clear.c has the layers): the text
 * `mmport tune`, mmp_clear_tuning_format() and mmp_clear_tune() write, and
 * its parser, which applies a file whole or not at all onto a policy.
 * Freestanding: the text comes and goes through the caller.
 */
#include "clear_tuning.h"
#include "clear_text.h"

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

int mmp_core_clear_tuning_format_for(const struct mmp_clear_calibration *cal,
                                     const struct mmp_cpu_features *f, char *text, size_t cap)
{
    if (!cal || !f || !text || !cap || !cal->hot || !cal->cold)
        return -MMP_EINVAL;
    struct mmp_core_sink o = {text, cap, 0};
    mmp_core_put(&o, "# mmport clearing tuning, written by mmport tune; use: MMPORT_TUNING=<file>\n");
    mmp_core_put(&o, "# measured MB/s (lines evicted first), per kernel at sizes:");
    for (size_t s = 0; s < cal->nsizes; s++)
        mmp_core_put(&o, " "), mmp_core_put_u64(&o, cal->size[s]);
    mmp_core_put(&o, "\n");
    for (unsigned k = 0; k < MMP_K_COUNT; k++) {
        if (!cal->mbps[k][0])
            continue;
        mmp_core_put(&o, "#   "), mmp_core_put(&o, mmp_core_clear_kdesc[k].name);
        for (size_t s = 0; s < cal->nsizes; s++)
            mmp_core_put(&o, " "), mmp_core_put_u64(&o, cal->mbps[k][s]);
        mmp_core_put(&o, "\n");
    }
    mmp_core_clear_put_cpu(&o, f);
    mmp_core_put(&o, "hot "), mmp_core_put(&o, cal->hot), mmp_core_put(&o, "\n");
    mmp_core_put(&o, "cold "), mmp_core_put(&o, cal->cold), mmp_core_put(&o, "\n");
    mmp_core_put(&o, "cold_min "), mmp_core_put_u64(&o, cal->cold_min), mmp_core_put(&o, "\n");
    if (o.n + 1 > cap || o.n > 0x7fffffff)
        return -MMP_ERANGE;
    return (int)o.n;
}

int mmp_clear_tuning_format(const struct mmp_clear_calibration *cal, char *text, size_t cap)
{
    return mmp_core_clear_tuning_format_for(cal, mmp_cpu_features(), text, cap);
}

int mmp_core_clear_cache_path(const char *dir, const struct mmp_cpu_features *f, char *path,
                              size_t cap)
{
    struct mmp_core_sink o = {path, cap, 0};
    mmp_core_put(&o, dir);
    mmp_core_put(&o, "/clear-");
    mmp_core_clear_put_cpu_id(&o, f, '-');
    mmp_core_put(&o, ".conf");
    return o.n + 1 > cap || o.n > 0x7fffffff ? -MMP_ERANGE : (int)o.n;
}
