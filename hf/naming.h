/* hf/naming.h: gguf-py's naming rules for a converted model (hf/naming.c). */
#ifndef LC_HF_NAMING_H
#define LC_HF_NAMING_H

#include <stddef.h>
#include <stdint.h>

/* general.name from a folder path: its last component through gguf-py's
 * Metadata.id_to_title ('-' -> ' ', all-lower-case words title-cased, versions kept). */
void lc_hf_title(const char *dir, char *out, size_t cap);

/* general.size_label: gguf-py's model_weight_count_rounded_notation(n, min_digits=2),
 * e.g. 199680 -> "200K". */
void lc_hf_size_label(uint64_t n, char *out, size_t cap);

#endif
