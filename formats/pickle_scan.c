/* formats/pickle_scan.c: list every global a pickle names, picklescan-style, without
 * building its values.
 *
 * The scanner reads opcodes with the loader's own reader (pickle_op.c) and keeps a
 * shadow stack in which each entry is either a string (so STACK_GLOBAL's module and
 * name can be traced through constants, DUP and the memo) or "something else". It
 * does not stop at a forbidden name: it reports every reference, then returns
 * LC_E_FORBIDDEN for the first one. A structural error (truncation, underflow, an
 * unset memo index) ends the walk, as it would end a real load. */
#include "formats/pickle.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/pickle_op_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/rd.h"

typedef struct tok {
    const char *s; /* NUL-terminated string constant, or NULL for any other value */
    uint64_t    n;
} tok;

typedef struct scan {
    lc_rd              r;
    lc_error          *err;   /* structural errors and the first forbidden reference */
    lc_pickle_op_arena a;
    uint64_t           at;
    tok               *stack;
    uint64_t           sn, scap;
    uint64_t           marks[LC_PICKLE_MAX_MARKS];
    uint32_t           nm;
    tok               *memo;
    uint64_t           mcap, mcount;
    lc_pickle_scan_fn  fn;
    void              *ctx;
    bool               forbidden;
} scan;

#define FAIL(s, code, ...) lc_fail((s)->err, (code), (s)->at, __VA_ARGS__)

static lc_code spush(scan *s, const char *str, uint64_t n) {
    if (s->sn == s->scap) {
        if (s->scap >= LC_PICKLE_MAX_STACK)
            return FAIL(s, LC_E_OVERFLOW, "more than %u values on the stack", LC_PICKLE_MAX_STACK);
        uint64_t cap = s->scap ? s->scap * 2 : 64;
        tok *t = lc_realloc_array(s->stack, (size_t)cap, sizeof *t);
        if (!t)
            return FAIL(s, LC_E_NOMEM, "out of memory for the scan stack");
        s->stack = t;
        s->scap = cap;
    }
    s->stack[s->sn].s = str;
    s->stack[s->sn++].n = n;
    return LC_OK;
}

static uint64_t sbase(const scan *s) { return s->nm ? s->marks[s->nm - 1] : 0; }

/* Pops k entries into out[0..k) (bottom first); out may be NULL. */
static lc_code spop(scan *s, uint64_t k, tok *out) {
    if (s->sn - sbase(s) < k)
        return FAIL(s, LC_E_MALFORMED, "opcode 0x%02x pops from an empty stack",
                    s->r.base[s->at - s->r.base_offset]);
    s->sn -= k;
    if (out)
        memcpy(out, s->stack + s->sn, (size_t)k * sizeof *out);
    return LC_OK;
}

static lc_code smark_pop(scan *s, uint64_t *count) {
    if (s->nm == 0)
        return FAIL(s, LC_E_MALFORMED, "opcode 0x%02x needs a MARK and none is open",
                    s->r.base[s->at - s->r.base_offset]);
    uint64_t start = s->marks[--s->nm];
    if (count)
        *count = s->sn - start;
    s->sn = start;
    return LC_OK;
}

static lc_code stop_needs(scan *s, uint64_t k) { /* the target stays on the stack */
    LC_TRY(spop(s, k, NULL));
    s->sn += k;
    return LC_OK;
}

static void report(scan *s, uint8_t opcode, const char *mod, const char *name, bool resolved) {
    lc_pickle_ref ref = { s->at, opcode, mod, name,
                          resolved && lc_pickle_op_allowed(mod, name) };
    if (!ref.allowed && !s->forbidden) {
        s->forbidden = true;
        if (resolved)
            FAIL(s, LC_E_FORBIDDEN, "global %s.%s is not on the allowlist", mod, name);
        else
            FAIL(s, LC_E_FORBIDDEN, "%s names a global that cannot be resolved", name);
    }
    if (s->fn)
        s->fn(s->ctx, &ref);
}

static lc_code memo_set(scan *s, uint64_t idx) {
    tok t;
    LC_TRY(spop(s, 1, &t));
    s->sn++;
    if (idx >= s->mcap) {
        uint64_t cap = s->mcap ? s->mcap : 64;
        while (cap <= idx)
            cap *= 2;
        if (cap > LC_PICKLE_MAX_MEMO)
            cap = LC_PICKLE_MAX_MEMO;
        tok *mm = lc_realloc_array(s->memo, (size_t)cap, sizeof *mm);
        if (!mm)
            return FAIL(s, LC_E_NOMEM, "out of memory for the memo");
        memset(mm + s->mcap, 0, (size_t)(cap - s->mcap) * sizeof *mm);
        s->memo = mm;
        s->mcap = cap;
    }
    if (!s->memo[idx].n && !s->memo[idx].s)
        s->mcount++;
    /* n = 1 + length marks a set slot, so "set to a non-string" is distinguishable. */
    s->memo[idx].s = t.s;
    s->memo[idx].n = t.n + 1;
    return LC_OK;
}

static lc_code sstep(scan *s, const lc_pickle_op *op, bool *stop) {
    tok t[3];
    uint64_t cnt;
    char *str, *str2;
    uint64_t n;
    char ext[32];
    switch (op->code) {
    case OP_PROTO: case OP_FRAME:
        return LC_OK;
    case OP_STOP:
        LC_TRY(spop(s, 1, NULL));
        if (s->sn || s->nm)
            return FAIL(s, LC_E_MALFORMED, "STOP leaves %" PRIu64 " values and %u marks open",
                        s->sn, s->nm);
        *stop = true;
        return LC_OK;
    case OP_MARK:
        if (s->nm == LC_PICKLE_MAX_MARKS)
            return FAIL(s, LC_E_OVERFLOW, "more than %u MARKs open", LC_PICKLE_MAX_MARKS);
        s->marks[s->nm++] = s->sn;
        return LC_OK;
    case OP_POP:
        if (s->sn > sbase(s)) {
            s->sn--;
            return LC_OK;
        }
        return smark_pop(s, NULL);
    case OP_POP_MARK:
        return smark_pop(s, NULL);
    case OP_DUP:
        LC_TRY(spop(s, 1, t));
        s->sn++;
        return spush(s, t[0].s, t[0].n);
    case OP_STRING: case OP_BINSTRING: case OP_SHORT_BINSTRING: case OP_UNICODE:
    case OP_BINUNICODE: case OP_SHORT_BINUNICODE: case OP_BINUNICODE8:
        LC_TRY(lc_pickle_op_text(&s->a, op, &str, &n, s->err));
        return spush(s, str, n);
    case OP_PERSID:
        LC_TRY(lc_pickle_op_text(&s->a, op, &str, &n, s->err));
        return spush(s, NULL, 0);
    case OP_NONE: case OP_NEWTRUE: case OP_NEWFALSE: case OP_INT: case OP_LONG:
    case OP_BININT: case OP_BININT1: case OP_BININT2: case OP_LONG1: case OP_LONG4:
    case OP_FLOAT: case OP_BINFLOAT: case OP_BINBYTES: case OP_SHORT_BINBYTES:
    case OP_BINBYTES8: case OP_BYTEARRAY8: case OP_EMPTY_TUPLE: case OP_EMPTY_LIST:
    case OP_EMPTY_DICT: case OP_EMPTY_SET:
        return spush(s, NULL, 0);
    case OP_BINPERSID: case OP_TUPLE1:
        LC_TRY(spop(s, 1, NULL));
        return spush(s, NULL, 0);
    case OP_TUPLE2: case OP_REDUCE: case OP_NEWOBJ:
        LC_TRY(spop(s, 2, NULL));
        return spush(s, NULL, 0);
    case OP_TUPLE3: case OP_NEWOBJ_EX:
        LC_TRY(spop(s, 3, NULL));
        return spush(s, NULL, 0);
    case OP_TUPLE: case OP_LIST: case OP_FROZENSET:
        LC_TRY(smark_pop(s, NULL));
        return spush(s, NULL, 0);
    case OP_DICT:
        LC_TRY(smark_pop(s, &cnt));
        if (cnt % 2)
            return FAIL(s, LC_E_MALFORMED, "DICT has an odd number (%" PRIu64 ") of items", cnt);
        return spush(s, NULL, 0);
    case OP_OBJ:
        LC_TRY(smark_pop(s, &cnt));
        if (cnt == 0)
            return FAIL(s, LC_E_MALFORMED, "OBJ has no class after its MARK");
        return spush(s, NULL, 0);
    case OP_APPEND: case OP_BUILD:
        LC_TRY(spop(s, 1, NULL));
        return stop_needs(s, 1);
    case OP_SETITEM:
        LC_TRY(spop(s, 2, NULL));
        return stop_needs(s, 1);
    case OP_APPENDS: case OP_ADDITEMS: case OP_SETITEMS:
        LC_TRY(smark_pop(s, &cnt));
        if (op->code == OP_SETITEMS && cnt % 2)
            return FAIL(s, LC_E_MALFORMED, "SETITEMS has an odd number (%" PRIu64 ") of items",
                        cnt);
        return stop_needs(s, 1);
    case OP_GET: case OP_BINGET: case OP_LONG_BINGET:
        if ((uint64_t)op->n_int >= s->mcap || !s->memo[op->n_int].n)
            return FAIL(s, LC_E_MALFORMED, "memo index %" PRId64 " was never set", op->n_int);
        return spush(s, s->memo[op->n_int].s, s->memo[op->n_int].n - 1);
    case OP_PUT: case OP_BINPUT: case OP_LONG_BINPUT:
        return memo_set(s, (uint64_t)op->n_int);
    case OP_MEMOIZE:
        if (s->mcount >= LC_PICKLE_MAX_MEMO)
            return FAIL(s, LC_E_OVERFLOW, "memo index exceeds %u", LC_PICKLE_MAX_MEMO - 1);
        return memo_set(s, s->mcount);
    case OP_GLOBAL: case OP_INST:
        LC_TRY(lc_pickle_op_name(&s->a, op, op->p, op->n, &str, s->err));
        LC_TRY(lc_pickle_op_name(&s->a, op, op->p2, op->n2, &str2, s->err));
        report(s, op->code, str, str2, true);
        if (op->code == OP_INST)
            LC_TRY(smark_pop(s, NULL));
        return spush(s, NULL, 0);
    case OP_STACK_GLOBAL:
        LC_TRY(spop(s, 2, t));
        if (t[0].s && t[1].s && strlen(t[0].s) == t[0].n && strlen(t[1].s) == t[1].n)
            report(s, op->code, t[0].s, t[1].s, true);
        else
            report(s, op->code, "?", "STACK_GLOBAL", false);
        return spush(s, NULL, 0);
    case OP_EXT1: case OP_EXT2: case OP_EXT4:
        snprintf(ext, sizeof ext, "ext:%" PRId64, op->n_int);
        report(s, op->code, "?", ext, false);
        return spush(s, NULL, 0);
    default:
        return FAIL(s, LC_E_MALFORMED, "unknown opcode 0x%02x", op->code);
    }
}

lc_code lc_pickle_scan(const uint8_t *buf, uint64_t len, const lc_pickle_opts *o,
                       lc_pickle_scan_fn fn, void *ctx, lc_error *err) {
    lc_error local = {0};
    lc_code rc = LC_OK;
    scan *s = lc_calloc(1, sizeof *s);
    if (!s)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    s->err = &local;
    s->fn = fn;
    s->ctx = ctx;
    s->a.limit = LC_PICKLE_MAX_ARENA;
    s->r = lc_rd_init(buf, len, o ? o->base_offset : 0, &local);
    do { /* one pickle after another until the bytes end */
        bool stop = false;
        s->sn = s->nm = 0;
        s->mcount = 0;
        if (s->memo)
            memset(s->memo, 0, (size_t)s->mcap * sizeof *s->memo);
        while (!stop && rc == LC_OK) {
            lc_pickle_op op;
            rc = lc_pickle_op_read(&s->r, &op, &local);
            if (rc == LC_OK) {
                s->at = op.at;
                rc = sstep(s, &op, &stop);
            }
        }
    } while (rc == LC_OK && lc_rd_left(&s->r));
    lc_free(s->stack);
    lc_free(s->memo);
    lc_pickle_op_arena_free(&s->a);
    lc_free(s);
    if (local.code == LC_OK)
        return LC_OK;
    if (err && err->code == LC_OK)
        *err = local;
    return local.code;
}
