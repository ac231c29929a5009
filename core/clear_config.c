/* SPDX-License-Identifier: MIT */
/*
 * The clearing policy in force (layer 5; core/clear.c has the layers).
 * Files are read only when a variable names them (MMPORT_TUNING,
 * MMPORT_CACHE_DIR) and written only by mmp_clear_tune() with a directory;
 * measuring happens only in mmp_clear_tune(). Freestanding: environment,
 * files, clock and scratch memory come through core/host.h (none there).
 */
#include "clear_config.h"
#include "clear_measure.h"
#include "clear_tuning.h"
#include "host.h"

/* One file's text at a time: first use and mmp_clear_tune() never overlap. */
static char text[MMP_CORE_TUNING_MAX + 1], applied[MMP_CORE_TUNING_MAX + 1];
static char path[512];
static char tuning_note[200], cache_note[700], tune_note[700], cold_min_note[160],
    forced_note[200];

/* buf = a b c d e; returns buf. */
static const char *note(char *buf, size_t cap, const char *a, const char *b, const char *c,
                        const char *d, const char *e)
{
    struct mmp_core_sink o = {buf, cap, 0};
    mmp_core_put(&o, a), mmp_core_put(&o, b), mmp_core_put(&o, c), mmp_core_put(&o, d);
    mmp_core_put(&o, e);
    return buf;
}

/*
 * Applies the tuning file at p onto *pol, whole or not at all. 0; the
 * host's error if it cannot be read (-MMP_ENOENT, -MMP_ENOSYS); or
 * -MMP_EINVAL with *why saying what was refused.
 */
static int load(const char *p, const struct mmp_cpu_features *f, uint32_t usable,
                struct mmp_clear_policy *pol, const char **why)
{
    long n = mmp_host_read_file(p, text, sizeof text);
    *why = "larger than 16 KiB";
    if (n == -MMP_ERANGE)
        return -MMP_EINVAL;
    if (n < 0)
        return (int)n;
    struct mmp_clear_policy t = *pol;
    *why = mmp_core_clear_tuning_apply(text, (size_t)n, f, usable, &t);
    if (*why)
        return -MMP_EINVAL;
    *pol = t;
    return 0;
}

/* The file MMPORT_TUNING names. */
static void from_tuning_file(const char *p, const struct mmp_cpu_features *f, uint32_t usable,
                             struct mmp_clear_policy *pol)
{
    const char *why;
    int rc = load(p, f, usable, pol, &why);
    if (rc)
        pol->source = note(tuning_note, sizeof tuning_note, "table (tuning ignored: ",
                           rc == -MMP_EINVAL ? why : "cannot read MMPORT_TUNING", ")", "", "");
}

/* The per-CPU-model file in the directory MMPORT_CACHE_DIR names, if there is one. */
static void from_cache_dir(const char *dir, const struct mmp_cpu_features *f, uint32_t usable,
                           struct mmp_clear_policy *pol)
{
    const char *why;
    if (mmp_core_clear_cache_path(dir, f, path, sizeof path) < 0) {
        pol->source = "table (MMPORT_CACHE_DIR ignored: path too long)";
        return;
    }
    int rc = load(path, f, usable, pol, &why);
    if (!rc)
        pol->source = note(cache_note, sizeof cache_note, "cached file ", path, "", "", "");
    else if (rc == -MMP_EINVAL)
        pol->source = note(cache_note, sizeof cache_note, "table (cached file ", path,
                           " ignored: ", why, ")");
    else
        pol->source = note(cache_note, sizeof cache_note, "table (no cached file ", path, ")", "", "");
}

/* "<var>='<value>' <why>" into buf. */
static const char *env_note(char *buf, size_t cap, const char *var, const char *value,
                            const char *why)
{
    struct mmp_core_sink o = {buf, cap, 0};
    mmp_core_put(&o, var), mmp_core_put(&o, "='"), mmp_core_put(&o, value);
    mmp_core_put(&o, "' "), mmp_core_put(&o, why);
    return buf;
}

/* The environment's overrides, read once; they win over files and measurements. */
static void read_env(struct mmp_core_clear_config *c, uint32_t usable)
{
    struct mmp_clear_policy *pol = &c->pol;
    const char *cm = mmp_host_getenv("MMPORT_CLEAR_COLD_MIN");
    c->cold_min_env = cm && mmp_core_parse_size(cm, &c->cold_min);
    if (c->cold_min_env) {
        pol->cold_min = c->cold_min;
        pol->cold_min_from = "env";
    } else if (cm && *cm) {
        pol->cold_min_error = env_note(cold_min_note, sizeof cold_min_note,
                                       "MMPORT_CLEAR_COLD_MIN", cm,
                                       "ignored: not a size (decimal bytes, optional K/M/G)");
    }
    c->forced = -1;
    c->forced_err = 0;
    const char *name = mmp_host_getenv("MMPORT_CLEAR");
    if (name && *name) {
        int k = mmp_core_clear_lookup(name);
        if (k < 0)
            c->forced_err = -MMP_EINVAL;
        else if (!(usable & MMP_KBIT(k)))
            c->forced_err = -MMP_ENOTSUP;
        else
            c->forced = k, pol->forced = mmp_core_clear_kdesc[k].name;
        if (c->forced_err)
            pol->forced_error = env_note(
                forced_note, sizeof forced_note, "MMPORT_CLEAR", name,
                k < 0 ? "is no kernel: every clear without opts->kernel fails (-EINVAL)"
                      : "cannot run on this CPU or build: every clear without opts->kernel "
                        "fails (-ENOTSUP)");
        pol->forced_status = c->forced_err;
    }
}

void mmp_core_clear_config_init(struct mmp_core_clear_config *c)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    uint32_t usable = mmp_core_clear_usable();
    *c = (struct mmp_core_clear_config){.forced = -1};
    mmp_clear_policy_for(f, &c->pol);
    const char *tuning = mmp_host_getenv("MMPORT_TUNING");
    const char *dir = mmp_host_getenv("MMPORT_CACHE_DIR");
    if (tuning && *tuning)
        from_tuning_file(tuning, f, usable, &c->pol);
    else if (dir && *dir)
        from_cache_dir(dir, f, usable, &c->pol);
    read_env(c, usable);
}

int mmp_core_clear_config_tune(const struct mmp_core_clear_config *cur,
                               struct mmp_core_clear_config *next, const char *dir,
                               unsigned flags)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    uint32_t usable = mmp_core_clear_usable();
    struct mmp_clear_policy base, pol;
    mmp_clear_policy_for(f, &base);
    pol = base;
    const char *why;
    bool loaded = false;
    if (dir) {
        if (mmp_core_clear_cache_path(dir, f, path, sizeof path) < 0)
            return -MMP_ERANGE;
        /* a missing or refused file is measured again (and replaced) */
        int rc = (flags & MMP_CLEAR_TUNE_AGAIN) ? -MMP_ENOENT : load(path, f, usable, &pol, &why);
        if (rc == -MMP_ENOSYS)
            return rc; /* no files in this build */
        loaded = rc == 0;
        if (loaded)
            pol.source = note(tune_note, sizeof tune_note, "cached file ", path, "", "", "");
    }
    if (!loaded) {
        long n = mmp_core_clear_measure(f, usable, &base, text, sizeof text);
        if (n < 0)
            return (int)n;
        __builtin_memcpy(applied, text, (size_t)n + 1); /* the parser writes into its text */
        if (mmp_core_clear_tuning_apply(applied, (size_t)n, f, usable, &pol))
            return -MMP_EIO; /* a measurement this parser refuses: a bug, never applied */
        int rc = dir ? mmp_host_write_file(path, text, (size_t)n) : 0;
        if (rc)
            return rc;
        pol.source = note(tune_note, sizeof tune_note, "measured by mmp_clear_tune()",
                          dir ? ", cached in " : "", dir ? path : "", "", "");
    }
    *next = *cur;
    const struct mmp_clear_policy *env = &cur->pol;
    pol.forced = env->forced;
    pol.forced_error = env->forced_error;
    pol.forced_status = env->forced_status;
    pol.cold_min_error = env->cold_min_error;
    if (cur->cold_min_env) {
        pol.cold_min = cur->cold_min;
        pol.cold_min_from = "env";
    }
    next->pol = pol;
    return 0;
}
