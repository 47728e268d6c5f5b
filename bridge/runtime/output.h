/* output: the text of one execution, cleaned and bounded.
 *
 * Raw kernel text goes in; ANSI escape sequences are removed, a carriage
 * return folds a progress-bar line to its last frame (tqdm), other control
 * characters are dropped. What is kept in memory is bounded no matter how much
 * comes in: the first and last OUTPUT_KEEP_LINES lines, each cut at
 * OUTPUT_LINE_MAX bytes (on a UTF-8 boundary). As soon as anything is cut, the
 * complete cleaned text is written to a spill file (itself capped at
 * OUTPUT_SPILL_MAX bytes) whose path the rendered text names. When that file
 * cannot be written (no such dir, disk full), the partial file is removed and
 * the rendered text says why instead. */
#ifndef RAT_OUTPUT_H
#define RAT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define OUTPUT_KEEP_LINES 50          /* lines kept at each end */
#define OUTPUT_LINE_MAX 2000          /* bytes kept of one line */
#define OUTPUT_SPILL_MAX (64L << 20)  /* bytes of the full-output file */

typedef struct output output_t;

/* spill_dir: where the full-output file goes when something is cut (created
 * on demand); NULL disables spilling. */
output_t *output_new(const char *spill_dir);
void output_destroy(output_t **self_p);
/* Appends raw text. When clean is not NULL, the cleaned form of this chunk
 * (ANSI removed; \r and \n kept) is appended to it, for streaming. */
void output_write(output_t *self, const char *text, size_t len, buf_t *clean);
/* Appends a block that should stand on its own lines (an expression value,
 * an error): starts a new line first if the current one is not empty. */
void output_write_block(output_t *self, const char *text, size_t len);
/* clear_output: forget everything so far (the spill file is closed). */
void output_clear(output_t *self);
/* Appends the kept text to dst: all lines, or head + "… [N lines truncated] …"
 * + tail, then "[full output: PATH]" when something was cut, or "[full output
 * not saved: REASON]" when it could not be written. No trailing newline. */
void output_render(output_t *self, buf_t *dst);
/* output_render for a reader that shows only its first max_lines lines
 * (vscode-rat): when the text would be longer, fewer head and tail lines are
 * shown (half at each end, the head one more when odd) so that the whole
 * text, marker and full-output line included, has at most max_lines lines
 * and that line is seen. The full-output file is started if it was not yet
 * (everything was still in memory). max_lines 0: no limit (output_render). */
void output_render_max(output_t *self, buf_t *dst, size_t max_lines);
/* Starts a new segment: what was rendered so far is forgotten (ctl wait
 * continues from here). */
void output_reset(output_t *self);
bool output_empty(const output_t *self);
/* Total lines seen in this segment (the partial last line counts). */
size_t output_line_count(const output_t *self);
/* Path of the spill file, or NULL when nothing was cut. */
const char *output_spill_path(const output_t *self);
/* Whether anything was cut in this segment (lines dropped or cut). */
bool output_truncated(const output_t *self);
/* Why the full-output file could not be written (when something was cut),
 * or NULL. */
const char *output_spill_error(const output_t *self);
/* Stateless cleaner for short texts (tracebacks, inspect replies): removes
 * ANSI sequences and applies \r folding; a line longer than OUTPUT_LINE_MAX
 * is cut as output_render cuts it, with " … [N bytes cut]". Appends to dst. */
void output_clean_text(const char *text, size_t len, buf_t *dst);

#endif
