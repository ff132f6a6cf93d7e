/* Unit tests for infer/tokenize*: the Unicode class table, UTF-8 as llama.cpp reads it,
 * the pre-tokenizer splits, SentencePiece and BPE merging on small vocabularies built
 * here, special tokens, the edge cases (empty text, only spaces, emoji, invalid UTF-8,
 * digits, newlines), open errors and the tool's argument helpers. Every expected id list
 * was worked out by hand from llama.cpp's algorithm (and the fixture one checked against
 * llama.cpp itself, see tests/llama/test_tokenize.py). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "infer/tokenize.h"
#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

/* ---- building tokenizer metadata ---- */

static void set_strs(lc_model *m, const char *key, const char *const *s, size_t n) {
    lc_value v;
    lc_error err = { 0 };
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(s[i]);
    cr_assert_eq(lc_value_string_array(&v, n, bytes, &err), LC_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(lc_value_arr_set_str(&v, i, s[i], strlen(s[i]), &err), LC_OK);
    cr_assert_eq(lc_model_set_meta(m, key, &v, &err), LC_OK);
}

static void set_nums(lc_model *m, const char *key, lc_vtype t, const double *x, size_t n) {
    lc_value v;
    lc_error err = { 0 };
    cr_assert_eq(lc_value_array(&v, t, n, &err), LC_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(lc_value_arr_set(&v, i, t == LC_VT_F32 ? lc_value_float(t, x[i])
                                                          : lc_value_int(t, (int64_t)x[i]), &err),
                     LC_OK);
    cr_assert_eq(lc_model_set_meta(m, key, &v, &err), LC_OK);
}

static void set_scalar(lc_model *m, const char *key, lc_value v) {
    lc_error err = { 0 };
    cr_assert_eq(lc_model_set_meta(m, key, &v, &err), LC_OK);
}

/* SentencePiece: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces below. */
enum { S_SP = 259, S_A, S_B, S_AB, S_SPA, S_SPAB, S_AA, S_TOOL, S_N };
/* A SentencePiece vocabulary whose user-defined token S_TOOL spells `ud`. */
static lc_model *spm_model_ud(const char *ud) {
    static char hex[256][8];
    const char *tok[S_N];
    double score[S_N], type[S_N];
    tok[0] = "<unk>", tok[1] = "<s>", tok[2] = "</s>";
    type[0] = 2, type[1] = type[2] = 3;
    for (int b = 0; b < 256; b++) {
        snprintf(hex[b], sizeof hex[b], "<0x%02X>", b);
        tok[3 + b] = hex[b];
        type[3 + b] = 6;
    }
    const char *pieces[] = { "\xe2\x96\x81", "a", "b", "ab", "\xe2\x96\x81" "a",
                             "\xe2\x96\x81" "ab", "aa", ud };
    const double sc[] = { -5, -3, -3, -1, -2, -0.5, -1, 0 };
    for (int i = 0; i < S_N - S_SP; i++) {
        tok[S_SP + i] = pieces[i];
        score[S_SP + i] = sc[i];
        type[S_SP + i] = 1;
    }
    type[S_TOOL] = 4;   /* user-defined */
    for (int i = 0; i < S_SP; i++)
        score[i] = i < 3 ? -1000 : 0;
    lc_model *m = lc_model_new();
    lc_error err = { 0 };
    cr_assert_eq(lc_model_set_meta_str(m, "tokenizer.ggml.model", "llama", &err), LC_OK);
    set_strs(m, "tokenizer.ggml.tokens", tok, S_N);
    set_nums(m, "tokenizer.ggml.scores", LC_VT_F32, score, S_N);
    set_nums(m, "tokenizer.ggml.token_type", LC_VT_I32, type, S_N);
    set_scalar(m, "tokenizer.ggml.bos_token_id", lc_value_uint(LC_VT_U32, 1));
    set_scalar(m, "tokenizer.ggml.eos_token_id", lc_value_uint(LC_VT_U32, 2));
    return m;
}

static lc_model *spm_model(void) { return spm_model_ud("<tool>"); }

/* BPE: ids 0..255 are the byte alphabet in byte order, then merged tokens and specials. */
enum { B_HE = 256, B_LL, B_HELL, B_GH, B_END, B_N };
static lc_model *bpe_model(const char *pre) {
    static char alpha[256][4];
    const char *tok[B_N];
    double type[B_N];
    for (int b = 0; b < 256; b++) {
        size_t n = lc_tok_utf8_put(lc_tok_byte_cp((uint8_t)b), alpha[b]);
        alpha[b][n] = '\0';
        tok[b] = alpha[b];
        type[b] = 1;
    }
    tok[B_HE] = "he", tok[B_LL] = "ll", tok[B_HELL] = "hell", tok[B_GH] = "\xc4\xa0h";
    tok[B_END] = "<|end|>";
    type[B_HE] = type[B_LL] = type[B_HELL] = type[B_GH] = 1;
    type[B_END] = 3;
    const char *merges[] = { "h e", "l l", "he ll", "\xc4\xa0 h", "h e" /* again: first wins */ };
    lc_model *m = lc_model_new();
    lc_error err = { 0 };
    cr_assert_eq(lc_model_set_meta_str(m, "tokenizer.ggml.model", "gpt2", &err), LC_OK);
    if (pre)
        cr_assert_eq(lc_model_set_meta_str(m, "tokenizer.ggml.pre", pre, &err), LC_OK);
    set_strs(m, "tokenizer.ggml.tokens", tok, B_N);
    set_nums(m, "tokenizer.ggml.token_type", LC_VT_I32, type, B_N);
    set_strs(m, "tokenizer.ggml.merges", merges, 5);
    set_scalar(m, "tokenizer.ggml.bos_token_id", lc_value_uint(LC_VT_U32, B_END));
    return m;
}

static lc_tok *open_tok(lc_model *m) {
    lc_tok *tok = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_open(m, &tok, &err), LC_OK, "%s", err.msg);
    lc_model_free(m);
    return tok;
}

/* Encodes s (len bytes) and compares with want[0..n). */
static void expect(const lc_tok *tok, const char *s, size_t len, unsigned flags,
                   const int32_t *want, size_t n) {
    int32_t got[256];
    size_t k = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_encode(tok, s, len, flags, got, 256, &k, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(k, n, "\"%.*s\": %zu ids, want %zu", (int)len, s, k, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "\"%.*s\": id %zu is %d, want %d", (int)len, s, i,
                     got[i], want[i]);
}
#define EXPECT(tok, s, flags, ...) do { \
        static const int32_t want_[] = { __VA_ARGS__ }; \
        expect(tok, s, sizeof s - 1, flags, want_, sizeof want_ / sizeof *want_); \
    } while (0)
#define EXPECT_NONE(tok, s, flags) expect(tok, s, sizeof s - 1, flags, NULL, 0)

/* ---- the Unicode table ---- */

Test(tokenize, unicode_classes) {
    static const struct { uint32_t cp; uint16_t want; } cases[] = {
        { 'a', LC_UC_LETTER }, { 'Z', LC_UC_LETTER }, { '0', LC_UC_NUMBER },
        { ' ', LC_UC_SEPARATOR | LC_UC_WHITESPACE }, { '\t', LC_UC_CONTROL | LC_UC_WHITESPACE },
        { '\n', LC_UC_CONTROL | LC_UC_WHITESPACE }, { '\r', LC_UC_CONTROL | LC_UC_WHITESPACE },
        { 0x1C, LC_UC_CONTROL },                           /* Python's isspace, not White_Space */
        { 0x85, LC_UC_CONTROL | LC_UC_WHITESPACE }, { 0xA0, LC_UC_SEPARATOR | LC_UC_WHITESPACE },
        { 0x3000, LC_UC_SEPARATOR | LC_UC_WHITESPACE }, { 0x2028, LC_UC_SEPARATOR | LC_UC_WHITESPACE },
        { 0x200B, LC_UC_CONTROL },                         /* zero width space is Cf */
        { '!', LC_UC_PUNCT }, { '_', LC_UC_PUNCT }, { '$', LC_UC_SYMBOL }, { '`', LC_UC_SYMBOL },
        { 0x301, LC_UC_MARK }, { 0x378, LC_UC_UNDEFINED }, { 0xE000, LC_UC_CONTROL },
        { 0xD800, LC_UC_CONTROL }, { 0x1F600, LC_UC_SYMBOL }, { 0x4E2D, LC_UC_LETTER },
        { 0x663, LC_UC_NUMBER }, { 0xBD, LC_UC_NUMBER }, { 0x216B, LC_UC_NUMBER },
        { 0xAC00, LC_UC_LETTER }, { 0x10FFFF, LC_UC_UNDEFINED }, { 0x110000, LC_UC_UNDEFINED },
        { 0xFFFFFFFF, LC_UC_UNDEFINED }, { 0, LC_UC_CONTROL }, { 0x10FFFD, LC_UC_CONTROL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_eq(lc_tok_uc_flags(cases[i].cp), cases[i].want, "U+%X: %#x, want %#x",
                     cases[i].cp, lc_tok_uc_flags(cases[i].cp), cases[i].want);
    cr_assert_str_eq(lc_tok_uc_version(), "14.0.0");
    /* Never 0 (the splitters' "outside the piece"), over every code point. */
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++)
        if (!lc_tok_uc_flags(cp))
            cr_assert_fail("U+%X has no class", cp);
}

Test(tokenize, utf8_like_llama_cpp) {
    static const struct { const char *s; size_t len; uint32_t cp; size_t adv; } cases[] = {
        { "A", 1, 'A', 1 }, { "\xc3\xa9", 2, 0xE9, 2 }, { "\xe6\x97\xa5", 3, 0x65E5, 3 },
        { "\xf0\x9f\x98\x80", 4, 0x1F600, 4 },
        { "\x80", 1, 0xFFFD, 1 },                 /* continuation byte alone */
        { "\xc3", 1, 0xFFFD, 1 },                 /* truncated at the end */
        { "\xe6\x97", 2, 0xFFFD, 1 },
        { "\xc3(", 2, 0xFFFD, 1 },                /* not a continuation */
        { "\xff", 1, 0xFFFD, 1 }, { "\xf8\x88\x80\x80", 4, 0xFFFD, 1 },
        { "\xc0\x80", 2, 0, 2 },                  /* overlong: accepted, as llama.cpp does */
        { "\xed\xa0\x80", 3, 0xD800, 3 },         /* surrogate: accepted */
        { "\xf5\x80\x80\x80", 4, 0x140000, 4 },   /* past U+10FFFF: decoded, caller refuses */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t at = 0;
        uint32_t cp = lc_tok_utf8_next((const uint8_t *)cases[i].s, cases[i].len, &at);
        cr_assert_eq(cp, cases[i].cp, "case %zu: U+%X", i, cp);
        cr_assert_eq(at, cases[i].adv, "case %zu", i);
    }
    cr_assert_eq(lc_tok_utf8_len(0x41), 1);
    cr_assert_eq(lc_tok_utf8_len(0x80), 1);
    cr_assert_eq(lc_tok_utf8_len(0xC3), 2);
    cr_assert_eq(lc_tok_utf8_len(0xE6), 3);
    cr_assert_eq(lc_tok_utf8_len(0xF0), 4);
    cr_assert_eq(lc_tok_utf8_len(0xFF), 4);
}

Test(tokenize, byte_alphabet) {
    cr_assert_eq(lc_tok_byte_cp(' '), 0x120);     /* "Ġ" */
    cr_assert_eq(lc_tok_byte_cp('\n'), 0x10A);    /* "Ċ" */
    cr_assert_eq(lc_tok_byte_cp('a'), 'a');
    cr_assert_eq(lc_tok_byte_cp(0xAD), 0x143);
    for (int b = 0; b < 256; b++)
        cr_assert_eq(lc_tok_cp_byte(lc_tok_byte_cp((uint8_t)b)), b);
    cr_assert_eq(lc_tok_cp_byte(0x20), -1);
    cr_assert_eq(lc_tok_cp_byte(0x144), -1);
}

/* ---- pre-tokenizers ---- */

/* Splits UTF-8 s by pre; returns the pieces joined by '|'. */
static const char *split(enum lc_tok_pre pre, const char *s) {
    static char out[512];
    uint32_t cpts[128];
    size_t n = 0, len = strlen(s);
    for (size_t at = 0; at < len;)
        cpts[n++] = lc_tok_utf8_next((const uint8_t *)s, len, &at);
    lc_tok_ids pieces = { 0 };
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_pre_split(pre, cpts, n, &pieces, &err), LC_OK);
    size_t o = 0, c = 0;
    for (size_t i = 0; i < pieces.n; i++) {
        if (i)
            out[o++] = '|';
        for (int32_t k = 0; k < pieces.v[i]; k++)
            o += lc_tok_utf8_put(cpts[c++], out + o);
    }
    out[o] = '\0';
    cr_assert_eq(c, n, "pieces cover %zu of %zu code points", c, n);
    lc_free(pieces.v);
    return out;
}

Test(tokenize, pre_digits) {
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "1234567 89"), "123|456|7| |89");
    cr_assert_str_eq(split(LC_PRE_QWEN2, "1234 5"), "1|2|3|4| |5");
    cr_assert_str_eq(split(LC_PRE_GPT2, "1234567 89"), "1234567| 89");
    cr_assert_str_eq(split(LC_PRE_DEFAULT, "1234567 89"), "123|456|7| |89");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "\xd9\xa3\xd9\xa4\xd9\xa5\xd9\xa6"),   /* ٣٤٥٦ */
                     "\xd9\xa3\xd9\xa4\xd9\xa5|\xd9\xa6");
    cr_assert_str_eq(split(LC_PRE_DEFAULT, "a\xd9\xa3\xd9\xa4" "1234"),   /* \p{N}+, then ASCII triples */
                     "a|\xd9\xa3\xd9\xa4|123|4");
    /* starcoder, refact, command-r: each \p{N} alone first, then GPT-2's split; the space
     * before a number stays by itself. */
    cr_assert_str_eq(split(LC_PRE_STARCODER, "ab12 34x \xd9\xa3y"),
                     "ab|1|2| |3|4|x| |\xd9\xa3|y");
    /* qwen35: a combining mark (U+0301) joins the letters around it; qwen2 cuts there. */
    cr_assert_str_eq(split(LC_PRE_QWEN35, "cafe\xcc\x81s 12"), "cafe\xcc\x81s| |1|2");
    cr_assert_str_eq(split(LC_PRE_QWEN2, "cafe\xcc\x81s 12"), "cafe|\xcc\x81s| |1|2");
    /* falcon: '`' is punctuation there, and numbers go by ASCII triples only. */
    cr_assert_str_eq(split(LC_PRE_FALCON, "a`b 1234 \xd9\xa3\xd9\xa4"),
                     "a|`|b| |123|4| \xd9\xa3\xd9\xa4");
}

Test(tokenize, pre_words_and_contractions) {
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "I'M here, they'll go"), "I|'M| here|,| they|'ll| go");
    cr_assert_str_eq(split(LC_PRE_GPT2, "I'M here, they'll go"), "I|'|M| here|,| they|'ll| go");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "'x (hi)"), "'x| (|hi|)");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"),
                     "caf\xc3\xa9| \xe6\x97\xa5\xe6\x9c\xac");
    cr_assert_str_eq(split(LC_PRE_DEFAULT, "x=a+b;c"), "x|=|a|+|b|;|c");
    cr_assert_str_eq(split(LC_PRE_DEFAULT, "a`b"), "a|`|b");   /* ` is no \p{P} */
}

Test(tokenize, pre_whitespace_and_newlines) {
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "a  b   "), "a| | b|   ");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "a\n\n  \nb"), "a|\n\n  \n|b");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "a \n b"), "a| \n| b");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "x.\n\ny"), "x|.\n\n|y");   /* punct takes its newlines */
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "\r\n"), "\r\n");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, " "), " ");
    cr_assert_str_eq(split(LC_PRE_GPT2, "a  b\n\nc "), "a| | b|\n|\n|c| ");
    cr_assert_str_eq(split(LC_PRE_LLAMA3, "a\xe3\x80\x80" "b"), "a|\xe3\x80\x80" "b");   /* U+3000 */
}

/* deepseek-coder and deepseek-llm: llama.cpp's chains of std::regex splits. Each piece
 * below is what its unicode_regex_split gives for the string (checked against it). */
Test(tokenize, pre_deepseek_coder) {
    /* [\r\n] each alone; \s?\p{L}+ takes one whitespace before a word. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\r\n"), "\r|\n");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "Hello  world\n"), "Hello| | world|\n");
    /* \p{P} is ASCII's !"#%&'()*,-./:;?@[\]_{} and Unicode's P*: $ and + are symbols. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "a,b!! c"), "a|,|b|!!| c");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "x $+ y"), "x| $+| y");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x81"),
                     "\xef\xbc\xa1\xef\xbc\xa2|\xef\xbc\x81");                  /* ＡＢ！ */
    /* CJK (U+0800-9FA5) and Hangul (U+AC00-D7FF) leave the letter runs they were in. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e" "abc"),
                     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e|abc");               /* 日本語abc */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xed\x95\x9c\xea\xb5\xad" "abc"),
                     "\xed\x95\x9c\xea\xb5\xad|abc");                          /* 한국abc */
    /* U+3000 lies in the CJK range but is whitespace there: \s before the next word. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xe4\xb8\xad\xe3\x80\x80\xe6\x96\x87"),
                     "\xe4\xb8\xad|\xe3\x80\x80|\xe6\x96\x87");                 /* 中　文 */
    /* \p{N}: every number code point alone, ASCII or not (٣ ٤ ½). */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "abc123"), "abc|1|2|3");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xd9\xa3\xd9\xa4\xc2\xbd"),
                     "\xd9\xa3|\xd9\xa4|\xc2\xbd");
    /* \s is the "C" locale's: a tab is, U+001C (Unicode's whitespace to Python) is not. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\tab"), "\tab");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\x1c" "ab"), "\x1c|ab");
    /* No \s+$ step here: trailing whitespace stays with what precedes it. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_CODER, "\xf0\x9f\x98\x80  "), "\xf0\x9f\x98\x80  ");
}

/* gemma4: runs of newlines and runs of anything else, spaces and \r included. */
Test(tokenize, pre_gemma4) {
    cr_assert_str_eq(split(LC_PRE_GEMMA4, "a b\n\nc\r\n"), "a b|\n\n|c\r|\n");
    cr_assert_str_eq(split(LC_PRE_GEMMA4, "\n"), "\n");
    cr_assert_str_eq(split(LC_PRE_GEMMA4, "\xe4\xb8\xad 1\n "), "\xe4\xb8\xad 1|\n| ");
}

Test(tokenize, pre_deepseek_llm) {
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\r\n"), "\r|\n");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "Hello, world!"), "Hello|,| world|!");
    /* The letter class is a list of cased scripts: Greek is in, CJK and Hangul are not. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xce\xb1\xce\xb2\xce\xb3 \xce\xb4"),
                     "\xce\xb1\xce\xb2\xce\xb3| \xce\xb4");                     /* αβγ δ */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xe4\xb8\xad\xe6\x96\x87" "abc"),
                     "\xe4\xb8\xad\xe6\x96\x87|abc");                           /* 中文abc */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xea\xb0\x80\xeb\x82\x98\xeb\x8b\xa4" "abc"),
                     "\xea\xb0\x80\xeb\x82\x98\xeb\x8b\xa4|abc");               /* 가나다abc */
    /* Punctuation: fullwidth forms and the quotation marks U+2018-201F. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x81"),
                     "\xef\xbc\xa1\xef\xbc\xa2|\xef\xbc\x81");                  /* ＡＢ！ */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xe2\x80\x9chi\xe2\x80\x9d"),
                     "\xe2\x80\x9c|hi|\xe2\x80\x9d");                           /* “hi” */
    /* U+3000 is written in the punctuation class but is \v when matched: no punctuation
     * run " \u3000" here, the three spaces end the piece together (\s+$). */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "a  \xe3\x80\x80"), "a|  \xe3\x80\x80");
    /* \s+$: $ is the end of the piece, not of a line. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\xf0\x9f\x98\x80  \xf0\x9f\x98\x80  "),
                     "\xf0\x9f\x98\x80  \xf0\x9f\x98\x80|  ");
    /* \p{N}+: one run, ASCII and Arabic-Indic digits together. */
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "abc123\xd9\xa3"), "abc|123\xd9\xa3");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\tab"), "\tab");
    cr_assert_str_eq(split(LC_PRE_DEEPSEEK_LLM, "\x1c" "ab"), "\x1c|ab");
}

/* ---- SentencePiece ---- */

Test(tokenize, spm_merges_by_score) {
    lc_tok *tok = open_tok(spm_model());
    EXPECT(tok, "ab", 0, S_SPAB);                 /* ab (-1) first, then ▁ab (-0.5) */
    EXPECT(tok, "aaa", 0, S_SP, S_AA, S_A);       /* equal scores: the leftmost pair */
    EXPECT(tok, "ab", LC_TOK_ADD_SPECIAL, 1, S_SPAB);
    EXPECT(tok, "b a", 0, S_SP, S_B, S_SPA);
    lc_tok_close(tok);
}

Test(tokenize, spm_edge_cases) {
    lc_tok *tok = open_tok(spm_model());
    EXPECT_NONE(tok, "", 0);
    EXPECT(tok, "", LC_TOK_ADD_SPECIAL, 1);       /* BOS alone, as llama.cpp */
    EXPECT(tok, " ", 0, S_SP, S_SP);              /* the prefix and the space */
    EXPECT(tok, "  ", 0, S_SP, S_SP, S_SP);
    EXPECT(tok, "\n", 0, S_SP, 3 + '\n');         /* byte fallback */
    EXPECT(tok, "\xf0\x9f\x98\x80", 0, S_SP, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80);   /* 😀 */
    EXPECT(tok, "\xe6\x97", 0, S_SP, 3 + 0xE6, 3 + 0x97);   /* invalid UTF-8: its bytes */
    lc_tok_close(tok);
}

Test(tokenize, spm_special_tokens) {
    lc_tok *tok = open_tok(spm_model());
    /* Control tokens only when parsed; after one, the next text gets a space again. */
    EXPECT(tok, "a</s>a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SPA);
    EXPECT(tok, "<s>", 0, S_SP, 3 + '<', 3 + 's', 3 + '>');
    /* User-defined tokens are cut out either way. */
    EXPECT(tok, "a<tool>", 0, S_SPA, S_TOOL);
    lc_tok_close(tok);
}

/* llama.cpp's attributes by name (llama_vocab::impl::load): phi-3's special tokens eat
 * the spaces after them, except <unk>, <s> and <|endoftext|>; "Hello</s> world" is
 * 15043, 2, 3186 there with the LLaMA vocabulary, not 15043, 2, 29871, 3186. */
static lc_tok *named(const char *ud, const char *key, const char *value) {
    lc_model *m = spm_model_ud(ud);
    lc_error err = { 0 };
    cr_assert_eq(lc_model_set_meta_str(m, key, value, &err), LC_OK);
    return open_tok(m);
}

Test(tokenize, phi3_special_tokens_strip_the_space_after) {
    lc_tok *tok = named("<|endoftext|>", "general.name", "Phi-3-mini-4k-Instruct");
    EXPECT(tok, "a</s> a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SPA);
    EXPECT(tok, "a</s> \t\n a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SPA);
    EXPECT(tok, "a</s>", LC_TOK_PARSE_SPECIAL, S_SPA, 2);
    EXPECT(tok, "a </s>a", LC_TOK_PARSE_SPECIAL, S_SPA, S_SP, 2, S_SPA);  /* not before */
    EXPECT(tok, "a<s> a", LC_TOK_PARSE_SPECIAL, S_SPA, 1, S_SP, S_SPA);   /* <s>: kept */
    EXPECT(tok, "a<|endoftext|> a", LC_TOK_PARSE_SPECIAL, S_SPA, S_TOOL, S_SP, S_SPA);
    EXPECT(tok, "a</s> a", 0, S_SPA, 3 + '<', 3 + '/', 3 + 's', 3 + '>', S_SPA);
    lc_tok_close(tok);
    tok = named("<|endoftext|>", "general.name", "Llama");                /* no phi-3 */
    EXPECT(tok, "a</s> a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SP, S_SPA);
    lc_tok_close(tok);
    tok = named("<|endoftext|>", "general.name", "my PHI3 finetune");     /* phi3 too */
    EXPECT(tok, "a</s> a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SPA);
    lc_tok_close(tok);
}

Test(tokenize, name_attrs_other_branches) {
    /* phi-3 by name but without <|endoftext|>: llama.cpp's map::at throws; refused. */
    lc_model *m = spm_model_ud("<|assistant|>");
    lc_error err = { 0 };
    cr_assert_eq(lc_model_set_meta_str(m, "general.name", "Phi-3", &err), LC_OK);
    lc_tok *tok = (lc_tok *)1;
    cr_assert_eq(lc_tok_open(m, &tok, &err), LC_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "<|endoftext|>"), "%s", err.msg);
    cr_assert_null(tok);
    lc_model_free(m);
    /* modern-bert: [MASK] eats the spaces before it. */
    tok = named("[MASK]", "general.name", "ModernBERT modern-bert-base");
    EXPECT(tok, "a  [MASK] a", 0, S_SPA, S_TOOL, S_SP, S_SPA);
    lc_tok_close(tok);
    /* nomic-bert-moe by architecture comes first: <mask> LSTRIP, no phi-3 RSTRIP. */
    m = spm_model_ud("<mask>");
    cr_assert_eq(lc_model_set_meta_str(m, "general.name", "phi-3", &err), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "nomic-bert-moe", &err), LC_OK);
    tok = open_tok(m);
    EXPECT(tok, "a <mask> a", 0, S_SPA, S_TOOL, S_SP, S_SPA);
    EXPECT(tok, "a</s> a", LC_TOK_PARSE_SPECIAL, S_SPA, 2, S_SP, S_SPA);
    lc_tok_close(tok);
}

/* ---- BPE ---- */

/* llama.cpp's other names for the splits we implement (infer/tokenize_pre_names_impl.h,
 * generated from its source): each tokenizes exactly as the name it stands for; a name
 * whose branch does more (jina-v1-en adds a separator token) stays refused. */
Test(tokenize, pre_aliases_are_llama_cpps) {
    static const char *const pairs[][2] = {
        { "deepseek-r1-qwen", "qwen2" }, { "kormo", "qwen2" }, { "megrez", "qwen2" },
        { "falcon3", "llama-bpe" },      { "falcon-h1", "llama-bpe" }, { "pixtral", "llama-bpe" },
        { "lfm2", "llama-bpe" },         { "phi-2", "gpt-2" },  { "gigachat", "gpt-2" },
        { "mellum", "gpt-2" },           { "modern-bert", "gpt-2" }, { "jina-v2-de", "gpt-2" },
        { "mpt", "gpt-2" },              { "olmo", "gpt-2" },   { "stablelm2", "qwen2" },
        { "refact", "starcoder" },       { "command-r", "starcoder" },
    };
    static const char text[] = "hello  he'll 123456 \xc4\xa0hell<|end|> ";
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        lc_tok *a = open_tok(bpe_model(pairs[i][0])), *b = open_tok(bpe_model(pairs[i][1]));
        for (unsigned flags = 0; flags < 4; flags++) {
            int32_t x[64], y[64];
            size_t nx = 0, ny = 0;
            cr_assert_eq(lc_tok_encode(a, text, sizeof text - 1, flags, x, 64, &nx, NULL), LC_OK);
            cr_assert_eq(lc_tok_encode(b, text, sizeof text - 1, flags, y, 64, &ny, NULL), LC_OK);
            cr_assert(nx == ny && memcmp(x, y, nx * sizeof *x) == 0, "%s vs %s, flags %u",
                      pairs[i][0], pairs[i][1], flags);
        }
        lc_tok_close(a);
        lc_tok_close(b);
    }
    lc_tok *tok = (lc_tok *)1;
    lc_model *m = bpe_model("jina-v1-en");
    cr_assert_eq(lc_tok_open(m, &tok, NULL), LC_E_UNSUPPORTED);
    lc_model_free(m);
}

Test(tokenize, bpe_merges_by_rank) {
    lc_tok *tok = open_tok(bpe_model("llama-bpe"));
    EXPECT(tok, "hello", 0, B_HELL, 'o');
    EXPECT(tok, " hell", 0, ' ', B_HELL);         /* "Ġ h" (rank 3) loses to "h e" (0) */
    EXPECT(tok, " h", 0, B_GH);
    EXPECT(tok, "hello", LC_TOK_ADD_SPECIAL, B_END, B_HELL, 'o');   /* llama-bpe adds BOS */
    EXPECT(tok, "x<|end|>", LC_TOK_PARSE_SPECIAL, 'x', B_END);
    EXPECT(tok, "x<|end|>", 0, 'x', '<', '|', 'e', 'n', 'd', '|', '>');
    lc_tok_close(tok);
    tok = open_tok(bpe_model("qwen2"));
    EXPECT(tok, "hello", LC_TOK_ADD_SPECIAL, B_HELL, 'o');           /* qwen2 adds none */
    lc_tok_close(tok);
}

Test(tokenize, bpe_edge_cases) {
    lc_tok *tok = open_tok(bpe_model("gpt-2"));
    EXPECT_NONE(tok, "", 0);
    EXPECT_NONE(tok, "", LC_TOK_ADD_SPECIAL);
    EXPECT(tok, "  ", 0, ' ', ' ');
    EXPECT(tok, "\n", 0, '\n');
    EXPECT(tok, "\xf0\x9f\x98\x80", 0, 0xF0, 0x9F, 0x98, 0x80);
    EXPECT(tok, "a\xff", 0, 'a', 0xEF, 0xBF, 0xBD);   /* a bad byte is U+FFFD */
    int32_t ids[8];
    size_t n = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_encode(tok, "ab\xf5\x80\x80\x80", 6, 0, ids, 8, &n, &err), LC_E_UNSUPPORTED);
    cr_assert_eq(err.offset, 2);
    lc_tok_close(tok);
}

Test(tokenize, buffer_too_small_reports_the_count) {
    lc_tok *tok = open_tok(bpe_model(NULL));
    int32_t ids[2];
    size_t n = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_encode(tok, "abcd", 4, 0, ids, 2, &n, &err), LC_E_OVERFLOW);
    cr_assert_eq(n, 4);
    cr_assert_eq(ids[0], 'a');
    cr_assert_eq(ids[1], 'b');
    lc_tok_close(tok);
}

Test(tokenize, decode_pieces) {
    lc_tok *tok = open_tok(spm_model());
    char buf[16];
    size_t n = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_decode_piece(tok, S_SPAB, false, buf, sizeof buf, &n, &err), LC_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(memcmp(buf, " ab", 3), 0);
    cr_assert_eq(lc_tok_decode_piece(tok, 3 + 0xC3, false, buf, sizeof buf, &n, &err), LC_OK);
    cr_assert(n == 1 && (uint8_t)buf[0] == 0xC3);
    cr_assert_eq(lc_tok_decode_piece(tok, 1, false, buf, sizeof buf, &n, &err), LC_OK);
    cr_assert_eq(n, 0);                           /* control tokens only when asked */
    cr_assert_eq(lc_tok_decode_piece(tok, 1, true, buf, sizeof buf, &n, &err), LC_OK);
    cr_assert(n == 3 && memcmp(buf, "<s>", 3) == 0);
    cr_assert_eq(lc_tok_decode_piece(tok, S_N, true, buf, sizeof buf, &n, &err), LC_E_ARG);
    cr_assert_eq(lc_tok_decode_piece(tok, 1, true, buf, 2, &n, &err), LC_E_OVERFLOW);
    cr_assert_eq(n, 3);
    lc_tok_close(tok);
    tok = open_tok(bpe_model(NULL));
    cr_assert_eq(lc_tok_decode_piece(tok, B_GH, false, buf, sizeof buf, &n, &err), LC_OK);
    cr_assert(n == 2 && memcmp(buf, " h", 2) == 0);
    cr_assert_str_eq(lc_tok_text(tok, B_GH), "\xc4\xa0h");
    cr_assert_null(lc_tok_text(tok, -1));
    cr_assert_eq(lc_tok_n_vocab(tok), B_N);
    cr_assert_eq(lc_tok_bos(tok), B_END);
    cr_assert_eq(lc_tok_eos(tok), 11);            /* gpt2's default, inside the vocabulary */
    lc_tok_close(tok);
}

/* ---- open errors ---- */

static void open_fails(lc_model *m, lc_code want, const char *where) {
    lc_tok *tok = (lc_tok *)1;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_open(m, &tok, &err), want, "%s", err.msg);
    cr_assert_null(tok);
    if (where)
        cr_assert_str_eq(err.where, where);
    lc_model_free(m);
}

Test(tokenize, open_refuses) {
    lc_error err = { 0 };
    open_fails(lc_model_new(), LC_E_NOTFOUND, "tokenizer.ggml.model");
    open_fails(bpe_model("tekken"), LC_E_UNSUPPORTED, "tokenizer.ggml.pre");
    lc_model *m = spm_model();
    cr_assert_eq(lc_model_set_meta_str(m, "tokenizer.ggml.model", "bert", &err), LC_OK);
    open_fails(m, LC_E_UNSUPPORTED, "tokenizer.ggml.model");
    m = bpe_model(NULL);
    const char *dup[] = { "a", "b", "a" };
    set_strs(m, "tokenizer.ggml.tokens", dup, 3);
    set_nums(m, "tokenizer.ggml.token_type", LC_VT_I32, (const double[]){ 1, 1, 1 }, 3);
    open_fails(m, LC_E_MALFORMED, "tokenizer.ggml.tokens");
    m = spm_model();
    set_nums(m, "tokenizer.ggml.token_type", LC_VT_I32, (const double[]){ 1, 1 }, 2);
    open_fails(m, LC_E_MALFORMED, "tokenizer.ggml.token_type");
    m = spm_model();
    set_nums(m, "tokenizer.ggml.scores", LC_VT_F64, (const double[]){ 1 }, 1);
    open_fails(m, LC_E_MALFORMED, "tokenizer.ggml.scores");
    m = bpe_model(NULL);
    lc_value none = { 0 };
    cr_assert_eq(lc_model_set_meta(m, "tokenizer.ggml.merges", &none, &err), LC_OK);
    open_fails(m, LC_E_MALFORMED, "tokenizer.ggml.merges");
    m = bpe_model("qwen2");   /* add_bos with a BOS id outside the vocabulary */
    set_scalar(m, "tokenizer.ggml.bos_token_id", lc_value_uint(LC_VT_U32, 99999));
    set_scalar(m, "tokenizer.ggml.eos_token_id", lc_value_uint(LC_VT_U32, 99999));
    set_scalar(m, "tokenizer.ggml.add_eos_token", lc_value_bool(true));
    lc_tok *tok = NULL;
    cr_assert_eq(lc_tok_open(m, &tok, &err), LC_OK);   /* eos stays 11, the default */
    cr_assert_eq(lc_tok_eos(tok), 11);
    lc_tok_close(tok);
    lc_model_free(m);
}

Test(tokenize, open_out_of_memory_leaves_nothing) {
    for (long nth = 1; nth < 40; nth++) {
        lc_model *m = bpe_model("llama-bpe");
        lc_tok *tok = (lc_tok *)1;
        lc_error err = { 0 };
        lc_alloc_fail_after(nth);
        lc_code rc = lc_tok_open(m, &tok, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_tok_close(tok);
        } else {
            cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, err.msg);
            cr_assert_null(tok);
        }
        lc_model_free(m);
    }
}

/* ---- the real fixture (checked against llama.cpp in tests/llama) ---- */

Test(tokenize, fixture_gguf) {
    const char *dir = getenv("LC_FIXTURES");
    char path[512];
    snprintf(path, sizeof path, "%s/hf-ref/llama-spm-f32.gguf", dir ? dir : "fixtures");
    lc_model *m = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load(path, &m, &err), LC_OK, "%s", err.msg);
    lc_tok *tok = open_tok(m);
    static const char text[] = "Hello world, 12345 <s> \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac";
    EXPECT(tok, text, LC_TOK_PARSE_SPECIAL | LC_TOK_ADD_SPECIAL, 1, 310, 375, 311, 320, 320,
           317, 279, 292, 320, 319, 330, 310, 336, 354, 347, 355, 356, 310, 1, 310, 310, 245,
           164, 157, 133, 310, 235, 156, 170, 235, 161, 177);   /* llama.cpp's own answer */
    lc_tok_close(tok);
}

/* ---- the tool's helpers ---- */

Test(tokenize, parse_ids) {
    int32_t *ids = NULL;
    size_t n = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_parse_ids("1,2,3", 0, &ids, &n, &err), LC_OK);
    cr_assert(n == 3 && ids[0] == 1 && ids[1] == 2 && ids[2] == 3);
    lc_free(ids);
    cr_assert_eq(lc_tok_parse_ids(" 7 , 0 ", 8, &ids, &n, &err), LC_OK);
    cr_assert(n == 2 && ids[0] == 7 && ids[1] == 0);
    lc_free(ids);
    static const struct { const char *s; uint32_t n_vocab; uint64_t at; } bad[] = {
        { "", 0, 0 }, { "1,,2", 0, 2 }, { "1,", 0, 2 }, { "1,x", 0, 2 }, { "-1", 0, 0 },
        { "2147483648", 0, 0 }, { "1,8", 8, 2 }, { "1 2", 0, 2 }, { "99999999999999999999", 0, 0 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        ids = (int32_t *)1;
        cr_assert_eq(lc_tok_parse_ids(bad[i].s, bad[i].n_vocab, &ids, &n, &err), LC_E_ARG,
                     "\"%s\"", bad[i].s);
        cr_assert_eq(err.offset, bad[i].at, "\"%s\": offset %llu", bad[i].s,
                     (unsigned long long)err.offset);
        cr_assert_null(ids);
    }
}

Test(tokenize, read_file_and_default_text) {
    char *text = NULL;
    size_t len = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_tok_read_file("/nonexistent/x.txt", 100, &text, &len, &err), LC_E_NOTFOUND);
    cr_assert_str_eq(err.path, "/nonexistent/x.txt");
    char tmp[] = "/tmp/lc-tok-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "hi\n", 3), 3);
    close(fd);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_tok_read_file(tmp, 2, &text, &len, &err), LC_E_OVERFLOW);
    cr_assert_eq(lc_tok_read_file(tmp, 3, &text, &len, &err), LC_OK);
    cr_assert(len == 3 && strcmp(text, "hi\n") == 0);
    lc_free(text);
    unlink(tmp);
    const char *d = lc_tok_default_text();
    cr_assert(strncmp(d, "Call me Ishmael.", 16) == 0);
    cr_assert(strlen(d) > 1000);
}
