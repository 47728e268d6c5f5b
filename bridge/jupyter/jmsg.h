/* jmsg: the content of every request rat-py sends a kernel, and the parsed
 * replies the layers above need, written in one place.
 *
 * Requests with an empty content (kernel_info_request, interrupt_request)
 * are sent with content NULL ({}); the builders below append JSON text to a
 * buffer, which the caller passes to kernel_send as the content. Parsers
 * borrow from the reply's content: what they return lives as long as it. */
#ifndef RAT_JMSG_H
#define RAT_JMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "buf.h"

/* execute_request. user_expressions is {"rat": rat_expr} when rat_expr is
 * set, {} otherwise; stop_on_error is always false (a failed run must not
 * abort what the queue sends next). */
typedef struct {
    const char *code;
    size_t code_len;      /* 0: strlen(code) */
    const char *rat_expr; /* NULL: no user expression */
    bool silent, store_history, allow_stdin;
} jmsg_execute_t;
void jmsg_execute_request(buf_t *out, const jmsg_execute_t *e);
/* input_reply answering an input_request. */
void jmsg_input_reply(buf_t *out, const char *value);
/* complete_request and inspect_request (detail_level 0); cursor_pos counts
 * Unicode code points, as Jupyter does. */
void jmsg_complete_request(buf_t *out, const char *code, size_t cursor_pos);
void jmsg_inspect_request(buf_t *out, const char *code, size_t cursor_pos);
/* shutdown_request's content (a constant string). */
const char *jmsg_shutdown_request(bool restart);

/* One completion of a complete_reply: from the typed list
 * (metadata._jupyter_types_experimental: label, kind, signature) when the
 * kernel gives one, from the plain matches (label only) otherwise. */
typedef struct {
    const char *label;     /* NULL when missing */
    const char *kind;      /* NULL when unknown */
    const char *signature; /* the kernel's signature text, or NULL */
} jmsg_completion_t;
typedef struct {
    jmsg_completion_t *items; /* owned array (jmsg_complete_reply_free); strings borrowed */
    size_t n;
    long cursor_start, cursor_end; /* -1 when the kernel did not say */
} jmsg_complete_reply_t;
void jmsg_complete_reply_parse(json_object *content, jmsg_complete_reply_t *out);
void jmsg_complete_reply_free(jmsg_complete_reply_t *r);
/* inspect_reply: the text/plain of a found object (borrowed; its length in
 * *len), or NULL when nothing was found. */
const char *jmsg_inspect_reply_text(json_object *content, size_t *len);

#endif
