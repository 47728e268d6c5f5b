/* nbjson: the file API's JSON, in memory bounded by the text's size.
 *
 * A notebook save used to parse the body into a json-c tree and re-indent
 * the tree: a json-c value costs 50-300 bytes whatever its text, so 16 MB of
 * small or deeply nested values peaked at 2 GB and blocked the loop for
 * seconds, and a GET parsed a 32 MiB notebook into a tree only to check it.
 * Here a strict scanner validates the text with no allocation
 * (nbjson_validate) or, in a second pass of the same code, records where
 * each value starts and where its subtree ends: 8 bytes per value, and a
 * value takes at least 2 bytes of text with its separator, so the tape is at
 * most 4 bytes per byte of text. The writer walks the tape.
 *
 * Strict as jsontok's json-c settings: RFC 8259 grammar only, valid UTF-8,
 * no control characters in strings, nothing but whitespace after the value,
 * and at most NBJSON_DEPTH levels of nesting (a notebook is about 8 deep; a
 * widget state or JSON output inside it rarely passes 20). */
#ifndef RAT_NBJSON_H
#define RAT_NBJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define NBJSON_DEPTH 64

typedef enum {
    NBJSON_OBJECT,
    NBJSON_ARRAY,
    NBJSON_STRING,
    NBJSON_NUMBER, /* an integer: no fraction, no exponent */
    NBJSON_REAL,   /* a number with a fraction or an exponent */
    NBJSON_LITERAL /* true, false, null */
} nbjson_type_t;

typedef struct nbjson nbjson_t;

/* Whether text (len bytes, at most 4 GiB) is one strict JSON value; *type
 * (may be NULL) gets its type. false with why ("... at byte N") otherwise.
 * Allocates nothing. */
bool nbjson_validate(const char *text, size_t len, nbjson_type_t *type, char *why, size_t whylen);

/* Validates text and builds its tape. text is borrowed: it must outlive the
 * result. NULL with why when it is not valid. */
nbjson_t *nbjson_parse(const char *text, size_t len, char *why, size_t whylen);
void nbjson_free(nbjson_t **self_p);

/* Values are numbered from 0, the root, in document order. */
nbjson_type_t nbjson_type(const nbjson_t *self, uint32_t v);
/* The value of object v's member key (the last one if the key repeats), or
 * -1 when v is not an object or has no such member. */
int64_t nbjson_member(const nbjson_t *self, uint32_t v, const char *key);
/* String v decoded (escapes resolved, may hold NULs): appended to b.
 * -1 when b's max would be passed. */
int nbjson_string(const nbjson_t *self, uint32_t v, buf_t *b);

/* Appends value v as nbformat writes a notebook: Python's
 * json.dumps(v, sort_keys=True, indent=1, ensure_ascii=False) (a repeated
 * key keeps its last value, as there). Numbers are written as they came
 * (-0 as 0, as json-c did). -1 when b's max would be passed (b is then
 * partly written). */
int nbjson_write_nb(const nbjson_t *self, uint32_t v, buf_t *b);

#endif
