/* hf/meta.h: metadata helpers for the HF -> GGUF tool: --metadata overrides and
 * the --dry-run plan.
 *
 * An override is one string "KEY=TYPE:VALUE":
 *   1. KEY: 1..255 bytes, no '='.
 *   2. TYPE: str | bool | u8 | u16 | u32 | u64 | i8 | i16 | i32 | i64 | f32 | f64.
 *   3. VALUE: the rest of the string; bool is "true" or "false", integers are decimal
 *      (or 0x hex) and must fit the type, floats use strtod's syntax. */
#ifndef LC_HF_META_H
#define LC_HF_META_H

#include <stdio.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

/* Applies one override to m, replacing the key's value in place or appending it.
 * LC_E_ARG naming the problem for a bad spec or a value that does not parse or fit;
 * m is unchanged then. */
lc_code lc_hf_meta_override(lc_model *m, const char *spec, lc_error *err);

/* Prints m's metadata ("key type value", arrays as "[n items]", strings cut at 60
 * bytes) and a tensor summary line to f: the dry-run plan. */
void lc_hf_meta_print(const lc_model *m, FILE *f);

#endif
