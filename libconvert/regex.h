/* libconvert/regex.h: regular expressions from a command line, matched in linear time.
 *
 * gguf-quantize's --tensor-type takes llama-quantize's patterns: std::regex in its
 * ECMAScript grammar, searched anywhere in the tensor name (regex_search). A pattern
 * is input too: a backtracking engine (std::regex, glibc's regexec with
 * back-references) takes time exponential in the name for some patterns, and glibc's
 * regcomp spends gigabytes on nested counted repetition. Here a pattern compiles to a
 * Thompson NFA of at most LC_RE_MAX_STATES states (counted before anything is built)
 * and a search simulates it (Pike's method: every live state advances together, each
 * at most once per byte), so a search costs O(name length x states) whatever the
 * pattern, and memory O(states).
 *
 * The language: ECMAScript's, bytes for characters, without what needs backtracking:
 *   - literals; '.' (any byte but \n and \r); classes [...] with ranges a-z, negation
 *     [^...] and the escapes below inside; groups ( ) and (?: ); alternation |;
 *   - repetition * + ? {n} {n,} {n,m}, each also lazy (*? ...: a search that only asks
 *     whether there is a match cannot tell lazy from greedy);
 *   - anchors ^ and $ (the whole name: no multiline), \b and \B;
 *   - escapes \d \D \w \W \s \S, \n \r \t \f \v \0, \xHH, \cX, and a backslash before
 *     any punctuation (\. \\ \( ...).
 * Refused with a message naming the byte offset: back-references (\1..\9, \k<name>),
 * lookaround ((?= (?! (?<= (?<!), named groups, \u escapes above U+00FF, unknown
 * escapes, a '{' that opens no repetition, unbalanced ( ) [ ], a quantifier with
 * nothing to repeat, {n,m} with n > m, and a pattern of more than LC_RE_MAX_STATES
 * states. */
#ifndef LC_LIBCONVERT_REGEX_H
#define LC_LIBCONVERT_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#include "libconvert/error.h"

/* NFA states a pattern may compile to: llama-quantize's patterns take tens;
 * '((.{1,255}){1,255}){1,255}' would take 16 million. */
#define LC_RE_MAX_STATES 4096

typedef struct lc_re lc_re;

/* Compiles pattern p[0..n) (bytes; NUL is a literal like any other). LC_E_ARG with the
 * byte offset in the message for what the language refuses, LC_E_OVERFLOW past
 * LC_RE_MAX_STATES, LC_E_NOMEM. On success *out is owned by the caller (lc_re_free);
 * on failure it is NULL. A compiled pattern is read-only: searches may run from
 * several threads at once. */
lc_code lc_re_compile(const char *p, size_t n, lc_re **out, lc_error *err);

/* Whether s[0..n) contains a match anywhere (std::regex_search). LC_E_NOMEM for the
 * search's scratch (3 arrays of the pattern's states; none above 256 states). */
lc_code lc_re_search(const lc_re *re, const char *s, size_t n, bool *match, lc_error *err);

/* The number of NFA states the pattern compiled to. */
size_t lc_re_states(const lc_re *re);

void lc_re_free(lc_re *re);   /* NULL-safe */

#endif
