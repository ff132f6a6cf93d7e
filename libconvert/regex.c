/* libconvert/regex.c: patterns parsed to a tree, counted, compiled to a Thompson NFA,
 * searched by Pike's simulation (see regex.h).
 *
 * The tree's lists (a group's alternatives, a sequence's items) are sibling chains, so
 * recursion goes only as deep as groups and repetitions nest (capped), never as long
 * as the pattern. A repetition's cost is counted on the tree before any state is made:
 * e{m,n} is m copies of e and n - m optional ones, and nested counts multiply, which is
 * what '((.{1,255}){1,255}){1,255}' would cost; past LC_RE_MAX_STATES it is refused.
 *
 * The program, one instruction per state:
 *   SET s       the byte at the position is in set s: go on at the next byte
 *   SPLIT x y   go on at x and at y
 *   JMP x
 *   ASSERT k    ^ $ \b \B hold here: go on
 *   MATCH
 * A search keeps the list of states alive at the current byte; each state joins a list
 * at most once per byte (a generation mark), so empty loops end and the work per byte
 * is bounded by the program's length. A new thread starts at every byte: the match may
 * begin anywhere (regex_search). */
#include "libconvert/regex.h"

#include <stdint.h>
#include <string.h>

#include "libconvert/alloc.h"

#define MAX_PATTERN (64u << 10)   /* bytes; the state cap bites long before */
#define MAX_DEPTH   200           /* groups and repetitions nested */
#define INF         UINT32_MAX    /* no upper bound: e{n,} */

typedef uint8_t byteset[32];

enum { N_EMPTY, N_SET, N_CAT, N_ALT, N_REP, N_ASSERT };
enum { A_BOL, A_EOL, A_WORD, A_NOTWORD };
enum { I_SET, I_SPLIT, I_JMP, I_ASSERT, I_MATCH };

typedef struct node {
    uint8_t  type, kind;   /* N_*, and A_* for an assertion */
    uint32_t kid, next;    /* first child and next sibling, node indices (0: none) */
    uint32_t min, max;     /* N_REP */
    uint32_t set;          /* N_SET: index into the parser's sets */
} node;

typedef struct inst {
    uint8_t  op, kind;
    uint32_t x, y;
} inst;

struct lc_re {
    inst    *prog;
    size_t   n;
    byteset *sets;
};

typedef struct parser {
    const uint8_t *p;
    size_t         n, at;
    node          *nodes;
    size_t         n_nodes, cap_nodes;
    byteset       *sets;
    size_t         n_sets, cap_sets;
    lc_error      *err;
    lc_code        rc;
} parser;

/* ---- sets ---- */

static void set_add(byteset s, unsigned c) { s[c >> 3] |= (uint8_t)(1u << (c & 7)); }
static bool set_has(const byteset s, unsigned c) { return s[c >> 3] >> (c & 7) & 1; }
static void set_range(byteset s, unsigned lo, unsigned hi) {
    for (unsigned c = lo; c <= hi; c++)
        set_add(s, c);
}
static void set_invert(byteset s) {
    for (int i = 0; i < 32; i++)
        s[i] = (uint8_t)~s[i];
}
static void set_or(byteset d, const byteset s) {
    for (int i = 0; i < 32; i++)
        d[i] |= s[i];
}

static bool is_word(unsigned c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* \d \w \s and their complements into s; false for another letter. Bytes, as
 * std::regex over char sees them in the C locale. */
static bool class_escape(byteset s, uint8_t c) {
    byteset t = { 0 };
    switch (c | 0x20) {
    case 'd': set_range(t, '0', '9'); break;
    case 'w': for (unsigned k = 0; k < 256; k++) if (is_word(k)) set_add(t, k); break;
    case 's': set_range(t, '\t', '\r'); set_add(t, ' '); break;
    default: return false;
    }
    if (c >= 'A' && c <= 'Z')
        set_invert(t);
    set_or(s, t);
    return true;
}

/* ---- parsing ---- */

static bool fail(parser *ps, lc_code code, size_t at, const char *what) {
    if (ps->rc == LC_OK)
        ps->rc = lc_fail(ps->err, code, LC_NO_OFFSET, "%s (at byte %zu of the pattern)", what,
                         at);
    return false;
}

static uint32_t new_node(parser *ps, uint8_t type) {
    if (ps->n_nodes == ps->cap_nodes) {
        const size_t cap = ps->cap_nodes ? ps->cap_nodes * 2 : 64;
        node *nn = lc_realloc_array(ps->nodes, cap, sizeof *nn);
        if (!nn) {
            fail(ps, LC_E_NOMEM, ps->at, "out of memory");
            return 0;
        }
        ps->nodes = nn;
        ps->cap_nodes = cap;
    }
    ps->nodes[ps->n_nodes] = (node){ .type = type };
    return (uint32_t)ps->n_nodes++;
}

/* A new N_SET node and its (empty) set in *s; 0 when out of memory. */
static uint32_t new_set(parser *ps, uint8_t **s) {
    if (ps->n_sets == ps->cap_sets) {
        const size_t cap = ps->cap_sets ? ps->cap_sets * 2 : 16;
        byteset *ns = lc_realloc_array(ps->sets, cap, sizeof *ns);
        if (!ns) {
            fail(ps, LC_E_NOMEM, ps->at, "out of memory");
            return 0;
        }
        ps->sets = ns;
        ps->cap_sets = cap;
    }
    const uint32_t k = new_node(ps, N_SET);
    if (!k)
        return 0;
    memset(ps->sets[ps->n_sets], 0, sizeof(byteset));
    ps->nodes[k].set = (uint32_t)ps->n_sets;
    *s = ps->sets[ps->n_sets++];
    return k;
}

static int hex(uint8_t c) {
    return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f'
                                                ? (c | 0x20) - 'a' + 10 : -1;
}

/* The byte of a one-character escape whose letter is at ps->at (the backslash before
 * it), in *c; moves past it. In a class \b is backspace; outside it is an assertion,
 * and \d-like sets, handled by the callers. */
static bool char_escape(parser *ps, int *c) {
    const size_t at = ps->at - 1;
    const uint8_t e = ps->p[ps->at++];
    switch (e) {
    case 'n': *c = '\n'; return true;
    case 'r': *c = '\r'; return true;
    case 't': *c = '\t'; return true;
    case 'f': *c = '\f'; return true;
    case 'v': *c = '\v'; return true;
    case '0':
        if (ps->at < ps->n && ps->p[ps->at] >= '0' && ps->p[ps->at] <= '9')
            return fail(ps, LC_E_ARG, at, "octal escapes are not supported");
        *c = 0;
        return true;
    case 'c':
        if (ps->at < ps->n && ((ps->p[ps->at] | 0x20) >= 'a' && (ps->p[ps->at] | 0x20) <= 'z')) {
            *c = ps->p[ps->at++] % 32;
            return true;
        }
        return fail(ps, LC_E_ARG, at, "\\c wants a letter");
    case 'x':
    case 'u': {
        const size_t digits = e == 'x' ? 2 : 4;
        int v = 0;
        for (size_t k = 0; k < digits; k++) {
            const int h = ps->at < ps->n ? hex(ps->p[ps->at]) : -1;
            if (h < 0)
                return fail(ps, LC_E_ARG, at, e == 'x' ? "\\x wants two hex digits"
                                                       : "\\u wants four hex digits");
            v = v * 16 + h;
            ps->at++;
        }
        if (v > 0xff)
            return fail(ps, LC_E_ARG, at, "\\u above U+00FF: names are matched as bytes");
        *c = v;
        return true;
    }
    }
    if (e >= '1' && e <= '9')
        return fail(ps, LC_E_ARG, at, "back-references (\\1..\\9) are not supported: they make "
                    "matching take time exponential in the name");
    if (e == 'k')
        return fail(ps, LC_E_ARG, at, "named back-references (\\k) are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') || e == '_')
        return fail(ps, LC_E_ARG, at, "unknown escape");
    *c = e;                  /* \. \\ \( \- and any other punctuation: the byte itself */
    return true;
}

/* [...] after its '['. */
static uint32_t parse_class(parser *ps) {
    const size_t open = ps->at - 1;
    uint8_t *s;
    const uint32_t k = new_set(ps, &s);
    if (!k)
        return 0;
    bool neg = false;
    if (ps->at < ps->n && ps->p[ps->at] == '^') {
        neg = true;
        ps->at++;
    }
    for (;;) {
        if (ps->at >= ps->n)
            return fail(ps, LC_E_ARG, open, "unbalanced [: no ] closes it"), 0;
        if (ps->p[ps->at] == ']') {
            ps->at++;
            break;
        }
        /* one class atom: a byte (lo) or a set (\d ...) */
        int lo = -1;
        if (ps->p[ps->at] == '\\') {
            if (++ps->at >= ps->n)
                return fail(ps, LC_E_ARG, ps->at - 1, "a backslash ends the pattern"), 0;
            if (class_escape(s, ps->p[ps->at])) {
                ps->at++;
                continue;    /* a set is no range's end: a '-' after it is a literal */
            }
            if (ps->p[ps->at] == 'b') {
                ps->at++;
                lo = '\b';
            } else if (!char_escape(ps, &lo)) {
                return 0;
            }
        } else {
            lo = ps->p[ps->at++];
        }
        int hi = lo;
        if (ps->at + 1 < ps->n && ps->p[ps->at] == '-' && ps->p[ps->at + 1] != ']') {
            const size_t dash = ps->at++;
            if (ps->p[ps->at] == '\\') {
                if (++ps->at >= ps->n)
                    return fail(ps, LC_E_ARG, ps->at - 1, "a backslash ends the pattern"), 0;
                byteset t = { 0 };
                if (class_escape(t, ps->p[ps->at])) {   /* [a-\d]: '-' a literal */
                    ps->at++;
                    set_or(s, t);
                    set_add(s, '-');
                } else if (ps->p[ps->at] == 'b') {
                    ps->at++;
                    hi = '\b';
                } else if (!char_escape(ps, &hi)) {
                    return 0;
                }
            } else {
                hi = ps->p[ps->at++];
            }
            if (hi < lo)
                return fail(ps, LC_E_ARG, dash, "range out of order in [...]"), 0;
        }
        set_range(s, (unsigned)lo, (unsigned)hi);
    }
    if (neg)
        set_invert(s);
    return k;
}

static uint32_t parse_alt(parser *ps, int depth);

/* A decimal count of a repetition, capped (the state count refuses big ones anyway). */
static bool parse_count(parser *ps, uint32_t *v) {
    if (ps->at >= ps->n || ps->p[ps->at] < '0' || ps->p[ps->at] > '9')
        return false;
    uint64_t x = 0;
    while (ps->at < ps->n && ps->p[ps->at] >= '0' && ps->p[ps->at] <= '9') {
        x = x * 10 + (uint64_t)(ps->p[ps->at++] - '0');
        if (x > 1000000)
            x = 1000000;
    }
    *v = (uint32_t)x;
    return true;
}

/* {n} {n,} {n,m} after its '{'. */
static bool parse_braces(parser *ps, uint32_t *min, uint32_t *max) {
    const size_t open = ps->at - 1;
    if (!parse_count(ps, min))
        return fail(ps, LC_E_ARG, open, "'{' opens no repetition {n}, {n,} or {n,m}");
    *max = *min;
    if (ps->at < ps->n && ps->p[ps->at] == ',') {
        ps->at++;
        *max = INF;
        if (ps->at < ps->n && ps->p[ps->at] != '}' && !parse_count(ps, max))
            return fail(ps, LC_E_ARG, open, "'{' opens no repetition {n}, {n,} or {n,m}");
    }
    if (ps->at >= ps->n || ps->p[ps->at] != '}')
        return fail(ps, LC_E_ARG, open, "'{' opens no repetition {n}, {n,} or {n,m}");
    ps->at++;
    if (*max < *min)
        return fail(ps, LC_E_ARG, open, "{n,m} with n > m");
    return true;
}

static bool is_quantifier(uint8_t c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

/* One atom; 0 with ps->rc set on failure. */
static uint32_t parse_atom(parser *ps, int depth) {
    const size_t at = ps->at;
    const uint8_t c = ps->p[ps->at++];
    uint8_t *s;
    uint32_t k;
    switch (c) {
    case '(': {
        if (depth >= MAX_DEPTH)
            return fail(ps, LC_E_ARG, at, "groups nested too deep"), 0;
        if (ps->at < ps->n && ps->p[ps->at] == '?') {
            const uint8_t q = ps->at + 1 < ps->n ? ps->p[ps->at + 1] : 0;
            if (q != ':')
                return fail(ps, LC_E_ARG, at, q == '=' || q == '!' || q == '<'
                                ? "lookaround and named groups are not supported"
                                : "'(?' starts no group this language has"), 0;
            ps->at += 2;
        }
        k = parse_alt(ps, depth + 1);
        if (!k)
            return 0;
        if (ps->at >= ps->n || ps->p[ps->at] != ')')
            return fail(ps, LC_E_ARG, at, "unbalanced (: no ) closes it"), 0;
        ps->at++;
        return k;
    }
    case '[':
        return parse_class(ps);
    case '.':
        if ((k = new_set(ps, &s)) != 0) {
            set_range(s, 0, 255);
            s['\n' >> 3] &= (uint8_t)~(1u << ('\n' & 7));
            s['\r' >> 3] &= (uint8_t)~(1u << ('\r' & 7));
        }
        return k;
    case '^':
    case '$':
        if ((k = new_node(ps, N_ASSERT)) != 0)
            ps->nodes[k].kind = c == '^' ? A_BOL : A_EOL;
        return k;
    case '*':
    case '+':
    case '?':
    case '{':
        return fail(ps, LC_E_ARG, at, "a quantifier with nothing to repeat"), 0;
    case '\\': {
        if (ps->at >= ps->n)
            return fail(ps, LC_E_ARG, at, "a backslash ends the pattern"), 0;
        const uint8_t e = ps->p[ps->at];
        if (e == 'b' || e == 'B') {
            ps->at++;
            if ((k = new_node(ps, N_ASSERT)) != 0)
                ps->nodes[k].kind = e == 'b' ? A_WORD : A_NOTWORD;
            return k;
        }
        if (!(k = new_set(ps, &s)))
            return 0;
        if (class_escape(s, e)) {
            ps->at++;
            return k;
        }
        int v;
        if (!char_escape(ps, &v))
            return 0;
        set_add(s, (unsigned)v);
        return k;
    }
    default:                   /* a literal, ']' and '}' included */
        if ((k = new_set(ps, &s)) != 0)
            set_add(s, c);
        return k;
    }
}

/* An atom and its quantifier, if any. */
static uint32_t parse_repeat(parser *ps, int depth) {
    uint32_t a = parse_atom(ps, depth);
    if (!a || ps->at >= ps->n || !is_quantifier(ps->p[ps->at]))
        return a;
    const size_t at = ps->at;
    if (ps->nodes[a].type == N_ASSERT)
        return fail(ps, LC_E_ARG, at, "a quantifier with nothing to repeat"), 0;
    if (depth >= MAX_DEPTH)
        return fail(ps, LC_E_ARG, at, "repetitions nested too deep"), 0;
    uint32_t min = 0, max = INF;
    const uint8_t q = ps->p[ps->at++];
    if (q == '+')
        min = 1;
    else if (q == '?')
        max = 1;
    else if (q == '{' && !parse_braces(ps, &min, &max))
        return 0;
    if (ps->at < ps->n && ps->p[ps->at] == '?')
        ps->at++;                                   /* lazy: the same yes or no */
    if (ps->at < ps->n && is_quantifier(ps->p[ps->at]))
        return fail(ps, LC_E_ARG, ps->at, "a quantifier with nothing to repeat"), 0;
    const uint32_t r = new_node(ps, N_REP);
    if (!r)
        return 0;
    ps->nodes[r].kid = a;
    ps->nodes[r].min = min;
    ps->nodes[r].max = max;
    return r;
}

/* A sequence, up to '|', ')' or the end. */
static uint32_t parse_cat(parser *ps, int depth) {
    const uint32_t k = new_node(ps, N_CAT);
    uint32_t last = 0;
    while (k && ps->at < ps->n && ps->p[ps->at] != '|' && ps->p[ps->at] != ')') {
        const uint32_t a = parse_repeat(ps, depth);
        if (!a)
            return 0;
        if (last)
            ps->nodes[last].next = a;
        else
            ps->nodes[k].kid = a;
        last = a;
    }
    return k;
}

static uint32_t parse_alt(parser *ps, int depth) {
    const uint32_t k = new_node(ps, N_ALT);
    uint32_t last = 0;
    for (;;) {
        const uint32_t a = k ? parse_cat(ps, depth) : 0;
        if (!a)
            return 0;
        if (last)
            ps->nodes[last].next = a;
        else
            ps->nodes[k].kid = a;
        last = a;
        if (ps->at >= ps->n || ps->p[ps->at] != '|')
            return k;
        ps->at++;
    }
}

/* ---- counting and emitting ---- */

/* States node k compiles to, saturated at LC_RE_MAX_STATES + 1. */
static uint64_t count(const parser *ps, uint32_t k) {
    const uint64_t cap = LC_RE_MAX_STATES + 1;
    const node *nd = &ps->nodes[k];
    uint64_t total = 0, kids = 0;
    switch (nd->type) {
    case N_SET:
    case N_ASSERT:
        return 1;
    case N_CAT:
    case N_ALT:
        for (uint32_t c = nd->kid; c; c = ps->nodes[c].next, kids++)
            if ((total += count(ps, c)) > cap)
                return cap;
        total += nd->type == N_ALT && kids > 1 ? 2 * (kids - 1) : 0;
        return total > cap ? cap : total;
    case N_REP: {
        const uint64_t e = count(ps, nd->kid);
        if (e >= cap)
            return cap;
        const uint64_t copies = nd->min, opt = nd->max == INF ? 1 : nd->max - nd->min;
        total = copies * e + opt * (e + 1) + (nd->max == INF ? 1 : 0);
        return total > cap ? cap : total;
    }
    }
    return 0;
}

typedef struct emitter {
    inst  *prog;
    size_t n;
} emitter;

static size_t emit(emitter *em, uint8_t op, uint32_t x, uint32_t y, uint8_t kind) {
    em->prog[em->n] = (inst){ .op = op, .kind = kind, .x = x, .y = y };
    return em->n++;
}

static void gen(const parser *ps, emitter *em, uint32_t k) {
    const node *nd = &ps->nodes[k];
    switch (nd->type) {
    case N_SET:
        emit(em, I_SET, nd->set, 0, 0);
        return;
    case N_ASSERT:
        emit(em, I_ASSERT, 0, 0, nd->kind);
        return;
    case N_CAT:
        for (uint32_t c = nd->kid; c; c = ps->nodes[c].next)
            gen(ps, em, c);
        return;
    case N_ALT: {
        /* SPLIT a, next; a; JMP end; next: SPLIT b, next2; b; JMP end; ... last; end: */
        size_t pending = SIZE_MAX;        /* the last JMP to end, chained through .y */
        for (uint32_t c = nd->kid; c; c = ps->nodes[c].next) {
            if (!ps->nodes[c].next) {
                gen(ps, em, c);
                break;
            }
            const size_t split = emit(em, I_SPLIT, 0, 0, 0);
            em->prog[split].x = (uint32_t)em->n;
            gen(ps, em, c);
            const size_t j = emit(em, I_JMP, 0, (uint32_t)(pending == SIZE_MAX ? UINT32_MAX
                                                                                 : pending), 0);
            pending = j;
            em->prog[split].y = (uint32_t)em->n;
        }
        while (pending != SIZE_MAX) {       /* every JMP goes to the end */
            const uint32_t prev = em->prog[pending].y;
            em->prog[pending].x = (uint32_t)em->n;
            em->prog[pending].y = 0;
            pending = prev == UINT32_MAX ? SIZE_MAX : prev;
        }
        return;
    }
    case N_REP: {
        for (uint32_t i = 0; i < nd->min; i++)
            gen(ps, em, nd->kid);
        if (nd->max == INF) {               /* L: SPLIT body, out; body; JMP L; out: */
            const size_t l = emit(em, I_SPLIT, 0, 0, 0);
            em->prog[l].x = (uint32_t)em->n;
            gen(ps, em, nd->kid);
            emit(em, I_JMP, (uint32_t)l, 0, 0);
            em->prog[l].y = (uint32_t)em->n;
            return;
        }
        /* n - m optional copies; skipping one skips the rest: SPLIT body, end. The SPLITs
         * wait for `end` chained through .y, as the ALT's jumps do. */
        size_t pending = SIZE_MAX;
        for (uint32_t i = nd->min; i < nd->max; i++) {
            pending = emit(em, I_SPLIT, (uint32_t)(em->n + 1),
                           pending == SIZE_MAX ? UINT32_MAX : (uint32_t)pending, 0);
            gen(ps, em, nd->kid);
        }
        while (pending != SIZE_MAX) {
            const uint32_t prev = em->prog[pending].y;
            em->prog[pending].y = (uint32_t)em->n;
            pending = prev == UINT32_MAX ? SIZE_MAX : prev;
        }
        return;
    }
    }
}

lc_code lc_re_compile(const char *p, size_t n, lc_re **out, lc_error *err) {
    *out = NULL;
    if (n > MAX_PATTERN)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "a pattern of %zu bytes (at most %u)",
                       n, MAX_PATTERN);
    parser ps = { .p = (const uint8_t *)p, .n = n, .err = err };
    lc_re *re = NULL;
    new_node(&ps, N_EMPTY);                        /* index 0 means "none" */
    uint32_t root = ps.rc == LC_OK ? parse_alt(&ps, 0) : 0;
    if (root && ps.at < n)                         /* only a ')' stops the top level */
        fail(&ps, LC_E_ARG, ps.at, "unbalanced ): no ( opens it");
    if (ps.rc == LC_OK) {
        const uint64_t states = count(&ps, root) + 1;   /* + MATCH */
        if (states > LC_RE_MAX_STATES)
            lc_fail(err, ps.rc = LC_E_OVERFLOW, LC_NO_OFFSET, "the pattern needs more than %d "
                    "NFA states (counted repetitions multiply): at most %d", LC_RE_MAX_STATES,
                    LC_RE_MAX_STATES);
        else if (!(re = lc_calloc(1, sizeof *re)) ||
                 !(re->prog = lc_malloc_array((size_t)states, sizeof *re->prog)))
            lc_fail(err, ps.rc = LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        else {
            emitter em = { re->prog, 0 };
            gen(&ps, &em, root);
            emit(&em, I_MATCH, 0, 0, 0);
            re->n = em.n;
            re->sets = ps.sets;
            ps.sets = NULL;
        }
    }
    lc_free(ps.nodes);
    lc_free(ps.sets);
    if (ps.rc != LC_OK) {
        lc_re_free(re);
        return ps.rc;
    }
    *out = re;
    return LC_OK;
}

/* ---- searching ---- */

typedef struct run {
    const lc_re   *re;
    const uint8_t *s;
    size_t         n;
    size_t        *mark;    /* per state: the position + 1 it last joined a list at */
    uint32_t      *stack;
    bool           matched;
} run;

static bool holds(const run *r, uint8_t kind, size_t pos) {
    const bool before = pos > 0 && is_word(r->s[pos - 1]);
    const bool after = pos < r->n && is_word(r->s[pos]);
    switch (kind) {
    case A_BOL: return pos == 0;
    case A_EOL: return pos == r->n;
    case A_WORD: return before != after;
    default: return before == after;
    }
}

/* Adds pc and every state it reaches without a byte to list (SET states only). */
static void add(run *r, uint32_t *list, size_t *len, uint32_t pc, size_t pos) {
    size_t top = 0;
    r->stack[top++] = pc;
    while (top) {
        const uint32_t k = r->stack[--top];
        if (r->mark[k] == pos + 1)
            continue;
        r->mark[k] = pos + 1;
        const inst *in = &r->re->prog[k];
        switch (in->op) {
        case I_SET: list[(*len)++] = k; break;
        case I_MATCH: r->matched = true; break;
        case I_JMP: r->stack[top++] = in->x; break;
        case I_SPLIT: r->stack[top++] = in->y; r->stack[top++] = in->x; break;
        case I_ASSERT: if (holds(r, in->kind, pos)) r->stack[top++] = k + 1; break;
        }
    }
}

lc_code lc_re_search(const lc_re *re, const char *s, size_t n, bool *match, lc_error *err) {
    *match = false;
    const size_t ns = re->n;
    /* Scratch: a mark per state, two lists of states, and the stack of add(): every
     * state is expanded once per position and pushes at most two, so 2 ns + 1. */
    size_t *mark = lc_calloc(ns, sizeof *mark);
    uint32_t *buf = lc_malloc_array(4 * ns + 1, sizeof *buf);
    if (!mark || !buf) {
        lc_free(mark);
        lc_free(buf);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    run r = { re, (const uint8_t *)s, n, mark, buf + 2 * ns, false };
    uint32_t *cur = buf, *nxt = buf + ns;
    size_t ncur = 0;
    add(&r, cur, &ncur, 0, 0);
    for (size_t i = 0; i < n && !r.matched; i++) {
        size_t nnxt = 0;
        const uint8_t c = r.s[i];
        for (size_t t = 0; t < ncur && !r.matched; t++) {
            const inst *in = &re->prog[cur[t]];
            if (set_has(re->sets[in->x], c))
                add(&r, nxt, &nnxt, cur[t] + 1, i + 1);
        }
        add(&r, nxt, &nnxt, 0, i + 1);          /* a match may start at any byte */
        uint32_t *tmp = cur;
        cur = nxt;
        nxt = tmp;
        ncur = nnxt;
    }
    *match = r.matched;
    lc_free(mark);
    lc_free(buf);
    return LC_OK;
}

size_t lc_re_states(const lc_re *re) { return re->n; }

void lc_re_free(lc_re *re) {
    if (!re)
        return;
    lc_free(re->prog);
    lc_free(re->sets);
    lc_free(re);
}
