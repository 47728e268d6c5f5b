/* utf8: the few UTF-8 facts rat-py needs: where a character ends, where text
 * may be cut, and conversions between byte offsets and code-point offsets
 * (Jupyter's cursor_pos counts code points; MCP clients count characters). */
#ifndef RAT_UTF8_H
#define RAT_UTF8_H

#include <stddef.h>

/* Length (1..4) of the valid UTF-8 character at s, or 0 if the bytes at s are
 * not a valid, complete, shortest-form character. n is the bytes available. */
size_t utf8_valid_char(const char *s, size_t n);
/* Largest cut point <= n that does not split a character of s (len bytes). */
size_t utf8_floor(const char *s, size_t len, size_t n);
/* Length of the longest prefix of s[0..n) that is valid UTF-8 (n when all
 * of it is). */
size_t utf8_valid_prefix(const char *s, size_t n);
/* Length of s[0..len) without an incomplete character at its very end: what
 * to keep after a byte-wise truncation (snprintf) that may have split one. */
size_t utf8_trim_tail(const char *s, size_t len);
/* Number of code points in s[0..n). Invalid bytes count as one each. */
size_t utf8_count(const char *s, size_t n);
/* Byte offset of code point number cp in s (len bytes); len if past the end. */
size_t utf8_offset(const char *s, size_t len, size_t cp);
/* Number of UTF-16 code units for s[0..n) (JavaScript string length). */
size_t utf8_utf16_count(const char *s, size_t n);
/* Byte offset of UTF-16 unit index u in s; len if past the end. A unit index in
 * the middle of a surrogate pair rounds down to the character's start. */
size_t utf8_utf16_offset(const char *s, size_t len, size_t u);
/* Display width estimate: code points, with wide East Asian counted as 2. */
size_t utf8_width(const char *s, size_t n);

#endif
