/* lookpath: parses look's `at` paths into segments.
 *
 * Syntax (documented in doc/tools.md):
 *   name             a variable, a builtin, or an imported module
 *   .name            attribute, dict key, or (when an integer) index
 *   .'two words'     a dict key with any characters ("..." works too;
 *                    \\ and \' escape inside quotes)
 *   [0] [-1]         an index
 *   ['key'] ["key"]  a dict key
 * e.g. data.scores.0, data['two words'], model.layers[0].type.
 * The result is a JSON array of {"t": "name"|"key"|"index", "v": ...},
 * which the kernel-side helper resolves. Untrusted input: bounded length and
 * segment count, every error is a message. */
#ifndef RAT_LOOKPATH_H
#define RAT_LOOKPATH_H

#include <stddef.h>

#define LOOKPATH_MAX_LEN 4096
#define LOOKPATH_MAX_SEGMENTS 64

/* Returns the JSON text (caller owns it), or NULL with err filled. */
char *lookpath_parse(const char *path, char *err, size_t errlen);

#endif
