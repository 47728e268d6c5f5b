/* wire: the Jupyter message format: signing, verification, decoding and the
 * pieces of an outgoing message.
 *
 * Works on plain byte ranges, not on ZMQ frames, so the decoder can be tested
 * and fuzzed alone and reused by non-ZMQ kernel connections. The order on
 * receipt is jupyter_client's: find the delimiter, check the signature length,
 * HMAC-SHA256 over the four raw JSON frames, constant-time compare, reject
 * replays, and only then parse JSON. */
#ifndef RAT_WIRE_H
#define RAT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "buf.h"

#define WIRE_DELIM "<IDS|MSG>"
#define WIRE_SIG_HEX 64        /* hex digits of an HMAC-SHA256 signature */
#define WIRE_ID_LEN 32         /* our msg ids: 32 lowercase hex digits */
#define WIRE_MAX_FRAME (64u << 20) /* one JSON frame larger than this is rejected */
#define WIRE_PROTOCOL_VERSION "5.3"

#include <sodium.h>

/* HMAC key as given in the connection file, used as its UTF-8 bytes. */
typedef struct {
    unsigned char *key;  /* owned, wiped on free */
    size_t len;          /* 0: signing disabled (empty key) */
    crypto_auth_hmacsha256_state base; /* keyed state, copied for each message */
} wire_auth_t;

void wire_auth_init(wire_auth_t *a, const char *key, size_t len);
void wire_auth_free(wire_auth_t *a);
/* Lowercase hex HMAC-SHA256 of the four parts, NUL-terminated into out. With
 * an empty key, out is the empty string. */
void wire_sign(const wire_auth_t *a, const void *const parts[4], const size_t lens[4], char out[WIRE_SIG_HEX + 1]);

/* Remembers recent signatures to refuse replayed messages. Bounded: keeps at
 * least the last WIRE_REPLAY_WINDOW signatures and at most twice that, in at
 * most 44 KiB. The window covers the requests in flight; an older message
 * can only answer a request that is over, which rat-py ignores by its parent
 * id anyway (within one long run: 2048 messages are 100 s of output at
 * ipykernel's 50 ms flushes). It was 32768 (512 KiB of RSS after 3 000
 * runs), then 4096 (128 KiB, most of what an idle rat-py grew after 3 000
 * runs; issue 14). */
#define WIRE_REPLAY_WINDOW 2048
typedef struct wire_replay wire_replay_t;
wire_replay_t *wire_replay_new(void);
void wire_replay_destroy(wire_replay_t **self_p);
/* Returns true if sig was seen recently; otherwise records it, returns false. */
bool wire_replay_seen(wire_replay_t *self, const char *sig_hex);

/* A received message. All fields owned by the struct (wire_msg_free).
 * The metadata frame is verified (it is signed) but not parsed: nothing in
 * rat-py reads it, and parsing costs a quarter of the decode.
 *
 * A stream message's text is not copied into a JSON tree: a flood makes
 * messages of many megabytes, and a tree would hold each one three times
 * (json-c's token buffer, the string, our copy). When its content is an
 * object of string members (what every kernel sends), wire_decode checks it
 * whole (strict JSON, valid UTF-8) and leaves the text in the received frame;
 * content then holds "name" alone, and wire_stream_next decodes the text in
 * pieces. Other shapes are parsed by json-c as before. Either way, read the
 * text of a stream message with wire_stream_next only. */
#define WIRE_FIELD_MAX 127 /* longest header string wire_decode copies out (bytes) */
typedef struct {
    /* header: NULL when wire_decode read it without a tree (an object of
     * plain strings, what kernels send): then use the fields below, or
     * wire_msg_header for the object. parent: likewise NULL then, its
     * msg_id alone being kept. metadata: always NULL. Each message costs
     * json-c 3 to 4 times less that way (issue 14: json-c was a third of
     * rat-py's instructions per run). */
    json_object *header, *parent, *metadata, *content;
    const char *msg_type;   /* from header; "" when absent */
    const char *msg_id;     /* from header; "" when absent */
    const char *session;    /* from header; NULL when absent */
    const char *parent_id;  /* from parent; NULL when absent */
    const char *topic;      /* borrowed frame text before the delimiter, or NULL (iopub) */
    /* Stream text still JSON-escaped, borrowed from the decoded frame (so the
     * message must not outlive its frames: it lives for one on_msg call), or
     * NULL; read through wire_stream_next. */
    const char *stream_raw;
    size_t stream_len, stream_pos;
    char *stream_piece;     /* owned scratch for one decoded piece */
    bool stream_given;      /* the json-c path's text was handed out */
    const char *header_raw; /* the header frame, borrowed like stream_raw, when header is NULL */
    size_t header_len;
    /* Where the fields above point when read without a tree (never copy a
     * wire_msg_t by value). */
    char f_type[WIRE_FIELD_MAX + 1], f_id[WIRE_FIELD_MAX + 1], f_session[WIRE_FIELD_MAX + 1],
        f_parent_id[WIRE_FIELD_MAX + 1];
} wire_msg_t;

/* Largest piece wire_stream_next returns (bytes). */
#define WIRE_STREAM_PIECE (64u << 10)
/* The next piece of a stream message's "text": at most WIRE_STREAM_PIECE
 * bytes (when the text was left in the frame; one piece otherwise), never
 * cutting a UTF-8 character. Returns false when nothing is left, or for a
 * message without a string "text". *text stays valid until the next call or
 * wire_msg_free. */
bool wire_stream_next(wire_msg_t *m, const char **text, size_t *len);

typedef enum {
    WIRE_OK = 0,
    WIRE_ERR_FRAMES,     /* no delimiter, or too few frames */
    WIRE_ERR_UNSIGNED,   /* empty signature while signing is on */
    WIRE_ERR_SIGNATURE,  /* wrong length or mismatch */
    WIRE_ERR_REPLAY,     /* signature seen before */
    WIRE_ERR_JSON,       /* a frame is not a JSON object */
    WIRE_ERR_SIZE,       /* a frame exceeds WIRE_MAX_FRAME */
} wire_err_t;

const char *wire_strerror(wire_err_t err);

/* Decodes frames[0..n) (each a byte range). replay may be NULL. On success
 * fills *out; on failure *out is zeroed. */
wire_err_t wire_decode(const wire_auth_t *auth, wire_replay_t *replay, const void *const frames[],
                       const size_t lens[], size_t n, wire_msg_t *out);
void wire_msg_free(wire_msg_t *m);
/* The message's header as an object (owned by m), parsed from its frame on
 * first use when wire_decode read it without a tree; call it while the
 * message's frames live (its on_msg call). NULL only for a zeroed m. */
json_object *wire_msg_header(wire_msg_t *m);
/* Fills *out from a message that arrived whole as JSON (a Jupyter Server's
 * WebSocket: {header, parent_header, metadata, content, ...}), taking
 * references to its parts; msg stays the caller's. The same checks as
 * wire_decode's after the signature: header, parent_header and content must
 * be objects. On failure *out is zeroed. */
wire_err_t wire_from_json(json_object *msg, wire_msg_t *out);
/* The same from the message's JSON text (one WebSocket frame, untrusted).
 * Accepts exactly what parsing the whole text with json-c (STRICT,
 * VALIDATE_UTF8, its default depth; whitespace only around the object) and
 * then wire_from_json would; more than WIRE_MAX_FRAME bytes is
 * WIRE_ERR_SIZE. A stream message's "text", once checked (strict escapes,
 * valid UTF-8), is left in text as wire_decode leaves it in its frame: text
 * must outlive the message; read it with wire_stream_next. So a flood's
 * megabytes are not copied into json-c. Its "channel" string, when shorter
 * than WIRE_CHANNEL_MAX, is copied to channel ("" otherwise, and on
 * failure, when *out is zeroed). */
#define WIRE_CHANNEL_MAX 16
wire_err_t wire_from_json_text(const char *text, size_t len, char channel[WIRE_CHANNEL_MAX], wire_msg_t *out);

/* An outgoing message: the four signed JSON parts live in one buffer. */
typedef struct {
    buf_t buf;                        /* header | parent | metadata | content */
    size_t off[4], len[4];            /* where each part is in buf */
    char sig[WIRE_SIG_HEX + 1];       /* signature frame ("" when unsigned) */
    char msg_id[WIRE_ID_LEN + 1];
} wire_out_t;

void wire_out_init(wire_out_t *o);
void wire_out_free(wire_out_t *o);
/* Builds and signs a message: a fresh msg id, our header, parent (JSON text
 * of the header being answered, or NULL for {}), empty metadata, content
 * (JSON text, or NULL for {}). Reuses o's buffer. */
void wire_encode(wire_out_t *o, const wire_auth_t *auth, const char *session, const char *msg_type,
                 const char *parent_json, const char *content);
static inline const char *wire_out_part(const wire_out_t *o, int i)
{
    return o->buf.data + o->off[i];
}

/* Fresh random message id (32 hex digits). */
void wire_new_id(char out[WIRE_ID_LEN + 1]);
/* Appends a header object as JSON text. */
void wire_put_header(buf_t *b, const char *msg_id, const char *session, const char *msg_type);
/* Convenience: the string member `key` of obj, or NULL. */
const char *wire_get_str(json_object *obj, const char *key);

#endif
