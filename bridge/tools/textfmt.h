/* textfmt: the small formatting rules of rat-py's result texts.
 *   durations: "3ms" below one second, "1.2s" below a minute, "2m 5s" above
 *   footer:    "✓ 3ms | 1 var", "✗ 1.2s | 3 vars | 2 assets" (no var part
 *              when the count is 0 or unknown, no asset part when 0) */
#ifndef RAT_TEXTFMT_H
#define RAT_TEXTFMT_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

void textfmt_duration(char *out, size_t outlen, int64_t ms);
/* "N word" or "N words". */
void textfmt_count(buf_t *b, long n, const char *singular, const char *plural);
/* Appends the footer; vars < 0 means unknown. */
void textfmt_footer(buf_t *b, bool ok, int64_t ms, long vars, long assets);
/* A completion's signature the way Python's inspect.signature prints it:
 * Jedi's "(x: SupportsFloat, /) -> float" for label "sqrt" becomes
 * "sqrt(x, /)" (annotations and the return type dropped, defaults kept).
 * Appends nothing for an empty signature. */
void textfmt_signature(buf_t *b, const char *label, const char *sig);
/* Appends s padded with spaces to `width` display columns. */
void textfmt_pad(buf_t *b, const char *s, size_t width);

#endif
