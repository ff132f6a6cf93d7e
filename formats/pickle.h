/* formats/pickle.h: a restricted pickle interpreter. A pickle is data, never code.
 *
 * The wire format (Python's pickle, protocols 0 to 5):
 *   1. A stream of one-byte opcodes, each followed by its argument: fixed-width
 *      little-endian integers (BININT, LONG_BINPUT, ...), length-prefixed bytes
 *      (BINUNICODE u32, BINBYTES8 u64, ...) or, in protocol 0, a text line ended by
 *      '\n' (INT, FLOAT, STRING, GLOBAL's "module\nname\n", ...).
 *   2. The opcodes drive a stack machine: MARK opens a frame, TUPLE/LIST/DICT/...
 *      collect the values above the last mark, PUT/GET keep values in a memo.
 *   3. GLOBAL / STACK_GLOBAL / INST name a Python object "module.name"; REDUCE
 *      and NEWOBJ call it; BUILD calls __setstate__. That is how pickles run code.
 *   4. PROTO (0x80 n) opens protocol 2+; FRAME (protocol 4+) only groups opcodes;
 *      STOP ('.') ends the pickle and the value on top of the stack is the result.
 *
 * Here nothing is imported or called. Every opcode builds an inert value: GLOBAL is
 * a node naming module.name, REDUCE a node holding the callable and its arguments,
 * BUILD attaches the state to the object it targets. A name must be on a fixed
 * allowlist (torch's rebuild helpers, storage classes and dtypes, OrderedDict,
 * torch.Size/device, a few builtins and numpy scalar/array helpers) or the load stops
 * with LC_E_FORBIDDEN at that opcode, naming "module.name", before any later opcode is
 * read. A few pure constructors are folded into plain values: OrderedDict() becomes an
 * ordered dict, set/frozenset/bytearray/bytes and _codecs.encode(s, "latin1") become
 * the set or bytes value; everything else stays a node for the caller to interpret.
 *
 * All values live in one arena owned by the lc_pickle and are freed by
 * lc_pickle_free(). Every accessor is NULL-safe and returns NULL/false when the
 * value is of another kind, so a walker can check shapes without casts.
 * Not thread-safe to build; a loaded lc_pickle may be read from many threads. */
#ifndef LC_FORMATS_PICKLE_H
#define LC_FORMATS_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

/* Limits (LC_E_OVERFLOW past them). Real checkpoints stay far below. */
#define LC_PICKLE_MAX_STACK  (1u << 20) /* values on the stack at once */
#define LC_PICKLE_MAX_MARKS  1024u      /* open MARKs at once */
#define LC_PICKLE_MAX_MEMO   (1u << 22) /* highest memo index + 1 */
#define LC_PICKLE_MAX_DEPTH  512u       /* nesting of containers and nodes */
#define LC_PICKLE_MAX_VALUES (1u << 22) /* values built by one load (default) */
#define LC_PICKLE_MAX_ARENA  ((uint64_t)1 << 30) /* bytes the values may take */
#define LC_PICKLE_MAX_DIGITS 4300u      /* decimal digits of a protocol-0 int, as CPython */
/* Values a compressed pickle may build per byte it takes in its file, plus a base
 * (see lc_pickle_opts.stored_size). */
#define LC_PICKLE_VALUES_PER_BYTE 16u
#define LC_PICKLE_VALUES_BASE     (1u << 16)

typedef enum lc_pickle_kind {
    LC_PICKLE_NONE = 0,
    LC_PICKLE_BOOL,
    LC_PICKLE_INT,       /* fits in int64 */
    LC_PICKLE_BIGINT,    /* wider: minimal little-endian two's complement bytes */
    LC_PICKLE_FLOAT,
    LC_PICKLE_STR,       /* valid UTF-8, NUL-terminated copy */
    LC_PICKLE_BYTES,
    LC_PICKLE_BYTEARRAY,
    LC_PICKLE_TUPLE,
    LC_PICKLE_LIST,
    LC_PICKLE_DICT,      /* insertion-ordered, keys unique by Python equality */
    LC_PICKLE_SET,
    LC_PICKLE_FROZENSET,
    LC_PICKLE_GLOBAL,    /* module.name, allowlisted */
    LC_PICKLE_REDUCE,    /* callable(*args), never called */
    LC_PICKLE_NEWOBJ,    /* cls.__new__(cls, *args, **kwargs): NEWOBJ, NEWOBJ_EX, OBJ, INST */
    LC_PICKLE_PERSID,    /* persistent id (PERSID, BINPERSID): a storage reference in torch */
    LC_PICKLE_KIND_COUNT
} lc_pickle_kind;

typedef struct lc_pickle lc_pickle;
typedef struct lc_pickle_val lc_pickle_val;

typedef struct lc_pickle_opts {
    uint64_t base_offset;    /* file offset of buf[0]; added to every reported offset */
    bool     allow_trailing; /* stop at STOP; otherwise bytes after it are LC_E_MALFORMED */
    uint64_t max_values;     /* 0: LC_PICKLE_MAX_VALUES */
    /* Bytes the pickle takes in its file when they are not its len bytes (a DEFLATE zip
     * entry's compressed size); 0: len. Values built are then budgeted at
     * LC_PICKLE_VALUES_PER_BYTE per stored byte + LC_PICKLE_VALUES_BASE (within
     * max_values): each value costs ~100 bytes of memory, and 4 million one-byte
     * opcodes compress to a few kilobytes. A plain pickle builds at most about one
     * value per byte and never meets this budget; a torch data.pkl builds ~15 values
     * per tensor in ~60 bytes that DEFLATE shrinks by a few times. */
    uint64_t stored_size;
} lc_pickle_opts;

/* Interprets the pickle in buf[0..len). On success *out owns every value (the bytes of
 * buf are copied, buf may go away). Codes: LC_E_FORBIDDEN (a name off the allowlist;
 * checked at the GLOBAL/STACK_GLOBAL/INST/EXT opcode, before later bytes are read),
 * LC_E_TRUNCATED (an argument or the pickle runs past len), LC_E_MALFORMED (unknown
 * opcode, unbalanced MARK, stack underflow, memo index never set, wrong value kinds,
 * invalid UTF-8, unhashable key, trailing bytes; a missing STOP is LC_E_TRUNCATED),
 * LC_E_OVERFLOW (a limit above, or thousands of colliding dict keys),
 * LC_E_UNSUPPORTED (protocol > 5, out-of-band buffers), LC_E_NOMEM. Offsets are the
 * opcode's (or the field's, for truncation) plus o->base_offset. o may be NULL. */
lc_code lc_pickle_load(const uint8_t *buf, uint64_t len, const lc_pickle_opts *o,
                       lc_pickle **out, lc_error *err);
/* NULL-safe; frees every value of p at once. */
void lc_pickle_free(lc_pickle *p);
/* The value STOP returned; valid until lc_pickle_free(p). */
const lc_pickle_val *lc_pickle_root(const lc_pickle *p);
/* Bytes of buf consumed up to and including STOP (for consecutive pickles). */
uint64_t lc_pickle_end(const lc_pickle *p);
/* Number of values built; every value's lc_pickle_id() is below it. */
size_t lc_pickle_count(const lc_pickle *p);

/* True when module.name is on the allowlist ("__builtin__" counts as "builtins"). */
bool lc_pickle_allowed(const char *module, const char *name);

/* ---- scanning: every global a pickle names, without trusting or stopping at any ---- */

typedef struct lc_pickle_ref {
    uint64_t    offset;  /* of the opcode, plus base_offset */
    uint8_t     opcode;  /* 'c' GLOBAL, 'i' INST, 0x93 STACK_GLOBAL, 0x82-0x84 EXT */
    const char *module;  /* as written; "?" when the scan cannot resolve it */
    const char *name;    /* as written; "?" likewise (or "ext:N" for EXT codes) */
    bool        allowed;
} lc_pickle_ref;
typedef void (*lc_pickle_scan_fn)(void *ctx, const lc_pickle_ref *ref);

/* Walks the opcodes of buf (and of every further pickle after a STOP, as a legacy
 * torch file holds several) keeping only strings and marks on its stack, and calls
 * fn for each GLOBAL, INST, STACK_GLOBAL and EXT in order. A STACK_GLOBAL whose names
 * are not two strings it can trace (constants, DUP, memo) is reported as "?" and
 * forbidden. Returns LC_E_FORBIDDEN (err names the first) when any reference is
 * forbidden, otherwise the first structural error (same codes as load), else LC_OK.
 * Strings passed to fn are valid only during the call. o may be NULL. */
lc_code lc_pickle_scan(const uint8_t *buf, uint64_t len, const lc_pickle_opts *o,
                       lc_pickle_scan_fn fn, void *ctx, lc_error *err);

/* ---- reading values: all NULL-safe, NULL/false/0 on a kind mismatch ---- */

lc_pickle_kind lc_pickle_kind_of(const lc_pickle_val *v);   /* NULL: LC_PICKLE_KIND_COUNT */
const char    *lc_pickle_kind_name(lc_pickle_kind k);       /* "tuple"; never NULL */
uint64_t       lc_pickle_offset(const lc_pickle_val *v);    /* of the opcode that made it */
size_t         lc_pickle_id(const lc_pickle_val *v);        /* dense index; singletons 0 */

bool lc_pickle_get_bool(const lc_pickle_val *v, bool *out);
bool lc_pickle_get_int(const lc_pickle_val *v, int64_t *out);    /* INT only, not BOOL */
bool lc_pickle_get_float(const lc_pickle_val *v, double *out);
/* STR: NUL-terminated UTF-8; *len (may be NULL) without the NUL. */
const char *lc_pickle_str(const lc_pickle_val *v, size_t *len);
/* BYTES and BYTEARRAY contents; BIGINT's two's complement bytes via lc_pickle_bigint. */
const uint8_t *lc_pickle_bytes(const lc_pickle_val *v, size_t *len);
const uint8_t *lc_pickle_bigint(const lc_pickle_val *v, size_t *len);
/* True when v is STR equal to s. */
bool lc_pickle_str_is(const lc_pickle_val *v, const char *s);

/* Items of a TUPLE, LIST, SET or FROZENSET when v is of kind `kind`, else NULL. */
const lc_pickle_val *const *lc_pickle_items(const lc_pickle_val *v, lc_pickle_kind kind,
                                            size_t *n);
/* DICT entries in insertion order. */
size_t               lc_pickle_dict_len(const lc_pickle_val *v);
const lc_pickle_val *lc_pickle_dict_key(const lc_pickle_val *v, size_t i);
const lc_pickle_val *lc_pickle_dict_value(const lc_pickle_val *v, size_t i);
/* The value under the str key `key`, or NULL. A linear search: to visit every entry
 * of a big dict, walk it with lc_pickle_dict_key/value instead. */
const lc_pickle_val *lc_pickle_dict_get(const lc_pickle_val *v, const char *key);
/* True for a dict made by collections.OrderedDict. */
bool lc_pickle_dict_ordered(const lc_pickle_val *v);

/* GLOBAL: module (canonical: "builtins", not "__builtin__") and name. */
bool lc_pickle_global(const lc_pickle_val *v, const char **module, const char **name);
bool lc_pickle_is_global(const lc_pickle_val *v, const char *module, const char *name);
/* REDUCE or NEWOBJ: the callable or class, the args tuple, NEWOBJ_EX's kwargs dict. */
const lc_pickle_val *lc_pickle_callable(const lc_pickle_val *v);
const lc_pickle_val *lc_pickle_args(const lc_pickle_val *v);
const lc_pickle_val *lc_pickle_kwargs(const lc_pickle_val *v);
/* True when v is a REDUCE or NEWOBJ whose callable is the GLOBAL module.name. */
bool lc_pickle_is_call(const lc_pickle_val *v, const char *module, const char *name);
/* The opcode that made a NEWOBJ node (0x81 NEWOBJ, 0x92 NEWOBJ_EX, 'o' OBJ, 'i' INST). */
uint8_t lc_pickle_newobj_opcode(const lc_pickle_val *v);
/* BUILD's state on a REDUCE, NEWOBJ or ordered DICT, else NULL. */
const lc_pickle_val *lc_pickle_state(const lc_pickle_val *v);
/* PERSID: the persistent id value. */
const lc_pickle_val *lc_pickle_persid(const lc_pickle_val *v);

#endif
