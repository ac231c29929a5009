/* SPDX-License-Identifier: MIT */
/*
 * Flattened device tree: walk and rewrite (fdt.h). The structure block is
 * a stream of big-endian 32-bit tokens: BEGIN_NODE + name, PROP + length +
 * name offset + value, END_NODE, NOP, END; properties come before subnodes.
 */
#include "fdt.h"

#include "hyp.h"

enum { T_BEGIN = 1, T_END_NODE = 2, T_PROP = 3, T_NOP = 4, T_END = 9 };
#define MAX_DEPTH 8
#define MAX_NODES 512

static uint32_t be32(const void *p)
{
    const uint8_t *b = p;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

static size_t slen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static int streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* Header fields (offsets in bytes). */
enum {
    H_MAGIC = 0,
    H_TOTAL = 4,
    H_STRUCT = 8,
    H_STRINGS = 12,
    H_RSV = 16,
    H_VERSION = 20,
    H_LASTCOMP = 24,
    H_BOOTCPU = 28,
    H_STRSIZE = 32,
    H_STRUCTSIZE = 36,
    H_LEN = 40
};

int fdt_check(const void *fdt, size_t max)
{
    const uint8_t *h = fdt;
    uint32_t total = be32(h + H_TOTAL);
    if (be32(h + H_MAGIC) != FDT_MAGIC || total < H_LEN || total > max ||
        be32(h + H_VERSION) < 16)
        return -1;
    uint32_t so = be32(h + H_STRUCT), ss = be32(h + H_STRUCTSIZE);
    uint32_t to = be32(h + H_STRINGS), ts = be32(h + H_STRSIZE);
    if (so > total || ss > total - so || to > total || ts > total - to || (so & 3))
        return -1;
    return 0;
}

uint32_t fdt_size(const void *fdt)
{
    return be32((const uint8_t *)fdt + H_TOTAL);
}

/* One token of the structure block. */
struct tok {
    uint32_t type;
    const char *name; /* node name, or property name */
    const uint8_t *val;
    uint32_t len;
};

struct cur {
    const uint8_t *s; /* structure block */
    uint32_t off, size;
    const char *strings;
    uint32_t strsize;
};

static void cur_init(struct cur *c, const void *fdt)
{
    const uint8_t *h = fdt;
    c->s = h + be32(h + H_STRUCT);
    c->size = be32(h + H_STRUCTSIZE);
    c->off = 0;
    c->strings = (const char *)h + be32(h + H_STRINGS);
    c->strsize = be32(h + H_STRSIZE);
}

/* Returns 0 with the next token, -1 when malformed. */
static int next(struct cur *c, struct tok *t)
{
    if (c->off + 4 > c->size)
        return -1;
    t->type = be32(c->s + c->off);
    c->off += 4;
    switch (t->type) {
    case T_BEGIN: {
        t->name = (const char *)c->s + c->off;
        uint32_t n = 0;
        while (c->off + n < c->size && t->name[n])
            n++;
        if (c->off + n >= c->size)
            return -1;
        c->off += (n + 4) & ~3u;
        return 0;
    }
    case T_PROP: {
        if (c->off + 8 > c->size)
            return -1;
        t->len = be32(c->s + c->off);
        uint32_t no = be32(c->s + c->off + 4);
        c->off += 8;
        if (no >= c->strsize || t->len > c->size - c->off)
            return -1;
        t->name = c->strings + no;
        t->val = c->s + c->off;
        c->off += (t->len + 3) & ~3u;
        return 0;
    }
    case T_END_NODE:
    case T_NOP:
    case T_END:
        return 0;
    default:
        return -1;
    }
}

int fdt_nodes(const void *fdt, int (*fn)(void *arg, const struct fdt_node *n), void *arg)
{
    struct fdt_node st[MAX_DEPTH];
    uint32_t ac[MAX_DEPTH], sc[MAX_DEPTH]; /* cells each node gives its children */
    int reported[MAX_DEPTH];
    int depth = 0, rc;
    unsigned index = 0;
    struct cur c;
    struct tok t;
    cur_init(&c, fdt);
    for (;;) {
        if (next(&c, &t))
            return -1;
        switch (t.type) {
        case T_BEGIN:
            if (depth >= MAX_DEPTH)
                return -1;
            if (depth > 0 && !reported[depth - 1]) {
                reported[depth - 1] = 1;
                if ((rc = fn(arg, &st[depth - 1])))
                    return rc;
            }
            memset(&st[depth], 0, sizeof(st[depth]));
            st[depth].name = t.name;
            st[depth].depth = depth;
            st[depth].index = index++;
            st[depth].reg_addr_cells = depth ? ac[depth - 1] : 2;
            st[depth].reg_size_cells = depth ? sc[depth - 1] : 1;
            ac[depth] = 2, sc[depth] = 1;
            reported[depth] = 0;
            depth++;
            break;
        case T_PROP: {
            if (!depth)
                return -1;
            struct fdt_node *n = &st[depth - 1];
            if (streq(t.name, "compatible"))
                n->compat = (const char *)t.val, n->compat_len = (int)t.len;
            else if (streq(t.name, "reg"))
                n->reg = t.val, n->reg_len = (int)t.len;
            else if (streq(t.name, "device_type"))
                n->device_type = (const char *)t.val;
            else if (streq(t.name, "method"))
                n->method = (const char *)t.val;
            else if (streq(t.name, "status"))
                n->status = t.val;
            else if (streq(t.name, "#address-cells") && t.len == 4)
                ac[depth - 1] = be32(t.val);
            else if (streq(t.name, "#size-cells") && t.len == 4)
                sc[depth - 1] = be32(t.val);
            break;
        }
        case T_END_NODE:
            if (!depth)
                return -1;
            depth--;
            if (!reported[depth] && (rc = fn(arg, &st[depth])))
                return rc;
            break;
        case T_END:
            return depth ? -1 : 0;
        }
    }
}

static uint64_t cells(const uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v = v << 32 | be32(p + 4 * i);
    return v;
}

uint64_t fdt_reg(const struct fdt_node *n, int i, uint64_t *size)
{
    uint32_t a = n->reg_addr_cells, s = n->reg_size_cells, per = 4 * (a + s);
    *size = 0;
    if (!n->reg || a > 2 || s > 2 || (uint32_t)n->reg_len < per * (uint32_t)(i + 1))
        return 0;
    const uint8_t *p = n->reg + per * (uint32_t)i;
    *size = cells(p + 4 * a, s);
    return cells(p, a);
}

int fdt_compatible(const struct fdt_node *n, const char *compat)
{
    for (int i = 0; n->compat && i < n->compat_len; i += (int)slen(n->compat + i) + 1)
        if (streq(n->compat + i, compat))
            return 1;
    return 0;
}

const char *fdt_prop_string(const void *fdt, const char *node, const char *prop)
{
    struct cur c;
    struct tok t;
    int depth = 0, in = 0;
    cur_init(&c, fdt);
    while (!next(&c, &t) && t.type != T_END) {
        if (t.type == T_BEGIN)
            in = ++depth == 2 && streq(t.name, node);
        else if (t.type == T_END_NODE)
            in = 0, depth--;
        else if (t.type == T_PROP && in && streq(t.name, prop) && t.len &&
                 !t.val[t.len - 1])
            return (const char *)t.val;
    }
    return NULL;
}

/* ---- rewrite ---- */

struct out {
    uint8_t *s; /* structure block being written */
    size_t n, cap;
    const char *strings; /* the input's strings block */
    uint32_t strsize;
    char extra[256]; /* names the input's strings block lacks */
    uint32_t nextra;
    int err;
};

static void emit(struct out *o, const void *p, size_t len)
{
    size_t pad = (len + 3) & ~(size_t)3;
    if (o->n + pad > o->cap) {
        o->err = 1;
        return;
    }
    memcpy(o->s + o->n, p, len);
    memset(o->s + o->n + len, 0, pad - len);
    o->n += pad;
}

static void emit32(struct out *o, uint32_t v)
{
    uint8_t b[4];
    put32(b, v);
    emit(o, b, 4);
}

static uint32_t name_off(struct out *o, const char *name)
{
    for (uint32_t i = 0; i < o->strsize; i += (uint32_t)slen(o->strings + i) + 1)
        if (streq(o->strings + i, name))
            return i;
    for (uint32_t i = 0; i < o->nextra; i += (uint32_t)slen(o->extra + i) + 1)
        if (streq(o->extra + i, name))
            return o->strsize + i;
    size_t l = slen(name) + 1;
    if (o->nextra + l > sizeof(o->extra)) {
        o->err = 1;
        return 0;
    }
    memcpy(o->extra + o->nextra, name, l);
    o->nextra += (uint32_t)l;
    return o->strsize + o->nextra - (uint32_t)l;
}

static void emit_prop(struct out *o, const char *name, const void *val, uint32_t len)
{
    emit32(o, T_PROP);
    emit32(o, len);
    emit32(o, name_off(o, name));
    emit(o, val, len);
}

static void emit_u64(struct out *o, const char *name, uint64_t v)
{
    uint8_t b[8];
    put32(b, (uint32_t)(v >> 32));
    put32(b + 4, (uint32_t)v);
    emit_prop(o, name, b, 8);
}

struct plan {
    const struct fdt_edit *e;
    uint8_t disable[MAX_NODES / 8];
};

static int plan_node(void *arg, const struct fdt_node *n)
{
    struct plan *p = arg;
    if (n->depth != 1 || n->index >= MAX_NODES)
        return n->index >= MAX_NODES ? -1 : 0;
    if (!p->e->keep(n))
        p->disable[n->index / 8] |= (uint8_t)(1u << (n->index % 8));
    return 0;
}

/* Per open node: what to add before its first subnode or its end. */
struct open {
    int disabled, chosen, memory, added;
};

static void add_props(struct out *o, struct open *n, const struct fdt_edit *e)
{
    if (n->added)
        return;
    n->added = 1;
    if (n->disabled)
        emit_prop(o, "status", "disabled", 9);
    if (n->chosen) {
        emit_prop(o, "bootargs", e->bootargs, (uint32_t)slen(e->bootargs) + 1);
        if (e->initrd_end > e->initrd_start) {
            emit_u64(o, "linux,initrd-start", e->initrd_start);
            emit_u64(o, "linux,initrd-end", e->initrd_end);
        }
    }
}

long fdt_rewrite(const void *in, void *out, size_t cap, const struct fdt_edit *e)
{
    static struct plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.e = e;
    if (fdt_nodes(in, plan_node, &plan))
        return -1;
    const uint8_t *h = in;
    uint8_t *w = out;
    if (cap < H_LEN + 16)
        return -1;
    /* Memory reservation block: copied up to its terminating entry. */
    const uint8_t *rsv = h + be32(h + H_RSV);
    size_t nrsv = 0;
    while (cells(rsv + 16 * nrsv, 2) || cells(rsv + 16 * nrsv + 8, 2))
        if (++nrsv > 64)
            return -1;
    size_t rsv_bytes = 16 * (nrsv + 1), so = H_LEN + rsv_bytes;
    if (so > cap)
        return -1;
    memcpy(w + H_LEN, rsv, rsv_bytes);

    struct out o = {.s = w + so, .cap = cap - so};
    struct cur c;
    struct tok t;
    struct open st[MAX_DEPTH];
    int depth = 0, memory_done = 0;
    unsigned index = 0;
    cur_init(&c, in);
    o.strings = c.strings;
    o.strsize = c.strsize;
    for (;;) {
        if (next(&c, &t))
            return -1;
        if (t.type == T_END) {
            emit32(&o, T_END);
            break;
        }
        switch (t.type) {
        case T_BEGIN: {
            if (depth >= MAX_DEPTH)
                return -1;
            if (depth)
                add_props(&o, &st[depth - 1], e);
            struct open *n = &st[depth];
            memset(n, 0, sizeof(*n));
            n->disabled =
                index < MAX_NODES && (plan.disable[index / 8] >> (index % 8)) & 1;
            index++;
            char name[48];
            const char *nm = t.name;
            if (depth == 1 && streq(t.name, "chosen")) {
                n->chosen = 1;
            } else if (depth == 1 && !memcmp(t.name, "memory", 6) &&
                       (t.name[6] == '@' || !t.name[6])) {
                if (memory_done) {
                    n->disabled = 1; /* one memory node: the guest's RAM */
                } else {
                    n->memory = memory_done = 1;
                    hyp_snprintf(name, sizeof(name), "memory@%lx",
                                 (unsigned long)e->mem_base);
                    nm = name;
                }
            }
            emit32(&o, T_BEGIN);
            emit(&o, nm, slen(nm) + 1);
            depth++;
            break;
        }
        case T_PROP: {
            struct open *n = &st[depth - 1];
            if (n->disabled && streq(t.name, "status"))
                break;
            if (n->chosen &&
                (streq(t.name, "bootargs") || streq(t.name, "linux,initrd-start") ||
                 streq(t.name, "linux,initrd-end")))
                break;
            if (n->memory && streq(t.name, "reg")) {
                uint8_t reg[16];
                put32(reg, (uint32_t)(e->mem_base >> 32));
                put32(reg + 4, (uint32_t)e->mem_base);
                put32(reg + 8, (uint32_t)(e->mem_size >> 32));
                put32(reg + 12, (uint32_t)e->mem_size);
                emit_prop(&o, "reg", reg, 16); /* QEMU virt: 2 + 2 cells */
                break;
            }
            emit_prop(&o, t.name, t.val, t.len);
            break;
        }
        case T_END_NODE:
            if (!depth)
                return -1;
            add_props(&o, &st[depth - 1], e);
            emit32(&o, T_END_NODE);
            depth--;
            break;
        default: /* NOP: dropped */
            break;
        }
    }
    size_t to = so + o.n, total = to + o.strsize + o.nextra;
    if (o.err || total > cap)
        return -1;
    memcpy(w + to, o.strings, o.strsize);
    memcpy(w + to + o.strsize, o.extra, o.nextra);
    put32(w + H_MAGIC, FDT_MAGIC);
    put32(w + H_TOTAL, (uint32_t)total);
    put32(w + H_STRUCT, (uint32_t)so);
    put32(w + H_STRINGS, (uint32_t)to);
    put32(w + H_RSV, H_LEN);
    put32(w + H_VERSION, 17);
    put32(w + H_LASTCOMP, 16);
    put32(w + H_BOOTCPU, be32(h + H_BOOTCPU));
    put32(w + H_STRSIZE, o.strsize + o.nextra);
    put32(w + H_STRUCTSIZE, (uint32_t)o.n);
    return (long)total;
}
