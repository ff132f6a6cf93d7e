/* infer/tokenize_pre.c: the BPE pre-tokenizers, text (as code points) -> pieces.
 *
 * Each is the split llama.cpp runs for that tokenizer.ggml.pre (src/llama-vocab.cpp
 * picks the regexes, src/unicode.cpp runs them), written by hand over the class table
 * rather than through a regex engine:
 *
 *   llama-bpe  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *              llama.cpp's own splitter for it (unicode_regex_split_custom_llama3),
 *              whose contractions are ASCII-only case-insensitive.
 *   qwen2      the same with \p{N} for \p{N}{1,3}. llama.cpp runs this one through
 *              std::regex over a text whose non-ASCII code points are collapsed to one
 *              byte per class; every code point matches one alternative there, so the
 *              result is the llama-bpe walk with one-digit numbers (checked against
 *              llama.cpp on the test strings).
 *   qwen35     qwen2's with [\p{L}\p{M}]+ for \p{L}+, and marks out of the punctuation
 *              runs (the same walk, checked against llama.cpp's test vocabulary).
 *   gpt-2      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 *              (unicode_regex_split_custom_gpt2: case-sensitive contractions, and a
 *              code point nothing matches is a piece of its own).
 *   default    four splits in turn, each over the pieces of the one before:
 *              [\p{P}$+<=>^~|]+  then the gpt-2 split  then \p{N}+  then [0-9]{3};
 *              the regex ones keep what lies between matches as pieces too.
 *   starcoder  \p{N} (each number code point alone) then the gpt-2 split.
 *   falcon     [\p{P}$+<=>^~|`]+  then the gpt-2 split  then [0-9]{3}.
 *   deepseek-coder  [\r\n]  \s?\p{L}+  \s?\p{P}+  [一-龥ࠀ-一가-퟿]+  \p{N}
 *   deepseek-llm    [\r\n]  \s?[A-Za-zµÀ-Ö...𞤀-𞥃]+ (87 ranges: LLM_LETTERS below)
 *              \s?[!-/:-~！-／：-～‘-‟　-。]+  \s+$  [一-龥ࠀ-一가-퟿]+  \p{N}+
 *              each regex one split of the chain, as the default's are. llama.cpp runs
 *              one with \p{..} over the collapsed text (each non-ASCII code point one
 *              byte: its class, whitespace first), the others through std::wregex over
 *              the code points with non-ASCII whitespace rewritten to \v: so U+3000 is
 *              no punctuation and no CJK there, only \s.
 *
 * "Outside the piece" reads as class 0 and code point OUT, as in llama.cpp's lambdas:
 * look-ahead never crosses a piece boundary. */
#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

#define OUT 0xFFFFFFFFu
#define WS  LC_UC_WHITESPACE

typedef struct span {
    const uint32_t *cpts;
    size_t ini, end;   /* the piece being split: [ini, end) */
    size_t prev;       /* end of the last piece emitted */
    lc_tok_ids *out;
    lc_error *err;
    lc_code rc;
} span;

static uint32_t cp_at(const span *s, size_t i) {
    return i >= s->ini && i < s->end ? s->cpts[i] : OUT;
}

static uint16_t fl_at(const span *s, size_t i) {
    return i >= s->ini && i < s->end ? lc_tok_uc_flags(s->cpts[i]) : 0;
}

/* Emits [prev, end) when not empty. */
static void emit(span *s, size_t end) {
    if (end > s->prev && s->rc == LC_OK)
        s->rc = lc_tok_ids_push(s->out, (int32_t)(end - s->prev), s->err);
    s->prev = end;
}

static bool ascii_lower_is(uint32_t c, char want) {
    return c == (uint32_t)want || c == (uint32_t)want - 32;
}

/* 's 't 'm 'd 're 've 'll at pos: the length (2 or 3), or 0. */
static size_t contraction(const span *s, size_t pos, bool any_case) {
    if (cp_at(s, pos) != '\'' || pos + 1 >= s->end)
        return 0;
    uint32_t a = cp_at(s, pos + 1);
#define IS(c, ch) (any_case ? ascii_lower_is(c, ch) : (c) == (uint32_t)(ch))
    if (IS(a, 's') || IS(a, 't') || IS(a, 'm') || IS(a, 'd'))
        return 2;
    if (pos + 2 < s->end) {
        uint32_t b = cp_at(s, pos + 2);
        if ((IS(a, 'r') && IS(b, 'e')) || (IS(a, 'v') && IS(b, 'e')) || (IS(a, 'l') && IS(b, 'l')))
            return 3;
    }
#undef IS
    return 0;
}

/* llama-bpe (max_digits 3) and qwen2 (1). */
/* `letter`: the classes of the letter runs (qwen35 counts marks in: [\p{L}\p{M}]+, and
 * keeps them out of the punctuation runs). */
static void split_llama3(span *s, size_t max_digits, uint16_t letter) {
    for (size_t pos = s->ini; pos < s->end && s->rc == LC_OK;) {
        const uint32_t cpt = cp_at(s, pos);
        const uint16_t f = fl_at(s, pos);
        size_t c = contraction(s, pos, true);
        if (c) {
            pos += c;
            emit(s, pos);
            continue;
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(cpt == '\r' || cpt == '\n' || (f & LC_UC_NUMBER)) &&
            ((f & letter) || (fl_at(s, pos + 1) & letter))) {
            pos++;
            while (fl_at(s, pos) & letter)
                pos++;
            emit(s, pos);
            continue;
        }
        /* \p{N}{1,max_digits} */
        if (f & LC_UC_NUMBER) {
            size_t ini = pos;
            while (fl_at(s, pos) & LC_UC_NUMBER) {
                if (++pos - ini >= max_digits) {
                    emit(s, pos);
                    ini = pos;
                }
            }
            emit(s, pos);
            continue;
        }
        /* ' '?[^\s\p{L}\p{N}]+[\r\n]*: the test reads the space's own class (f), the
         * loop the next one's, as llama.cpp's does. */
        uint16_t f2 = cpt == ' ' ? fl_at(s, pos + 1) : f;
        if (!(f2 & (WS | letter | LC_UC_NUMBER)) && f) {
            pos += cpt == ' ';
            while (!(f2 & (WS | letter | LC_UC_NUMBER)) && f2)
                f2 = fl_at(s, ++pos);
            for (uint32_t c2 = cp_at(s, pos); c2 == '\r' || c2 == '\n'; c2 = cp_at(s, ++pos)) {
            }
            emit(s, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (fl_at(s, pos + nws) & WS) {
            uint32_t c2 = cp_at(s, pos + nws);
            if (c2 == '\r' || c2 == '\n')
                last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) {                                   /* \s*[\r\n]+ */
            pos = last_rn;
            emit(s, pos);
        } else if (nws > 1 && cp_at(s, pos + nws) != OUT) {  /* \s+(?!\S) */
            pos += nws - 1;
            emit(s, pos);
        } else if (nws > 0) {                                /* \s+ */
            pos += nws;
            emit(s, pos);
        } else {
            emit(s, ++pos);
        }
    }
}

static void split_gpt2(span *s) {
    for (size_t pos = s->ini; pos < s->end && s->rc == LC_OK;) {
        const uint32_t cpt = cp_at(s, pos);
        const uint16_t f = fl_at(s, pos);
        size_t c = contraction(s, pos, false);
        if (c) {
            pos += c;
            emit(s, pos);
            continue;
        }
        uint16_t f2 = cpt == ' ' ? fl_at(s, pos + 1) : f;
        if (f2 & LC_UC_LETTER) {                             /* ' '?\p{L}+ */
            pos += cpt == ' ';
            while (f2 & LC_UC_LETTER)
                f2 = fl_at(s, ++pos);
            emit(s, pos);
            continue;
        }
        if (f2 & LC_UC_NUMBER) {                             /* ' '?\p{N}+ */
            pos += cpt == ' ';
            while (f2 & LC_UC_NUMBER)
                f2 = fl_at(s, ++pos);
            emit(s, pos);
            continue;
        }
        if (!(f2 & (WS | LC_UC_LETTER | LC_UC_NUMBER)) && f2) {  /* ' '?[^\s\p{L}\p{N}]+ */
            pos += cpt == ' ';
            while (!(f2 & (WS | LC_UC_LETTER | LC_UC_NUMBER)) && f2)
                f2 = fl_at(s, ++pos);
            emit(s, pos);
            continue;
        }
        size_t nws = 0;
        while (fl_at(s, pos + nws) & WS)
            nws++;
        if (nws > 1 && cp_at(s, pos + nws) != OUT) {         /* \s+(?!\S) */
            pos += nws - 1;
            emit(s, pos);
        } else if (nws > 0) {                                /* \s+ */
            pos += nws;
            emit(s, pos);
        } else {
            emit(s, ++pos);
        }
    }
}

/* The classes the default chain's regexes use, as std::regex sees the collapsed text:
 * ASCII by itself, anything else by its class (whitespace first). */
static bool is_p_or_sym(uint32_t cp) {   /* [\p{P}\$\+<=>\^~\|] */
    if (cp < 128)
        return cp != '`' && ((cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) ||
                             (cp >= 0x5B && cp <= 0x5F) || (cp >= 0x7B && cp <= 0x7E));
    uint16_t f = lc_tok_uc_flags(cp);
    return !(f & WS) && (f & LC_UC_PUNCT);
}

static bool is_p_sym_bt(uint32_t cp) {  /* [\p{P}\$\+<=>\^~\|`]: falcon's */
    return cp == '`' || is_p_or_sym(cp);
}

static bool is_num(uint32_t cp) {        /* \p{N} */
    if (cp < 128)
        return cp >= '0' && cp <= '9';
    uint16_t f = lc_tok_uc_flags(cp);
    return !(f & WS) && (f & LC_UC_NUMBER);
}

static bool is_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

/* \s as std::regex sees llama.cpp's text: the "C" locale's six ASCII spaces, and every
 * other code point llama.cpp calls whitespace, which it rewrites to \v before matching
 * (0x1C-0x1F are no \s there). */
static bool rx_space(uint32_t cp) {
    if (cp < 128)
        return cp == ' ' || (cp >= '\t' && cp <= '\r');
    return lc_tok_uc_flags(cp) & WS;
}

/* The code point std::wregex compares: non-ASCII whitespace is \v there. */
static uint32_t wide(uint32_t cp) {
    return cp > 0x7F && (lc_tok_uc_flags(cp) & WS) ? 0x0B : cp;
}

/* \p{L} and \p{P} on the collapsed text: ASCII as the ranges llama.cpp substitutes
 * (A-Za-z; !-#%-*,-/:-;?-@[-]_{}), anything else by its one class (whitespace first). */
static bool is_letter(uint32_t cp) {
    if (cp < 128)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    uint16_t f = lc_tok_uc_flags(cp);
    return !(f & WS) && (f & LC_UC_LETTER);
}

static bool is_punct(uint32_t cp) {
    if (cp < 128)
        return (cp >= 0x21 && cp <= 0x23) || (cp >= 0x25 && cp <= 0x2A) ||
               (cp >= 0x2C && cp <= 0x2F) || cp == ':' || cp == ';' || cp == '?' || cp == '@' ||
               (cp >= '[' && cp <= ']') || cp == '_' || cp == '{' || cp == '}';
    uint16_t f = lc_tok_uc_flags(cp);
    return !(f & WS) && (f & LC_UC_PUNCT);
}

static bool is_cr_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

/* Sorted, disjoint [lo, hi] ranges: is CP in one? */
static bool in_ranges(uint32_t cp, const uint32_t (*r)[2], size_t n) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0])
            hi = mid;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return true;
    }
    return false;
}
#define IN_RANGES(cp, r) in_ranges(wide(cp), r, sizeof r / sizeof *r)

/* deepseek-llm's letter class: its 87 items as written, neighbours joined (the cased
 * scripts: Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, Coptic,
 * Deseret, ...). */
static const uint32_t LLM_LETTERS[][2] = {
    { 0x41, 0x5A }, { 0x61, 0x7A }, { 0xB5, 0xB5 }, { 0xC0, 0xD6 }, { 0xD8, 0xF6 },
    { 0xF8, 0x1BA }, { 0x1BC, 0x1BF }, { 0x1C4, 0x293 }, { 0x295, 0x2AF }, { 0x370, 0x373 },
    { 0x376, 0x377 }, { 0x37B, 0x37D }, { 0x37F, 0x37F }, { 0x386, 0x386 }, { 0x388, 0x38A },
    { 0x38C, 0x38C }, { 0x38E, 0x3A1 }, { 0x3A3, 0x3F5 }, { 0x3F7, 0x481 }, { 0x48A, 0x52F },
    { 0x531, 0x556 }, { 0x10A0, 0x10C5 }, { 0x13A0, 0x13F5 }, { 0x13F8, 0x13FD },
    { 0x1C90, 0x1CBA }, { 0x1CBD, 0x1CBF }, { 0x1D00, 0x1D2B }, { 0x1D6B, 0x1D77 },
    { 0x1D79, 0x1D9A }, { 0x1E00, 0x1F15 }, { 0x1F18, 0x1F1D }, { 0x1F20, 0x1F45 },
    { 0x1F48, 0x1F4D }, { 0x1F50, 0x1F57 }, { 0x1F59, 0x1F59 }, { 0x1F5B, 0x1F5B },
    { 0x1F5D, 0x1F5D }, { 0x1F5F, 0x1F7D }, { 0x1F80, 0x1FB4 }, { 0x1FB6, 0x1FBC },
    { 0x1FBE, 0x1FBE }, { 0x1FC2, 0x1FC4 }, { 0x1FC6, 0x1FCC }, { 0x1FD0, 0x1FD3 },
    { 0x1FD6, 0x1FDB }, { 0x1FE0, 0x1FEC }, { 0x1FF2, 0x1FF4 }, { 0x1FF6, 0x1FFC },
    { 0x2102, 0x2102 }, { 0x2107, 0x2107 }, { 0x210A, 0x2113 }, { 0x2115, 0x2115 },
    { 0x2119, 0x211D }, { 0x2124, 0x2124 }, { 0x2126, 0x2126 }, { 0x2128, 0x2128 },
    { 0x212A, 0x212D }, { 0x212F, 0x2134 }, { 0x2139, 0x2139 }, { 0x213C, 0x213F },
    { 0x2145, 0x2149 }, { 0x214E, 0x214E }, { 0x2183, 0x2184 }, { 0x2C00, 0x2C7B },
    { 0x2C7E, 0x2CE4 }, { 0x2CEB, 0x2CEE }, { 0x2CF2, 0x2CF3 }, { 0xA640, 0xA66D },
    { 0xA680, 0xA69B }, { 0xA722, 0xA76F }, { 0xA771, 0xA787 }, { 0xA78B, 0xA78E },
    { 0xAB70, 0xABBF }, { 0xFB00, 0xFB06 }, { 0xFB13, 0xFB17 }, { 0xFF21, 0xFF3A },
    { 0xFF41, 0xFF5A }, { 0x10400, 0x1044F }, { 0x104B0, 0x104D3 }, { 0x104D8, 0x104FB },
    { 0x10C80, 0x10CB2 }, { 0x10CC0, 0x10CF2 }, { 0x118A0, 0x118DF }, { 0x1E900, 0x1E943 },
};

/* deepseek-llm's punctuation: ASCII's !-/ and :-~ (which hold the letters too), the
 * fullwidth forms, the quotation marks U+2018-201F, and U+3000-3002, of which U+3000
 * never matches (it is \v by then). */
static const uint32_t LLM_PUNCT[][2] = {
    { 0x21, 0x2F }, { 0x3A, 0x7E }, { 0x2018, 0x201F }, { 0x3000, 0x3002 },
    { 0xFF01, 0xFF0F }, { 0xFF1A, 0xFF5E },
};

/* [一-龥ࠀ-一가-퟿]: U+0800-4E00 and U+4E00-9FA5 meet, so two ranges; the whitespace
 * inside them (U+1680, U+2000-200A, U+2028-2029, U+202F, U+205F, U+3000) is \v. */
static const uint32_t CJK[][2] = { { 0x800, 0x9FA5 }, { 0xAC00, 0xD7FF } };

static bool is_llm_letter(uint32_t cp) { return IN_RANGES(cp, LLM_LETTERS); }
static bool is_llm_punct(uint32_t cp) { return IN_RANGES(cp, LLM_PUNCT); }
static bool is_cjk(uint32_t cp) { return IN_RANGES(cp, CJK); }

/* \s?CLASS+ as a std::regex split, for a CLASS no \s is in: the leftmost match takes the
 * whitespace just before a run when there is one, so "a  b" gives "a", " ", " b". */
static void split_ws_runs(span *s, bool (*in)(uint32_t)) {
    size_t pos = s->ini;
    while (pos < s->end && s->rc == LC_OK) {
        size_t run = pos;
        if (!in(s->cpts[pos])) {
            if (!(rx_space(s->cpts[pos]) && pos + 1 < s->end && in(s->cpts[pos + 1]))) {
                pos++;
                continue;
            }
            run = pos + 1;
        }
        emit(s, pos);
        while (run < s->end && in(s->cpts[run]))
            run++;
        emit(s, run);
        pos = run;
    }
    emit(s, s->end);
}

/* \s+$ as a std::regex split: $ is the end of the piece, so its trailing whitespace. */
static void split_trailing_ws(span *s) {
    size_t at = s->end;
    while (at > s->ini && rx_space(s->cpts[at - 1]))
        at--;
    emit(s, at);
    emit(s, s->end);
}

/* CLASS+ as a std::regex split: runs of the class and the runs between them. */
static void split_runs(span *s, bool (*in)(uint32_t)) {
    size_t pos = s->ini;
    while (pos < s->end && s->rc == LC_OK) {
        bool want = in(s->cpts[pos]);
        while (pos < s->end && in(s->cpts[pos]) == want)
            pos++;
        emit(s, pos);
    }
}

/* CLASS (one code point) as a std::regex split: each one alone, and the runs between. */
static void split_each(span *s, bool (*in)(uint32_t)) {
    for (size_t pos = s->ini; pos < s->end && s->rc == LC_OK; pos++)
        if (in(s->cpts[pos])) {
            emit(s, pos);
            emit(s, pos + 1);
        }
    emit(s, s->end);
}

/* [0-9][0-9][0-9]: leftmost triples, and what lies between them. */
static void split_triples(span *s) {
    size_t pos = s->ini;
    while (pos + 2 < s->end && s->rc == LC_OK) {
        if (is_digit(s->cpts[pos]) && is_digit(s->cpts[pos + 1]) && is_digit(s->cpts[pos + 2])) {
            emit(s, pos);
            pos += 3;
            emit(s, pos);
        } else {
            pos++;
        }
    }
    emit(s, s->end);
}

enum step { STEP_LLAMA3, STEP_QWEN2, STEP_GPT2, STEP_PUNCT, STEP_NUM, STEP_TRIPLES,
            STEP_NUM_EACH, STEP_PUNCT_BT, STEP_QWEN35, STEP_CR_LF, STEP_WS_LETTERS,
            STEP_WS_PUNCT, STEP_CJK, STEP_WS_LLM_LETTERS, STEP_WS_LLM_PUNCT, STEP_TRAIL_WS };

/* Runs one split over every piece of IN (lengths), appending to OUT. */
static lc_code run_step(enum step st, const uint32_t *cpts, const lc_tok_ids *in,
                        lc_tok_ids *out, lc_error *err) {
    size_t at = 0;
    for (size_t i = 0; i < in->n; i++) {
        span s = { cpts, at, at + (size_t)in->v[i], at, out, err, LC_OK };
        switch (st) {
        case STEP_LLAMA3:  split_llama3(&s, 3, LC_UC_LETTER); break;
        case STEP_QWEN2:   split_llama3(&s, 1, LC_UC_LETTER); break;
        case STEP_QWEN35:  split_llama3(&s, 1, LC_UC_LETTER | LC_UC_MARK); break;
        case STEP_GPT2:    split_gpt2(&s); break;
        case STEP_PUNCT:   split_runs(&s, is_p_or_sym); break;
        case STEP_NUM:     split_runs(&s, is_num); break;
        case STEP_TRIPLES: split_triples(&s); break;
        case STEP_NUM_EACH: split_each(&s, is_num); break;
        case STEP_PUNCT_BT: split_runs(&s, is_p_sym_bt); break;
        case STEP_CR_LF:   split_each(&s, is_cr_lf); break;
        case STEP_WS_LETTERS: split_ws_runs(&s, is_letter); break;
        case STEP_WS_PUNCT: split_ws_runs(&s, is_punct); break;
        case STEP_CJK:     split_runs(&s, is_cjk); break;
        case STEP_WS_LLM_LETTERS: split_ws_runs(&s, is_llm_letter); break;
        case STEP_WS_LLM_PUNCT: split_ws_runs(&s, is_llm_punct); break;
        case STEP_TRAIL_WS: split_trailing_ws(&s); break;
        }
        if (s.rc != LC_OK)
            return s.rc;
        at = s.end;
    }
    return LC_OK;
}

/* gemma4's "[^\n]+|[\n]+": the longest runs of newlines and of everything else. */
static lc_code split_newline_runs(const uint32_t *cpts, size_t n, lc_tok_ids *out,
                                  lc_error *err) {
    size_t start = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && (cpts[i] == '\n') == (cpts[start] == '\n'))
            continue;
        LC_TRY(lc_tok_ids_push(out, (int32_t)(i - start), err));
        start = i;
    }
    return LC_OK;
}

lc_code lc_tok_pre_split(enum lc_tok_pre pre, const uint32_t *cpts, size_t n,
                         lc_tok_ids *out, lc_error *err) {
    static const enum step LLAMA3[] = { STEP_LLAMA3 }, QWEN2[] = { STEP_QWEN2 },
                           GPT2[] = { STEP_GPT2 }, STARCODER[] = { STEP_NUM_EACH, STEP_GPT2 },
                           FALCON[] = { STEP_PUNCT_BT, STEP_GPT2, STEP_TRIPLES },
                           QWEN35[] = { STEP_QWEN35 },
                           DS_CODER[] = { STEP_CR_LF, STEP_WS_LETTERS, STEP_WS_PUNCT,
                                          STEP_CJK, STEP_NUM_EACH },
                           DS_LLM[] = { STEP_CR_LF, STEP_WS_LLM_LETTERS, STEP_WS_LLM_PUNCT,
                                        STEP_TRAIL_WS, STEP_CJK, STEP_NUM },
                           DEFAULT[] = { STEP_PUNCT, STEP_GPT2, STEP_NUM, STEP_TRIPLES };
    const enum step *steps = DEFAULT;
    size_t n_steps = 4;
    switch (pre) {
    case LC_PRE_LLAMA3:  steps = LLAMA3; n_steps = 1; break;
    case LC_PRE_QWEN2:   steps = QWEN2;  n_steps = 1; break;
    case LC_PRE_GPT2:    steps = GPT2;   n_steps = 1; break;
    case LC_PRE_STARCODER: steps = STARCODER; n_steps = 2; break;
    case LC_PRE_FALCON:  steps = FALCON; n_steps = 3; break;
    case LC_PRE_QWEN35:  steps = QWEN35; n_steps = 1; break;
    case LC_PRE_DEEPSEEK_CODER: steps = DS_CODER; n_steps = 5; break;
    case LC_PRE_DEEPSEEK_LLM:   steps = DS_LLM;   n_steps = 6; break;
    case LC_PRE_DEFAULT: case LC_PRE_GEMMA4: break;
    }
    if (pre == LC_PRE_GEMMA4)
        return split_newline_runs(cpts, n, out, err);
    lc_tok_ids a = { 0 }, b = { 0 };
    lc_code rc = lc_tok_ids_push(&a, (int32_t)n, err);
    for (size_t i = 0; i < n_steps && rc == LC_OK; i++) {
        lc_tok_ids *dst = i + 1 == n_steps ? out : &b;
        rc = run_step(steps[i], cpts, &a, dst, err);
        if (dst == &b) {   /* b becomes the next step's input */
            lc_tok_ids t = a;
            a = b;
            b = t;
            b.n = 0;
        }
    }

    lc_free(a.v);
    lc_free(b.v);
    return rc;
}
