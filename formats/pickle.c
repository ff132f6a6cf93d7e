/* formats/pickle.c: the restricted pickle VM. It runs the opcodes of protocols 0-5
 * over its own inert values; nothing is imported or called (see pickle.h).
 *
 * Machine state, as in CPython's Unpickler:
 *
 *   stack  [ v0 v1 | v2 v3 v4 | v5 ]     values; '|' are the open MARKs
 *   marks  [ 2, 5 ]                      stack heights at each MARK
 *   memo   [ 0: v1, 1: --, 2: v4, ... ]  PUT/BINPUT/MEMOIZE store, GET fetches
 *
 * Only the values above the last mark are reachable: an opcode that pops from an
 * empty frame is a stack underflow (LC_E_MALFORMED), as in CPython. Every value is
 * allocated from the lc_pickle's arena and never freed alone. */
#include "formats/pickle.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "formats/pickle_op_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/hash.h"
#include "libconvert/rd.h"

_Static_assert(LC_PICKLE_MAX_MEMO == LC_PICKLE_OP_MAX_MEMO, "one memo limit");
_Static_assert(LC_PICKLE_MAX_DIGITS == LC_PICKLE_OP_MAX_DIGITS, "one digit limit");

enum { F_ORDERED = 1, F_HASHED = 2, F_UNHASHABLE = 4 };
enum { DFS_NEW = 0, DFS_OPEN = 1, DFS_DONE = 2 };

struct lc_pickle_val {
    uint8_t  kind;
    uint8_t  flags;
    uint8_t  op;     /* NEWOBJ: the opcode that made it */
    uint8_t  dfs;    /* state in the final nesting check */
    uint32_t depth;  /* height of the nesting below this value */
    uint32_t id;
    uint32_t hash;   /* cached when F_HASHED */
    uint64_t off;
    union {
        bool    b;
        int64_t i;
        double  f;
        struct { char *p; uint64_t n; } s;   /* STR BYTES BYTEARRAY BIGINT */
        struct {                             /* TUPLE LIST SET FROZENSET DICT */
            lc_pickle_val **v;                /* DICT: k0 v0 k1 v1 ... */
            uint64_t n, cap;                  /* n: items, or pairs for DICT */
            struct map_ext *x;                /* DICT SET FROZENSET: made on first use */
        } c;
        struct { const char *mod, *name; } g;
        struct { lc_pickle_val *fn, *args, *kw, *state; } o;
        lc_pickle_val *pid;
    } u;
};

/* What only maps need, kept out of every value (a torch pickle is mostly ints and
 * tuples: each value is 56 bytes, not 72). */
struct map_ext {
    uint32_t      *idx;      /* hash table of entry+1, DICT SET FROZENSET */
    uint64_t       icap;
    lc_pickle_val *state;    /* BUILD on an OrderedDict */
};
_Static_assert(sizeof(lc_pickle_val) <= 56, "a pickle value stays small");

struct lc_pickle {
    lc_pickle_op_arena a;
    lc_pickle_val     *root;
    uint64_t           end;
    size_t             count;
};

/* None, True and False are shared, never written: nothing marks or hashes them in place. */
static lc_pickle_val k_none = { .kind = LC_PICKLE_NONE };
static lc_pickle_val k_true = { .kind = LC_PICKLE_BOOL, .u.b = true };
static lc_pickle_val k_false = { .kind = LC_PICKLE_BOOL, .u.b = false };

#define SMALL_INTS 1026

typedef struct vm {
    lc_rd           r;
    lc_error       *err;
    lc_pickle      *p;
    uint64_t        at;     /* offset of the opcode being run */
    lc_pickle_val **stack;
    uint64_t        sn, scap;
    uint64_t        marks[LC_PICKLE_MAX_MARKS];
    uint32_t        nm;
    lc_pickle_val **memo;
    uint64_t        mcap, mcount;
    uint64_t        max_values, nvalues;
    uint64_t        stored;   /* lc_pickle_opts.stored_size when it set max_values, else 0 */
    uint64_t        eq_budget;
    uint32_t        seed;   /* per load, so crafted keys cannot all collide */
    lc_pickle_val  *small[SMALL_INTS];   /* -1 .. SMALL_INTS - 2, made once (new_int) */
} vm;

#define FAIL(m, code, ...) lc_fail((m)->err, (code), (m)->at, __VA_ARGS__)

static bool is_scalar(const lc_pickle_val *v) {
    return v->kind <= LC_PICKLE_BYTEARRAY || v->kind == LC_PICKLE_GLOBAL;
}

/* ---- allocation ---- */

static lc_code oom(vm *m, uint64_t n) {
    lc_pickle_op_arena *a = &m->p->a;
    if (n > a->limit || a->total > a->limit - n)
        return FAIL(m, LC_E_OVERFLOW, "values would take more than %" PRIu64 " bytes", a->limit);
    return FAIL(m, LC_E_NOMEM, "out of memory for pickle values");
}

/* Counts one value against the budgets (a shared small int counts each time it is
 * pushed: the budgets bound the work an opcode stream asks for, not only its memory). */
static lc_code charge(vm *m) {
    if (m->nvalues >= m->max_values && m->stored)
        return FAIL(m, LC_E_OVERFLOW,
                    "more than %" PRIu64 " values, the budget of a pickle stored in %" PRIu64
                    " bytes (%u per byte + %u)", m->max_values, m->stored,
                    LC_PICKLE_VALUES_PER_BYTE, LC_PICKLE_VALUES_BASE);
    if (m->nvalues >= m->max_values)
        return FAIL(m, LC_E_OVERFLOW, "more than %" PRIu64 " values", m->max_values);
    m->nvalues++;
    return LC_OK;
}

static lc_code new_val(vm *m, uint8_t kind, lc_pickle_val **out) {
    LC_TRY(charge(m));
    lc_pickle_val *v = lc_pickle_op_alloc(&m->p->a, sizeof *v);
    if (!v)
        return oom(m, sizeof *v);
    v->kind = kind;
    v->off = m->at;
    v->id = (uint32_t)m->nvalues;
    *out = v;
    return LC_OK;
}

static lc_code new_blob(vm *m, uint8_t kind, const void *p, uint64_t n, lc_pickle_val **out) {
    LC_TRY(new_val(m, kind, out));
    char *d = lc_pickle_op_alloc(&m->p->a, n + 1);
    if (!d)
        return oom(m, n + 1);
    if (n)
        memcpy(d, p, (size_t)n);
    d[n] = '\0';
    (*out)->u.s.p = d;
    (*out)->u.s.n = n;
    return LC_OK;
}

/* Small ints are made once per pickle and shared: a torch pickle spells every size,
 * stride and offset of every tensor as its own int, most of them below a few hundred,
 * and an int is never written after it is made (nesting marks skip scalars, a cached
 * hash is the same for equal ints). The shared one keeps the offset where it first
 * appeared. */
static lc_code new_int(vm *m, int64_t i, lc_pickle_val **out) {
    lc_pickle_val **slot = i >= -1 && i < SMALL_INTS - 1 ? &m->small[i + 1] : NULL;
    if (slot && *slot) {
        LC_TRY(charge(m));
        *out = *slot;
        return LC_OK;
    }
    LC_TRY(new_val(m, LC_PICKLE_INT, out));
    (*out)->u.i = i;
    if (slot)
        *slot = *out;
    return LC_OK;
}

/* ---- stack and marks ---- */

static uint64_t frame_base(const vm *m) { return m->nm ? m->marks[m->nm - 1] : 0; }

static lc_code push(vm *m, lc_pickle_val *v) {
    if (m->sn == m->scap) {
        if (m->scap >= LC_PICKLE_MAX_STACK)
            return FAIL(m, LC_E_OVERFLOW, "more than %u values on the stack",
                        LC_PICKLE_MAX_STACK);
        uint64_t cap = m->scap ? m->scap * 2 : 64;
        lc_pickle_val **s = lc_realloc_array(m->stack, (size_t)cap, sizeof *s);
        if (!s)
            return FAIL(m, LC_E_NOMEM, "out of memory for the pickle stack");
        m->stack = s;
        m->scap = cap;
    }
    m->stack[m->sn++] = v;
    return LC_OK;
}

static lc_code pop(vm *m, lc_pickle_val **v) {
    if (m->sn == frame_base(m))
        return FAIL(m, LC_E_MALFORMED, "opcode 0x%02x pops from an empty stack",
                    m->r.base[m->at - m->r.base_offset]);
    *v = m->stack[--m->sn];
    return LC_OK;
}

static lc_code top(vm *m, lc_pickle_val **v) {
    LC_TRY(pop(m, v));
    m->sn++;
    return LC_OK;
}

/* The values since the last MARK: stack[*start .. m->sn); the caller drops them. */
static lc_code pop_mark(vm *m, uint64_t *start) {
    if (m->nm == 0)
        return FAIL(m, LC_E_MALFORMED, "opcode 0x%02x needs a MARK and none is open",
                    m->r.base[m->at - m->r.base_offset]);
    *start = m->marks[--m->nm];
    return LC_OK;
}

/* ---- hashing and equality of dict keys and set items (Python's rules) ---- */

/* Keys come from the file, so both hashes are keyed (libconvert/hash.h): chosen keys
 * cannot pile into one bucket chain. */
static uint32_t mix64(uint64_t x) { return (uint32_t)lc_hash(&x, sizeof x); }

static uint32_t hash_bytes(const char *p, uint64_t n, uint32_t seed) {
    return (uint32_t)lc_hash_tweak(seed, p, (size_t)n);
}

/* Equal numbers hash alike across bool, int and float, as in Python. */
static bool float_as_int(double f, int64_t *i) {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0) || f != trunc(f))
        return false;
    *i = (int64_t)f;
    return true;
}

static lc_code hash_of(vm *m, lc_pickle_val *v, uint32_t *h) {
    int64_t i;
    switch (v->kind) {
    case LC_PICKLE_NONE: *h = 0x9e3779b9u; return LC_OK;
    case LC_PICKLE_BOOL: *h = mix64(v->u.b); return LC_OK;
    case LC_PICKLE_INT: *h = mix64((uint64_t)v->u.i); return LC_OK;
    case LC_PICKLE_FLOAT:
        if (float_as_int(v->u.f, &i))
            *h = mix64((uint64_t)i);
        else {
            uint64_t bits;
            memcpy(&bits, &v->u.f, sizeof bits);
            *h = mix64(bits ^ 0x5bd1e995u);
        }
        return LC_OK;
    default:
        break;
    }
    if (v->flags & F_HASHED) {
        *h = v->hash;
        return LC_OK;
    }
    if (v->flags & F_UNHASHABLE)
        return FAIL(m, LC_E_MALFORMED, "a %s cannot be a dict key or set item",
                    lc_pickle_kind_name(v->kind));
    switch (v->kind) {
    case LC_PICKLE_STR: case LC_PICKLE_BYTES: case LC_PICKLE_BIGINT:
        v->hash = hash_bytes(v->u.s.p, v->u.s.n, m->seed ^ v->kind);
        break;
    case LC_PICKLE_TUPLE: {
        /* Tuples are built bottom-up from finished values, so this recursion is as deep
         * as the tuple nesting, which LC_PICKLE_MAX_DEPTH bounds. */
        uint32_t acc = 0x345678u;
        for (uint64_t k = 0; k < v->u.c.n; k++) {
            uint32_t hk;
            lc_code rc = hash_of(m, v->u.c.v[k], &hk);
            if (rc != LC_OK) {
                v->flags |= F_UNHASHABLE;
                return rc;
            }
            acc = (acc ^ hk) * 1000003u + (uint32_t)k;
        }
        v->hash = acc;
        break;
    }
    case LC_PICKLE_GLOBAL:
        v->hash = hash_bytes(v->u.g.name, strlen(v->u.g.name),
                             hash_bytes(v->u.g.mod, strlen(v->u.g.mod), 7));
        break;
    case LC_PICKLE_FROZENSET: case LC_PICKLE_REDUCE: case LC_PICKLE_NEWOBJ:
    case LC_PICKLE_PERSID:
        /* Compared by identity here (Python compares frozensets by content: a
         * frozenset key equal to another frozenset key stays a second entry). */
        v->hash = mix64(v->id);
        break;
    default:
        v->flags |= F_UNHASHABLE;
        return FAIL(m, LC_E_MALFORMED, "a %s cannot be a dict key or set item",
                    lc_pickle_kind_name(v->kind));
    }
    v->flags |= F_HASHED;
    *h = v->hash;
    return LC_OK;
}

static bool is_num(const lc_pickle_val *v) {
    return v->kind == LC_PICKLE_BOOL || v->kind == LC_PICKLE_INT || v->kind == LC_PICKLE_FLOAT;
}

/* 1 equal, 0 not, -1 when the comparison budget is spent (shared sub-tuples can make
 * a naive comparison exponential). */
static int key_eq(vm *m, const lc_pickle_val *a, const lc_pickle_val *b) {
    if (a == b)
        return 1;
    if (m->eq_budget == 0)
        return -1;
    m->eq_budget--;
    if (is_num(a) && is_num(b)) {
        if (a->kind == LC_PICKLE_FLOAT || b->kind == LC_PICKLE_FLOAT) {
            if (a->kind == LC_PICKLE_FLOAT && b->kind == LC_PICKLE_FLOAT)
                return a->u.f == b->u.f;
            const lc_pickle_val *f = a->kind == LC_PICKLE_FLOAT ? a : b;
            const lc_pickle_val *n = f == a ? b : a;
            int64_t fi = 0, ni = n->kind == LC_PICKLE_BOOL ? n->u.b : n->u.i;
            return float_as_int(f->u.f, &fi) && fi == ni;
        }
        int64_t x = a->kind == LC_PICKLE_BOOL ? a->u.b : a->u.i;
        int64_t y = b->kind == LC_PICKLE_BOOL ? b->u.b : b->u.i;
        return x == y;
    }
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case LC_PICKLE_STR: case LC_PICKLE_BYTES: case LC_PICKLE_BIGINT:
        return a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, (size_t)a->u.s.n) == 0;
    case LC_PICKLE_TUPLE:
        if (a->u.c.n != b->u.c.n)
            return 0;
        for (uint64_t k = 0; k < a->u.c.n; k++) {
            int e = key_eq(m, a->u.c.v[k], b->u.c.v[k]);
            if (e != 1)
                return e;
        }
        return 1;
    case LC_PICKLE_GLOBAL:
        return strcmp(a->u.g.mod, b->u.g.mod) == 0 && strcmp(a->u.g.name, b->u.g.name) == 0;
    default:
        return 0;
    }
}

/* ---- containers ---- */

static lc_code note_child(vm *m, lc_pickle_val *c, const lc_pickle_val *item) {
    if (item->depth + 1 > c->depth) {
        c->depth = item->depth + 1;
        if (c->depth > LC_PICKLE_MAX_DEPTH)
            return FAIL(m, LC_E_OVERFLOW, "values nest deeper than %u", LC_PICKLE_MAX_DEPTH);
    }
    return LC_OK;
}

/* Room for `more` further slots in c's item array (doubling inside the arena). */
static lc_code reserve(vm *m, lc_pickle_val *c, uint64_t more) {
    uint64_t slots = c->kind == LC_PICKLE_DICT ? 2 : 1, need, have = c->u.c.n * slots;
    if (lc_mul_u64(more, slots, &more) || lc_add_u64(have, more, &need))
        return FAIL(m, LC_E_OVERFLOW, "container size overflows");
    if (need <= c->u.c.cap)
        return LC_OK;
    uint64_t cap = c->u.c.cap ? c->u.c.cap : 4;
    while (cap < need)
        cap *= 2;
    lc_pickle_val **v = lc_pickle_op_alloc(&m->p->a, cap * sizeof *v);
    if (!v)
        return oom(m, cap * sizeof *v);
    if (have)
        memcpy(v, c->u.c.v, (size_t)have * sizeof *v);
    c->u.c.v = v;
    c->u.c.cap = cap;
    return LC_OK;
}

static lc_code seq_add(vm *m, lc_pickle_val *c, lc_pickle_val *item) {
    LC_TRY(reserve(m, c, 1));
    c->u.c.v[c->u.c.n++] = item;
    return note_child(m, c, item);
}

/* c's map_ext, made on first use. */
static lc_code map_ext(vm *m, lc_pickle_val *c, struct map_ext **x) {
    if (!c->u.c.x && !(c->u.c.x = lc_pickle_op_alloc(&m->p->a, sizeof *c->u.c.x)))
        return oom(m, sizeof *c->u.c.x);
    *x = c->u.c.x;
    return LC_OK;
}

static lc_code rehash(vm *m, lc_pickle_val *c, uint64_t icap) {
    struct map_ext *x = NULL;
    LC_TRY(map_ext(m, c, &x));
    uint32_t *idx = lc_pickle_op_alloc(&m->p->a, icap * sizeof *idx);
    if (!idx)
        return oom(m, icap * sizeof *idx);
    uint64_t step = c->kind == LC_PICKLE_DICT ? 2 : 1;
    for (uint64_t e = 0; e < c->u.c.n; e++) {
        uint32_t h;
        LC_TRY(hash_of(m, c->u.c.v[e * step], &h));
        uint64_t j = h & (icap - 1);
        while (idx[j])
            j = (j + 1) & (icap - 1);
        idx[j] = (uint32_t)(e + 1);
    }
    x->idx = idx;
    x->icap = icap;
    return LC_OK;
}

/* Inserts key (and val for a DICT); an equal key keeps its place and, in a dict, takes
 * the new value, as Python's dict and set do. */
static lc_code map_put(vm *m, lc_pickle_val *c, lc_pickle_val *key, lc_pickle_val *val) {
    uint32_t h;
    LC_TRY(hash_of(m, key, &h));
    const uint64_t had = c->u.c.x ? c->u.c.x->icap : 0;
    if ((c->u.c.n + 1) * 2 > had)
        LC_TRY(rehash(m, c, had ? had * 2 : 8));
    uint32_t *const idx = c->u.c.x->idx;
    uint64_t step = c->kind == LC_PICKLE_DICT ? 2 : 1, mask = c->u.c.x->icap - 1;
    uint64_t j = h & mask, probes = 0;
    m->eq_budget = 1u << 16;
    while (idx[j]) {
        /* Load stays under 1/2, so long runs mean keys crafted to collide. */
        if (++probes > 4096)
            return FAIL(m, LC_E_OVERFLOW, "more than 4096 colliding dict keys or set items");
        uint64_t e = idx[j] - 1;
        int eq = key_eq(m, c->u.c.v[e * step], key);
        if (eq < 0)
            return FAIL(m, LC_E_OVERFLOW, "comparing a key took more than 65536 steps");
        if (eq) {
            if (val) {
                c->u.c.v[e * 2 + 1] = val;
                LC_TRY(note_child(m, c, val));
            }
            return LC_OK;
        }
        j = (j + 1) & mask;
    }
    LC_TRY(reserve(m, c, 1));
    c->u.c.v[c->u.c.n * step] = key;
    if (val)
        c->u.c.v[c->u.c.n * step + 1] = val;
    c->u.c.n++;
    idx[j] = (uint32_t)c->u.c.n;
    LC_TRY(note_child(m, c, key));
    return val ? note_child(m, c, val) : LC_OK;
}

/* A new container of `kind` holding vals[0..n) (pairs for a DICT). */
static lc_code build(vm *m, uint8_t kind, lc_pickle_val *const *vals, uint64_t n,
                     lc_pickle_val **out) {
    lc_pickle_val *c;
    LC_TRY(new_val(m, kind, &c));
    if (kind == LC_PICKLE_DICT) {
        if (n % 2)
            return FAIL(m, LC_E_MALFORMED, "DICT has an odd number (%" PRIu64 ") of items", n);
        for (uint64_t i = 0; i < n; i += 2)
            LC_TRY(map_put(m, c, vals[i], vals[i + 1]));
    } else if (kind == LC_PICKLE_SET || kind == LC_PICKLE_FROZENSET) {
        for (uint64_t i = 0; i < n; i++)
            LC_TRY(map_put(m, c, vals[i], NULL));
    } else {
        LC_TRY(reserve(m, c, n));
        for (uint64_t i = 0; i < n; i++)
            LC_TRY(seq_add(m, c, vals[i]));
    }
    *out = c;
    return LC_OK;
}

/* Pops the items above the last mark into a new container. */
static lc_code build_from_mark(vm *m, uint8_t kind) {
    uint64_t start = 0;
    lc_pickle_val *c;
    LC_TRY(pop_mark(m, &start));
    /* The stack array may not exist yet when the frame is empty. */
    LC_TRY(build(m, kind, m->sn > start ? m->stack + start : NULL, m->sn - start, &c));
    m->sn = start;
    return push(m, c);
}

static lc_code build_from_top(vm *m, uint8_t kind, uint64_t n) {
    lc_pickle_val *items[3], *c;
    for (uint64_t i = n; i-- > 0;)
        LC_TRY(pop(m, &items[i]));
    LC_TRY(build(m, kind, items, n, &c));
    return push(m, c);
}

/* ---- globals, calls and objects ---- */

/* A global on the allowlist; its strings are the allowlist's own (static), so that
 * mod and name may be scratch. */
static lc_code new_global(vm *m, const char *mod, const char *name, lc_pickle_val **out) {
    const char *const *e = lc_pickle_op_allowed_entry(mod, name);
    if (!e)
        return FAIL(m, LC_E_FORBIDDEN, "global %s.%s is not on the allowlist", mod, name);
    LC_TRY(new_val(m, LC_PICKLE_GLOBAL, out));
    (*out)->u.g.mod = e[0];
    (*out)->u.g.name = e[1];
    return LC_OK;
}

/* A GLOBAL/INST line as lc_pickle_op_name reads it, into buf (cap bytes) when it fits,
 * else into the arena: a torch pickle names its globals thousands of times, and
 * new_global keeps none of these bytes. */
static lc_code global_name(vm *m, const lc_pickle_op *op, const uint8_t *p, uint64_t n,
                           char *buf, size_t cap, char **s) {
    if (n >= cap)
        return lc_pickle_op_name(&m->p->a, op, p, n, s, m->err);
    if (n == 0 || memchr(p, 0, (size_t)n) || !lc_pickle_op_utf8(p, n))
        return lc_fail(m->err, LC_E_MALFORMED, op->at,
                       "global name is empty, holds a NUL or is not UTF-8");
    memcpy(buf, p, (size_t)n);
    buf[n] = '\0';
    *s = buf;
    return LC_OK;
}

static bool global_is(const lc_pickle_val *v, const char *mod, const char *name) {
    return v && v->kind == LC_PICKLE_GLOBAL && strcmp(v->u.g.mod, mod) == 0 &&
           strcmp(v->u.g.name, name) == 0;
}

/* The items of a list, tuple or set argument (what set()/frozenset() iterate). */
static bool iterable(const lc_pickle_val *v) {
    return v->kind == LC_PICKLE_LIST || v->kind == LC_PICKLE_TUPLE || v->kind == LC_PICKLE_SET ||
           v->kind == LC_PICKLE_FROZENSET;
}

/* Latin-1 bytes of a UTF-8 str, as _codecs.encode(s, "latin1") gives. */
static lc_code latin1(vm *m, const lc_pickle_val *s, lc_pickle_val **out) {
    LC_TRY(new_blob(m, LC_PICKLE_BYTES, s->u.s.p, s->u.s.n, out));
    const uint8_t *p = (const uint8_t *)s->u.s.p;
    uint64_t o = 0;
    for (uint64_t i = 0; i < s->u.s.n; o++) {
        if (p[i] < 0x80) {
            (*out)->u.s.p[o] = (char)p[i++];
        } else if ((p[i] & 0xe0) == 0xc0 && p[i] <= 0xc3) {
            (*out)->u.s.p[o] = (char)((p[i] & 0x3f) << 6 | (p[i + 1] & 0x3f));
            i += 2;
        } else {
            return FAIL(m, LC_E_MALFORMED, "_codecs.encode latin1 of a character above U+00FF");
        }
    }
    (*out)->u.s.n = o;
    (*out)->u.s.p[o] = '\0';
    return LC_OK;
}

/* REDUCE: folds the pure constructors into plain values, else builds a node. */
static lc_code reduce(vm *m, lc_pickle_val *fn, lc_pickle_val *args, lc_pickle_val **out) {
    if (fn->kind != LC_PICKLE_GLOBAL && fn->kind != LC_PICKLE_REDUCE &&
        fn->kind != LC_PICKLE_NEWOBJ)
        return FAIL(m, LC_E_MALFORMED, "REDUCE calls a %s", lc_pickle_kind_name(fn->kind));
    if (args->kind != LC_PICKLE_TUPLE)
        return FAIL(m, LC_E_MALFORMED, "REDUCE arguments are a %s, not a tuple",
                    lc_pickle_kind_name(args->kind));
    uint64_t n = args->u.c.n;
    lc_pickle_val *a0 = n ? args->u.c.v[0] : NULL;
    if (global_is(fn, "collections", "OrderedDict") && n == 0) {
        LC_TRY(build(m, LC_PICKLE_DICT, NULL, 0, out));
        (*out)->flags |= F_ORDERED;
        return LC_OK;
    }
    bool set = global_is(fn, "builtins", "set"), fset = global_is(fn, "builtins", "frozenset");
    if ((set || fset) && (n == 0 || (n == 1 && iterable(a0))))
        return build(m, set ? LC_PICKLE_SET : LC_PICKLE_FROZENSET, n ? a0->u.c.v : NULL,
                     n ? a0->u.c.n : 0, out);
    if (global_is(fn, "builtins", "bytearray") &&
        (n == 0 || (n == 1 && a0->kind == LC_PICKLE_BYTES)))
        return new_blob(m, LC_PICKLE_BYTEARRAY, n ? a0->u.s.p : "", n ? a0->u.s.n : 0, out);
    if (global_is(fn, "builtins", "bytes") && n == 0)
        return new_blob(m, LC_PICKLE_BYTES, "", 0, out);
    if (global_is(fn, "_codecs", "encode") && n == 2 && a0->kind == LC_PICKLE_STR &&
        (lc_pickle_str_is(args->u.c.v[1], "latin1") || lc_pickle_str_is(args->u.c.v[1], "latin-1")))
        return latin1(m, a0, out);
    LC_TRY(new_val(m, LC_PICKLE_REDUCE, out));
    (*out)->u.o.fn = fn;
    (*out)->u.o.args = args;
    LC_TRY(note_child(m, *out, fn));
    return note_child(m, *out, args);
}

static lc_code newobj(vm *m, uint8_t op, lc_pickle_val *cls, lc_pickle_val *args,
                      lc_pickle_val *kw, lc_pickle_val **out) {
    if (cls->kind != LC_PICKLE_GLOBAL)
        return FAIL(m, LC_E_MALFORMED, "object class is a %s, not a global",
                    lc_pickle_kind_name(cls->kind));
    if (args->kind != LC_PICKLE_TUPLE)
        return FAIL(m, LC_E_MALFORMED, "object arguments are a %s, not a tuple",
                    lc_pickle_kind_name(args->kind));
    if (kw && kw->kind != LC_PICKLE_DICT)
        return FAIL(m, LC_E_MALFORMED, "NEWOBJ_EX keyword arguments are a %s, not a dict",
                    lc_pickle_kind_name(kw->kind));
    LC_TRY(new_val(m, LC_PICKLE_NEWOBJ, out));
    (*out)->op = op;
    (*out)->u.o.fn = cls;
    (*out)->u.o.args = args;
    (*out)->u.o.kw = kw;
    LC_TRY(note_child(m, *out, cls));
    LC_TRY(note_child(m, *out, args));
    return kw ? note_child(m, *out, kw) : LC_OK;
}

static lc_code do_build(vm *m) {
    lc_pickle_val *state = NULL, *obj = NULL, **slot;
    LC_TRY(pop(m, &state));
    LC_TRY(top(m, &obj));
    if (obj->kind == LC_PICKLE_REDUCE || obj->kind == LC_PICKLE_NEWOBJ)
        slot = &obj->u.o.state;
    else if (obj->kind == LC_PICKLE_DICT && (obj->flags & F_ORDERED)) {
        struct map_ext *x = NULL;
        LC_TRY(map_ext(m, obj, &x));
        slot = &x->state;
    } else
        return FAIL(m, LC_E_MALFORMED, "BUILD sets the state of a %s",
                    lc_pickle_kind_name(obj->kind));
    if (*slot)
        return FAIL(m, LC_E_UNSUPPORTED, "a second BUILD on one object");
    *slot = state;
    return note_child(m, obj, state);
}

/* ---- ints ---- */

/* Minimal two's complement little-endian bytes; an INT when they fit in 8. */
static lc_code int_from_le(vm *m, const uint8_t *b, uint64_t n, lc_pickle_val **out) {
    while (n > 1 && ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) ||
                     (b[n - 1] == 0xff && (b[n - 2] & 0x80))))
        n--;
    if (n <= 8) {
        uint64_t u = 0;
        for (uint64_t i = n; i-- > 0;)
            u = u << 8 | b[i];
        if (n && n < 8 && (b[n - 1] & 0x80))
            u |= ~(uint64_t)0 << (8 * n);
        return new_int(m, (int64_t)u, out);
    }
    return new_blob(m, LC_PICKLE_BIGINT, b, n, out);
}

/* Decimal text (sign, at most LC_PICKLE_MAX_DIGITS digits) that does not fit int64. */
static lc_code int_from_text(vm *m, const uint8_t *s, uint64_t n, lc_pickle_val **out) {
    bool neg = n && s[0] == '-';
    uint64_t i = n && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    uint64_t cap = (n - i) / 2 + 2, len = 1; /* a digit is < 4 bits; +1 for the sign */
    uint8_t *b = lc_pickle_op_alloc(&m->p->a, cap);
    if (!b)
        return oom(m, cap);
    for (; i < n; i++) {
        unsigned carry = (unsigned)(s[i] - '0');
        for (uint64_t k = 0; k < len; k++) {
            unsigned v = b[k] * 10u + carry;
            b[k] = (uint8_t)v;
            carry = v >> 8;
        }
        if (carry)
            b[len++] = (uint8_t)carry;
    }
    len++; /* room for a sign bit */
    if (neg) {
        unsigned carry = 1;
        for (uint64_t k = 0; k < len; k++) {
            unsigned v = (uint8_t)~b[k] + carry;
            b[k] = (uint8_t)v;
            carry = v >> 8;
        }
    }
    return int_from_le(m, b, len, out);
}

/* ---- the loop ---- */

static lc_code memo_put(vm *m, uint64_t idx) {
    lc_pickle_val *v;
    LC_TRY(top(m, &v));
    if (idx >= m->mcap) {
        uint64_t cap = m->mcap ? m->mcap : 64;
        while (cap <= idx)
            cap *= 2;
        if (cap > LC_PICKLE_MAX_MEMO)
            cap = LC_PICKLE_MAX_MEMO;
        lc_pickle_val **mm = lc_realloc_array(m->memo, (size_t)cap, sizeof *mm);
        if (!mm)
            return FAIL(m, LC_E_NOMEM, "out of memory for the memo");
        memset(mm + m->mcap, 0, (size_t)(cap - m->mcap) * sizeof *mm);
        m->memo = mm;
        m->mcap = cap;
    }
    if (!m->memo[idx])
        m->mcount++;
    m->memo[idx] = v;
    return LC_OK;
}

static lc_code step(vm *m, const lc_pickle_op *op, bool *stop) {
    lc_pickle_val *v = NULL, *a, *b, *c;
    uint64_t start = 0;
    char *s, *s2, mod_buf[128], name_buf[128];
    uint64_t n;
    switch (op->code) {
    case OP_PROTO: case OP_FRAME:
        return LC_OK;
    case OP_STOP:
        *stop = true;
        LC_TRY(pop(m, &v));
        if (m->sn || m->nm)
            return FAIL(m, LC_E_MALFORMED, "STOP leaves %" PRIu64 " values and %u marks open",
                        m->sn, m->nm);
        m->p->root = v;
        return LC_OK;
    case OP_MARK:
        if (m->nm == LC_PICKLE_MAX_MARKS)
            return FAIL(m, LC_E_OVERFLOW, "more than %u MARKs open", LC_PICKLE_MAX_MARKS);
        m->marks[m->nm++] = m->sn;
        return LC_OK;
    case OP_POP:
        if (m->sn > frame_base(m)) {
            m->sn--;
            return LC_OK;
        }
        return pop_mark(m, &start); /* CPython: POP on an empty frame drops the mark */
    case OP_POP_MARK:
        LC_TRY(pop_mark(m, &start));
        m->sn = start;
        return LC_OK;
    case OP_DUP:
        LC_TRY(top(m, &v));
        return push(m, v);
    case OP_NONE: return push(m, &k_none);
    case OP_NEWTRUE: return push(m, &k_true);
    case OP_NEWFALSE: return push(m, &k_false);
    case OP_INT:
        if (op->n == 2 && op->p[0] == '0' && (op->p[1] == '0' || op->p[1] == '1'))
            return push(m, op->p[1] == '1' ? &k_true : &k_false);
        /* fall through */
    case OP_LONG:
        if (op->big)
            LC_TRY(int_from_text(m, op->p, op->n, &v));
        else
            LC_TRY(new_int(m, op->n_int, &v));
        return push(m, v);
    case OP_BININT: case OP_BININT1: case OP_BININT2:
        LC_TRY(new_int(m, op->n_int, &v));
        return push(m, v);
    case OP_LONG1: case OP_LONG4:
        LC_TRY(int_from_le(m, op->p, op->n, &v));
        return push(m, v);
    case OP_FLOAT: case OP_BINFLOAT:
        LC_TRY(new_val(m, LC_PICKLE_FLOAT, &v));
        v->u.f = op->f;
        return push(m, v);
    case OP_STRING: case OP_BINSTRING: case OP_SHORT_BINSTRING: case OP_UNICODE:
    case OP_BINUNICODE: case OP_SHORT_BINUNICODE: case OP_BINUNICODE8: case OP_PERSID:
        LC_TRY(lc_pickle_op_text(&m->p->a, op, &s, &n, m->err));
        LC_TRY(new_val(m, LC_PICKLE_STR, &v));
        v->u.s.p = s;
        v->u.s.n = n;
        if (op->code == OP_PERSID) {
            LC_TRY(new_val(m, LC_PICKLE_PERSID, &a));
            a->u.pid = v;
            v = a;
        }
        return push(m, v);
    case OP_BINBYTES: case OP_SHORT_BINBYTES: case OP_BINBYTES8: case OP_BYTEARRAY8:
        LC_TRY(new_blob(m, op->code == OP_BYTEARRAY8 ? LC_PICKLE_BYTEARRAY : LC_PICKLE_BYTES,
                        op->p, op->n, &v));
        return push(m, v);
    case OP_BINPERSID:
        LC_TRY(pop(m, &a));
        LC_TRY(new_val(m, LC_PICKLE_PERSID, &v));
        v->u.pid = a;
        LC_TRY(note_child(m, v, a));
        return push(m, v);
    case OP_EMPTY_TUPLE: return build_from_top(m, LC_PICKLE_TUPLE, 0);
    case OP_TUPLE1: return build_from_top(m, LC_PICKLE_TUPLE, 1);
    case OP_TUPLE2: return build_from_top(m, LC_PICKLE_TUPLE, 2);
    case OP_TUPLE3: return build_from_top(m, LC_PICKLE_TUPLE, 3);
    case OP_EMPTY_LIST: return build_from_top(m, LC_PICKLE_LIST, 0);
    case OP_EMPTY_DICT: return build_from_top(m, LC_PICKLE_DICT, 0);
    case OP_EMPTY_SET: return build_from_top(m, LC_PICKLE_SET, 0);
    case OP_TUPLE: return build_from_mark(m, LC_PICKLE_TUPLE);
    case OP_LIST: return build_from_mark(m, LC_PICKLE_LIST);
    case OP_DICT: return build_from_mark(m, LC_PICKLE_DICT);
    case OP_FROZENSET: return build_from_mark(m, LC_PICKLE_FROZENSET);
    case OP_APPEND:
        LC_TRY(pop(m, &a));
        LC_TRY(top(m, &v));
        if (v->kind != LC_PICKLE_LIST)
            return FAIL(m, LC_E_MALFORMED, "APPEND to a %s", lc_pickle_kind_name(v->kind));
        return seq_add(m, v, a);
    case OP_APPENDS: case OP_SETITEMS: case OP_ADDITEMS: {
        LC_TRY(pop_mark(m, &start));
        uint64_t cnt = m->sn - start;
        m->sn = start;
        LC_TRY(top(m, &v));
        uint8_t want = op->code == OP_APPENDS ? LC_PICKLE_LIST
                     : op->code == OP_SETITEMS ? LC_PICKLE_DICT : LC_PICKLE_SET;
        if (v->kind != want)
            return FAIL(m, LC_E_MALFORMED, "opcode 0x%02x targets a %s, not a %s", op->code,
                        lc_pickle_kind_name(v->kind), lc_pickle_kind_name(want));
        lc_pickle_val **items = cnt ? m->stack + start : NULL; /* still intact above sn */
        if (want == LC_PICKLE_DICT && cnt % 2)
            return FAIL(m, LC_E_MALFORMED, "SETITEMS has an odd number (%" PRIu64 ") of items",
                        cnt);
        for (uint64_t i = 0; i < cnt; i += want == LC_PICKLE_DICT ? 2 : 1) {
            if (want == LC_PICKLE_LIST)
                LC_TRY(seq_add(m, v, items[i]));
            else
                LC_TRY(map_put(m, v, items[i], want == LC_PICKLE_DICT ? items[i + 1] : NULL));
        }
        return LC_OK;
    }
    case OP_SETITEM:
        LC_TRY(pop(m, &b));
        LC_TRY(pop(m, &a));
        LC_TRY(top(m, &v));
        if (v->kind != LC_PICKLE_DICT)
            return FAIL(m, LC_E_MALFORMED, "SETITEM on a %s", lc_pickle_kind_name(v->kind));
        return map_put(m, v, a, b);
    case OP_GET: case OP_BINGET: case OP_LONG_BINGET:
        if ((uint64_t)op->n_int >= m->mcap || !m->memo[op->n_int])
            return FAIL(m, LC_E_MALFORMED, "memo index %" PRId64 " was never set", op->n_int);
        return push(m, m->memo[op->n_int]);
    case OP_PUT: case OP_BINPUT: case OP_LONG_BINPUT:
        return memo_put(m, (uint64_t)op->n_int);
    case OP_MEMOIZE:
        if (m->mcount >= LC_PICKLE_MAX_MEMO)
            return FAIL(m, LC_E_OVERFLOW, "memo index exceeds %u", LC_PICKLE_MAX_MEMO - 1);
        return memo_put(m, m->mcount);
    case OP_GLOBAL: case OP_INST:
        LC_TRY(global_name(m, op, op->p, op->n, mod_buf, sizeof mod_buf, &s));
        LC_TRY(global_name(m, op, op->p2, op->n2, name_buf, sizeof name_buf, &s2));
        LC_TRY(new_global(m, s, s2, &v));
        if (op->code == OP_GLOBAL)
            return push(m, v);
        LC_TRY(build_from_mark(m, LC_PICKLE_TUPLE)); /* INST: the args since the mark */
        LC_TRY(pop(m, &a));
        LC_TRY(newobj(m, OP_INST, v, a, NULL, &b));
        return push(m, b);
    case OP_STACK_GLOBAL:
        LC_TRY(pop(m, &b));
        LC_TRY(pop(m, &a));
        if (a->kind != LC_PICKLE_STR || b->kind != LC_PICKLE_STR)
            return FAIL(m, LC_E_MALFORMED, "STACK_GLOBAL needs two str, not %s and %s",
                        lc_pickle_kind_name(a->kind), lc_pickle_kind_name(b->kind));
        if (strlen(a->u.s.p) != a->u.s.n || strlen(b->u.s.p) != b->u.s.n)
            return FAIL(m, LC_E_MALFORMED, "STACK_GLOBAL name holds a NUL");
        LC_TRY(new_global(m, a->u.s.p, b->u.s.p, &v));
        return push(m, v);
    case OP_EXT1: case OP_EXT2: case OP_EXT4:
        return FAIL(m, LC_E_FORBIDDEN,
                    "extension code %" PRId64 " names a registered global that cannot be checked",
                    op->n_int);
    case OP_REDUCE:
        LC_TRY(pop(m, &b));
        LC_TRY(pop(m, &a));
        LC_TRY(reduce(m, a, b, &v));
        return push(m, v);
    case OP_BUILD:
        return do_build(m);
    case OP_NEWOBJ:
        LC_TRY(pop(m, &b));
        LC_TRY(pop(m, &a));
        LC_TRY(newobj(m, OP_NEWOBJ, a, b, NULL, &v));
        return push(m, v);
    case OP_NEWOBJ_EX:
        LC_TRY(pop(m, &c));
        LC_TRY(pop(m, &b));
        LC_TRY(pop(m, &a));
        LC_TRY(newobj(m, OP_NEWOBJ_EX, a, b, c, &v));
        return push(m, v);
    case OP_OBJ:
        LC_TRY(pop_mark(m, &start));
        if (m->sn == start)
            return FAIL(m, LC_E_MALFORMED, "OBJ has no class after its MARK");
        a = m->stack[start];
        LC_TRY(build(m, LC_PICKLE_TUPLE, m->stack + start + 1, m->sn - start - 1, &b));
        m->sn = start;
        LC_TRY(newobj(m, OP_OBJ, a, b, NULL, &v));
        return push(m, v);
    default: /* lc_pickle_op_read refuses every other byte */
        return FAIL(m, LC_E_MALFORMED, "unknown opcode 0x%02x", op->code);
    }
}

/* ---- the final nesting check (mutation can nest values after they were built) ---- */

static lc_code check_nesting(vm *m, lc_pickle_val *v, uint32_t depth, uint32_t *height) {
    *height = 0;
    if (is_scalar(v) || v->dfs == DFS_OPEN) /* a cycle: walkers must track visits */
        return LC_OK;
    if (v->dfs == DFS_DONE) {
        *height = v->depth;
    } else {
        if (depth > LC_PICKLE_MAX_DEPTH)
            return lc_fail(m->err, LC_E_OVERFLOW, v->off, "values nest deeper than %u",
                           LC_PICKLE_MAX_DEPTH);
        v->dfs = DFS_OPEN;
        uint32_t hmax = 0, h;
        lc_pickle_val *kids[4] = {0};
        switch (v->kind) {
        case LC_PICKLE_TUPLE: case LC_PICKLE_LIST: case LC_PICKLE_SET: case LC_PICKLE_FROZENSET:
        case LC_PICKLE_DICT: {
            uint64_t cnt = v->u.c.n * (v->kind == LC_PICKLE_DICT ? 2 : 1);
            for (uint64_t i = 0; i < cnt; i++) {
                LC_TRY(check_nesting(m, v->u.c.v[i], depth + 1, &h));
                hmax = h + 1 > hmax ? h + 1 : hmax;
            }
            kids[0] = v->u.c.x ? v->u.c.x->state : NULL;
            break;
        }
        case LC_PICKLE_REDUCE: case LC_PICKLE_NEWOBJ:
            kids[0] = v->u.o.fn, kids[1] = v->u.o.args, kids[2] = v->u.o.kw;
            kids[3] = v->u.o.state;
            break;
        case LC_PICKLE_PERSID:
            kids[0] = v->u.pid;
            break;
        default:
            break;
        }
        for (int i = 0; i < 4; i++) {
            if (!kids[i])
                continue;
            LC_TRY(check_nesting(m, kids[i], depth + 1, &h));
            hmax = h + 1 > hmax ? h + 1 : hmax;
        }
        v->depth = hmax;
        v->dfs = DFS_DONE;
        *height = hmax;
    }
    if ((uint64_t)depth + *height > LC_PICKLE_MAX_DEPTH)
        return lc_fail(m->err, LC_E_OVERFLOW, v->off, "values nest deeper than %u",
                       LC_PICKLE_MAX_DEPTH);
    return LC_OK;
}

/* ---- public ---- */

lc_code lc_pickle_load(const uint8_t *buf, uint64_t len, const lc_pickle_opts *o,
                       lc_pickle **out, lc_error *err) {
    static const lc_pickle_opts defaults = {0};
    if (!o)
        o = &defaults;
    *out = NULL;
    lc_code rc;
    vm *m = lc_calloc(1, sizeof *m);
    lc_pickle *p = lc_calloc(1, sizeof *p);
    if (!m || !p) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    p->a.limit = LC_PICKLE_MAX_ARENA;
    m->p = p;
    m->err = err;
    m->r = lc_rd_init(buf, len, o->base_offset, err);
    m->max_values = o->max_values ? o->max_values : LC_PICKLE_MAX_VALUES;
    uint64_t by_size;
    if (o->stored_size && !lc_mul_u64(o->stored_size, LC_PICKLE_VALUES_PER_BYTE, &by_size) &&
        !lc_add_u64(by_size, LC_PICKLE_VALUES_BASE, &by_size) && by_size < m->max_values) {
        m->max_values = by_size;
        m->stored = o->stored_size;
    }
    /* The heap address varies per run (ASLR); only speed under attack depends on it. */
    m->seed = mix64((uint64_t)(uintptr_t)m);
    if (m->max_values > UINT32_MAX - 1)
        m->max_values = UINT32_MAX - 1;
    bool stop = false;
    while (!stop) {
        lc_pickle_op op;
        if ((rc = lc_pickle_op_read(&m->r, &op, err)) != LC_OK)
            goto done;
        m->at = op.at;
        if ((rc = step(m, &op, &stop)) != LC_OK)
            goto done;
    }
    p->end = m->r.pos;
    if (!o->allow_trailing && lc_rd_left(&m->r)) {
        rc = lc_fail(err, LC_E_MALFORMED, lc_rd_at(&m->r), "%" PRIu64 " bytes after STOP",
                     lc_rd_left(&m->r));
        goto done;
    }
    uint32_t h;
    if ((rc = check_nesting(m, p->root, 0, &h)) != LC_OK)
        goto done;
    p->count = (size_t)m->nvalues + 1;
    *out = p;
    p = NULL;
done:
    if (m) {
        lc_free(m->stack);
        lc_free(m->memo);
        lc_free(m);
    }
    lc_pickle_free(p);
    return rc;
}

void lc_pickle_free(lc_pickle *p) {
    if (!p)
        return;
    lc_pickle_op_arena_free(&p->a);
    lc_free(p);
}

const lc_pickle_val *lc_pickle_root(const lc_pickle *p) { return p ? p->root : NULL; }
uint64_t lc_pickle_end(const lc_pickle *p) { return p ? p->end : 0; }
size_t lc_pickle_count(const lc_pickle *p) { return p ? p->count : 0; }
bool lc_pickle_allowed(const char *module, const char *name) {
    return lc_pickle_op_allowed(module, name);
}

/* ---- accessors ---- */

lc_pickle_kind lc_pickle_kind_of(const lc_pickle_val *v) {
    return v ? (lc_pickle_kind)v->kind : LC_PICKLE_KIND_COUNT;
}

const char *lc_pickle_kind_name(lc_pickle_kind k) {
    static const char *const names[LC_PICKLE_KIND_COUNT] = {
        [LC_PICKLE_NONE] = "none", [LC_PICKLE_BOOL] = "bool", [LC_PICKLE_INT] = "int",
        [LC_PICKLE_BIGINT] = "bigint", [LC_PICKLE_FLOAT] = "float", [LC_PICKLE_STR] = "str",
        [LC_PICKLE_BYTES] = "bytes", [LC_PICKLE_BYTEARRAY] = "bytearray",
        [LC_PICKLE_TUPLE] = "tuple", [LC_PICKLE_LIST] = "list", [LC_PICKLE_DICT] = "dict",
        [LC_PICKLE_SET] = "set", [LC_PICKLE_FROZENSET] = "frozenset",
        [LC_PICKLE_GLOBAL] = "global", [LC_PICKLE_REDUCE] = "reduce",
        [LC_PICKLE_NEWOBJ] = "newobj", [LC_PICKLE_PERSID] = "persid",
    };
    return (unsigned)k < LC_PICKLE_KIND_COUNT ? names[k] : "?";
}

uint64_t lc_pickle_offset(const lc_pickle_val *v) { return v ? v->off : LC_NO_OFFSET; }
size_t lc_pickle_id(const lc_pickle_val *v) { return v ? v->id : 0; }

bool lc_pickle_get_bool(const lc_pickle_val *v, bool *out) {
    if (!v || v->kind != LC_PICKLE_BOOL)
        return false;
    *out = v->u.b;
    return true;
}
bool lc_pickle_get_int(const lc_pickle_val *v, int64_t *out) {
    if (!v || v->kind != LC_PICKLE_INT)
        return false;
    *out = v->u.i;
    return true;
}
bool lc_pickle_get_float(const lc_pickle_val *v, double *out) {
    if (!v || v->kind != LC_PICKLE_FLOAT)
        return false;
    *out = v->u.f;
    return true;
}

const char *lc_pickle_str(const lc_pickle_val *v, size_t *len) {
    if (!v || v->kind != LC_PICKLE_STR)
        return NULL;
    if (len)
        *len = (size_t)v->u.s.n;
    return v->u.s.p;
}

const uint8_t *lc_pickle_bytes(const lc_pickle_val *v, size_t *len) {
    if (!v || (v->kind != LC_PICKLE_BYTES && v->kind != LC_PICKLE_BYTEARRAY))
        return NULL;
    if (len)
        *len = (size_t)v->u.s.n;
    return (const uint8_t *)v->u.s.p;
}

const uint8_t *lc_pickle_bigint(const lc_pickle_val *v, size_t *len) {
    if (!v || v->kind != LC_PICKLE_BIGINT)
        return NULL;
    if (len)
        *len = (size_t)v->u.s.n;
    return (const uint8_t *)v->u.s.p;
}

bool lc_pickle_str_is(const lc_pickle_val *v, const char *s) {
    return v && v->kind == LC_PICKLE_STR && strlen(s) == v->u.s.n &&
           memcmp(v->u.s.p, s, (size_t)v->u.s.n) == 0;
}

const lc_pickle_val *const *lc_pickle_items(const lc_pickle_val *v, lc_pickle_kind kind,
                                            size_t *n) {
    if (!v || v->kind != kind ||
        (kind != LC_PICKLE_TUPLE && kind != LC_PICKLE_LIST && kind != LC_PICKLE_SET &&
         kind != LC_PICKLE_FROZENSET))
        return NULL;
    *n = (size_t)v->u.c.n;
    /* An empty container may have no array yet: hand back a valid pointer anyway. */
    static const lc_pickle_val *const empty[1] = {NULL};
    return v->u.c.n ? (const lc_pickle_val *const *)v->u.c.v : empty;
}

size_t lc_pickle_dict_len(const lc_pickle_val *v) {
    return v && v->kind == LC_PICKLE_DICT ? (size_t)v->u.c.n : 0;
}
const lc_pickle_val *lc_pickle_dict_key(const lc_pickle_val *v, size_t i) {
    return i < lc_pickle_dict_len(v) ? v->u.c.v[2 * i] : NULL;
}
const lc_pickle_val *lc_pickle_dict_value(const lc_pickle_val *v, size_t i) {
    return i < lc_pickle_dict_len(v) ? v->u.c.v[2 * i + 1] : NULL;
}
const lc_pickle_val *lc_pickle_dict_get(const lc_pickle_val *v, const char *key) {
    size_t n = lc_pickle_dict_len(v);
    for (size_t i = 0; i < n; i++)
        if (lc_pickle_str_is(v->u.c.v[2 * i], key))
            return v->u.c.v[2 * i + 1];
    return NULL;
}
bool lc_pickle_dict_ordered(const lc_pickle_val *v) {
    return v && v->kind == LC_PICKLE_DICT && (v->flags & F_ORDERED);
}

bool lc_pickle_global(const lc_pickle_val *v, const char **module, const char **name) {
    if (!v || v->kind != LC_PICKLE_GLOBAL)
        return false;
    *module = v->u.g.mod;
    *name = v->u.g.name;
    return true;
}
bool lc_pickle_is_global(const lc_pickle_val *v, const char *module, const char *name) {
    return global_is(v, lc_pickle_op_module(module), name);
}

static bool is_call(const lc_pickle_val *v) {
    return v && (v->kind == LC_PICKLE_REDUCE || v->kind == LC_PICKLE_NEWOBJ);
}
const lc_pickle_val *lc_pickle_callable(const lc_pickle_val *v) {
    return is_call(v) ? v->u.o.fn : NULL;
}
const lc_pickle_val *lc_pickle_args(const lc_pickle_val *v) {
    return is_call(v) ? v->u.o.args : NULL;
}
const lc_pickle_val *lc_pickle_kwargs(const lc_pickle_val *v) {
    return is_call(v) ? v->u.o.kw : NULL;
}
bool lc_pickle_is_call(const lc_pickle_val *v, const char *module, const char *name) {
    return is_call(v) && lc_pickle_is_global(v->u.o.fn, module, name);
}
uint8_t lc_pickle_newobj_opcode(const lc_pickle_val *v) {
    return v && v->kind == LC_PICKLE_NEWOBJ ? v->op : 0;
}
const lc_pickle_val *lc_pickle_state(const lc_pickle_val *v) {
    if (is_call(v))
        return v->u.o.state;
    return v && v->kind == LC_PICKLE_DICT && v->u.c.x ? v->u.c.x->state : NULL;
}
const lc_pickle_val *lc_pickle_persid(const lc_pickle_val *v) {
    return v && v->kind == LC_PICKLE_PERSID ? v->u.pid : NULL;
}
