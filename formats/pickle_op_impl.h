/* formats/pickle_op_impl.h: pickle_op.c, private to formats/pickle (not installed).
 *
 * What the pickle loader (pickle.c) and scanner (pickle_scan.c) share, so that both
 * decode every opcode and argument the same way: one reader for opcodes, one set of
 * text decoders, one arena, one allowlist. pickle_op.c sits below both and includes
 * neither's header: the limits it enforces while decoding are its own, here. */
#ifndef LC_FORMATS_PICKLE_OP_IMPL_H
#define LC_FORMATS_PICKLE_OP_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/rd.h"

/* Limits checked while decoding an argument (LC_E_OVERFLOW). pickle.h publishes the
 * same numbers as LC_PICKLE_MAX_MEMO / LC_PICKLE_MAX_DIGITS (pickle.c checks they agree). */
#define LC_PICKLE_OP_MAX_MEMO   (1u << 22) /* highest memo index + 1 */
#define LC_PICKLE_OP_MAX_DIGITS 4300u      /* decimal digits of a protocol-0 int, as CPython */

/* Opcodes, named as in CPython's pickletools. */
enum {
    OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2',
    OP_FLOAT = 'F', OP_INT = 'I', OP_BININT = 'J', OP_BININT1 = 'K', OP_LONG = 'L',
    OP_BININT2 = 'M', OP_NONE = 'N', OP_PERSID = 'P', OP_BINPERSID = 'Q', OP_REDUCE = 'R',
    OP_STRING = 'S', OP_BINSTRING = 'T', OP_SHORT_BINSTRING = 'U', OP_UNICODE = 'V',
    OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b', OP_GLOBAL = 'c', OP_DICT = 'd',
    OP_EMPTY_DICT = '}', OP_APPENDS = 'e', OP_GET = 'g', OP_BINGET = 'h', OP_INST = 'i',
    OP_LONG_BINGET = 'j', OP_LIST = 'l', OP_EMPTY_LIST = ']', OP_OBJ = 'o', OP_PUT = 'p',
    OP_BINPUT = 'q', OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't',
    OP_EMPTY_TUPLE = ')', OP_SETITEMS = 'u', OP_BINFLOAT = 'G',
    OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83, OP_EXT4 = 0x84,
    OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
    OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C',
    OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e,
    OP_EMPTY_SET = 0x8f, OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91, OP_NEWOBJ_EX = 0x92,
    OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
    OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97, OP_READONLY_BUFFER = 0x98,
};

/* One decoded opcode. Which fields are set depends on the opcode:
 *   n_int   BININT*, INT, PROTO, EXT*, memo indices (GET/PUT forms), LONG* when it fits
 *   p/n     the raw argument: string and bytes payloads, LONG1/LONG4 bytes, text lines
 *   p2/n2   GLOBAL and INST: the second line (name); p/n is the module
 *   f       BINFLOAT and FLOAT */
typedef struct lc_pickle_op {
    uint8_t        code;
    uint64_t       at;     /* file offset of the opcode byte */
    int64_t        n_int;
    const uint8_t *p, *p2;
    uint64_t       n, n2;
    double         f;
    bool           big;    /* INT/LONG text that does not fit in int64 */
} lc_pickle_op;

/* Reads one opcode and its argument from r, checking every length against the bytes
 * left. Text arguments are checked for shape (digits, quotes) but not decoded. Codes:
 * LC_E_TRUNCATED, LC_E_MALFORMED (unknown opcode, bad text), LC_E_OVERFLOW (memo index,
 * protocol-0 int digits), LC_E_UNSUPPORTED (protocol > 5, NEXT_BUFFER, READONLY_BUFFER). */
lc_code lc_pickle_op_read(lc_rd *r, lc_pickle_op *op, lc_error *err);

/* A bump arena: blocks freed all at once. Allocations are 8-byte aligned and zeroed. */
typedef struct lc_pickle_op_arena {
    struct arena_block *head;
    uint64_t total, limit;
} lc_pickle_op_arena;
void *lc_pickle_op_alloc(lc_pickle_op_arena *a, uint64_t n);
void  lc_pickle_op_arena_free(lc_pickle_op_arena *a);

/* The text of a string-valued opcode (STRING forms, UNICODE forms, PERSID) decoded to
 * NUL-terminated UTF-8 in the arena. LC_E_MALFORMED for invalid UTF-8 or escapes,
 * LC_E_UNSUPPORTED for lone surrogates, LC_E_NOMEM/OVERFLOW from the arena. */
lc_code lc_pickle_op_text(lc_pickle_op_arena *a, const lc_pickle_op *op, char **s,
                          uint64_t *len, lc_error *err);

/* A GLOBAL/INST line (module or name) copied NUL-terminated into the arena.
 * LC_E_MALFORMED when it is empty, holds a NUL or is not UTF-8. */
lc_code lc_pickle_op_name(lc_pickle_op_arena *a, const lc_pickle_op *op, const uint8_t *p,
                          uint64_t n, char **s, lc_error *err);

/* Allowlist lookup; module "__builtin__" is read as "builtins", "copy_reg" as
 * "copyreg" (what CPython's loader does for protocol < 3). */
bool lc_pickle_op_allowed(const char *module, const char *name);
/* The allowlist's own {module, name} strings (static) for module.name, or NULL. */
const char *const *lc_pickle_op_allowed_entry(const char *module, const char *name);
/* The canonical spelling of a module name (the two aliases above). */
const char *lc_pickle_op_module(const char *module);
/* True when the n bytes at s are valid UTF-8 with no surrogates. */
bool lc_pickle_op_utf8(const uint8_t *s, uint64_t n);

#endif
