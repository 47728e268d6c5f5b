/* outitems: the outputs of one run in the order the kernel sent them, as
 * JSON items for structured results (doc/tools.md#structured-results):
 *   {type: "stream", name: "stdout"|"stderr", text}
 *   {type: "display_data"|"execute_result"|"update_display_data",
 *    data: {mime: text}, assets: [...], display_id?, execution_count?}
 *   {type: "clear_output"}
 * Consecutive stream chunks of the same name merge into one item. A
 * clear_output drops the items before it (a client that replays the list
 * shows what Jupyter would), so a loop that clears and redraws stays small.
 *
 * Bounded whatever the run prints: at most OUTITEMS_MAX items and
 * OUTITEMS_BYTES bytes of text per segment; what does not fit is counted
 * (outitems_dropped), never kept. The text result (output.h) stays the
 * reference for the complete output. */
#ifndef RAT_OUTITEMS_H
#define RAT_OUTITEMS_H

#include <stddef.h>
#include <json-c/json.h>

#define OUTITEMS_MAX 500             /* items per segment */
#define OUTITEMS_BYTES (256u << 10)  /* bytes of text per segment (the text result keeps at most ~200 KB) */
#define OUTITEMS_PART_MAX (64u << 10) /* bytes of one text part of a bundle */

typedef struct outitems outitems_t;

outitems_t *outitems_new(void);
void outitems_destroy(outitems_t **self_p);
/* A cleaned chunk of stdout (stream 0) or stderr (1). */
void outitems_stream(outitems_t *self, int stream, const char *text, size_t len);
/* A display_data / execute_result / update_display_data message: msg_type
 * and its content (borrowed); assets (consumed, may be NULL) is the array of
 * asset objects saved from it. */
/* Returns the item added (borrowed; never modified after), or NULL when
 * the bounds left it out. */
json_object *outitems_bundle(outitems_t *self, const char *msg_type, json_object *content, json_object *assets);
/* Returns the clear_output item (borrowed). */
json_object *outitems_clear(outitems_t *self);
/* A new segment: the items so far were handed out (a result returned early). */
void outitems_reset(outitems_t *self);
/* The items of this segment (a new reference). */
json_object *outitems_json(const outitems_t *self);
/* Items and stream bytes left out of this segment by the bounds. */
void outitems_dropped(const outitems_t *self, size_t *items, size_t *bytes);

#endif
