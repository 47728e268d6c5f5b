/* wire: Jupyter message signing, verification and decoding. */
#include "wire.h"

#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sodium.h>

#include "mem.h"

void wire_auth_init(wire_auth_t *a, const char *key, size_t len)
{
    a->len = len;
    a->key = xmalloc(len ? len : 1);
    if (len)
        memcpy(a->key, key, len);
    /* Hashing the key into the inner/outer pads once saves two SHA-256
     * blocks per message. */
    crypto_auth_hmacsha256_init(&a->base, a->key, a->len);
}

void wire_auth_free(wire_auth_t *a)
{
    if (a->key) {
        sodium_memzero(a->key, a->len);
        free(a->key);
    }
    sodium_memzero(&a->base, sizeof a->base);
    a->key = NULL;
    a->len = 0;
}

void wire_sign(const wire_auth_t *a, const void *const parts[4], const size_t lens[4], char out[WIRE_SIG_HEX + 1])
{
    if (!a->len) {
        out[0] = '\0';
        return;
    }
    /* The multi-part API accepts any key length; the one-shot one needs 32. */
    crypto_auth_hmacsha256_state st = a->base;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    for (int i = 0; i < 4; i++)
        crypto_auth_hmacsha256_update(&st, parts[i], lens[i]);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_bin2hex(out, WIRE_SIG_HEX + 1, mac, sizeof mac);
}

/* ------------------------------------------------------------------ replay */

#define REPLAY_SLOTS (WIRE_REPLAY_WINDOW * 2) /* load factor <= 1/2 per generation */

struct wire_replay {
    uint64_t *gen[2];   /* owned open-addressing tables; 0 marks an empty slot */
    size_t count[2];
    int cur;
};

wire_replay_t *wire_replay_new(void)
{
    wire_replay_t *self = xcalloc(1, sizeof *self);
    return self;
}

void wire_replay_destroy(wire_replay_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->gen[0]);
    free((*self_p)->gen[1]);
    free(*self_p);
    *self_p = NULL;
}

/* Signatures are HMAC outputs, uniformly random, so their first 64 bits are a
 * perfect hash and a practically collision-free key. */
static uint64_t s_sig_key(const char *hex)
{
    unsigned char bin[8];
    size_t binlen = 0;
    if (sodium_hex2bin(bin, sizeof bin, hex, 16, NULL, &binlen, NULL) != 0 || binlen != 8)
        return 1;
    uint64_t k;
    memcpy(&k, bin, sizeof k);
    return k ? k : 1;
}

static bool s_table_has(const uint64_t *t, uint64_t k)
{
    if (!t)
        return false;
    for (size_t i = k % REPLAY_SLOTS;; i = (i + 1) % REPLAY_SLOTS) {
        if (t[i] == 0)
            return false;
        if (t[i] == k)
            return true;
    }
}

bool wire_replay_seen(wire_replay_t *self, const char *sig_hex)
{
    uint64_t k = s_sig_key(sig_hex);
    if (s_table_has(self->gen[0], k) || s_table_has(self->gen[1], k))
        return true;
    if (self->count[self->cur] >= WIRE_REPLAY_WINDOW) {
        /* Rotate: the older generation is forgotten, bounding memory. */
        self->cur ^= 1;
        if (self->gen[self->cur])
            memset(self->gen[self->cur], 0, REPLAY_SLOTS * sizeof(uint64_t));
        self->count[self->cur] = 0;
    }
    if (!self->gen[self->cur])
        self->gen[self->cur] = xcalloc(REPLAY_SLOTS, sizeof(uint64_t));
    uint64_t *t = self->gen[self->cur];
    size_t i = k % REPLAY_SLOTS;
    while (t[i] != 0)
        i = (i + 1) % REPLAY_SLOTS;
    t[i] = k;
    self->count[self->cur]++;
    return false;
}

/* ------------------------------------------------------------------ decode */

const char *wire_strerror(wire_err_t err)
{
    switch (err) {
    case WIRE_OK: return "ok";
    case WIRE_ERR_FRAMES: return "malformed message frames";
    case WIRE_ERR_UNSIGNED: return "unsigned message";
    case WIRE_ERR_SIGNATURE: return "bad signature";
    case WIRE_ERR_REPLAY: return "replayed signature";
    case WIRE_ERR_JSON: return "invalid JSON in message";
    case WIRE_ERR_SIZE: return "message frame too large";
    }
    return "unknown error";
}

static json_object *s_parse_obj(json_tokener *tok, const void *p, size_t len)
{
    json_tokener_reset(tok);
    json_object *o = json_tokener_parse_ex(tok, p, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t end = (size_t)json_tokener_get_parse_end(tok);
    if (!o || e != json_tokener_success || end != len || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

const char *wire_get_str(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

wire_err_t wire_decode(const wire_auth_t *auth, wire_replay_t *replay, const void *const frames[],
                       const size_t lens[], size_t n, wire_msg_t *out)
{
    memset(out, 0, sizeof *out);
    size_t d = 0;
    while (d < n && !(lens[d] == sizeof WIRE_DELIM - 1 && memcmp(frames[d], WIRE_DELIM, lens[d]) == 0))
        d++;
    if (d == n || n - d < 6)
        return WIRE_ERR_FRAMES;
    const char *sig = frames[d + 1];
    size_t siglen = lens[d + 1];
    const void *parts[4] = {frames[d + 2], frames[d + 3], frames[d + 4], frames[d + 5]};
    size_t plens[4] = {lens[d + 2], lens[d + 3], lens[d + 4], lens[d + 5]};
    for (int i = 0; i < 4; i++)
        if (plens[i] > WIRE_MAX_FRAME)
            return WIRE_ERR_SIZE;
    if (auth->len) {
        if (siglen == 0)
            return WIRE_ERR_UNSIGNED;
        if (siglen != WIRE_SIG_HEX)
            return WIRE_ERR_SIGNATURE;
        char want[WIRE_SIG_HEX + 1];
        wire_sign(auth, parts, plens, want);
        if (sodium_memcmp(want, sig, WIRE_SIG_HEX) != 0)
            return WIRE_ERR_SIGNATURE;
        char sigz[WIRE_SIG_HEX + 1];
        memcpy(sigz, sig, WIRE_SIG_HEX);
        sigz[WIRE_SIG_HEX] = '\0';
        if (replay && wire_replay_seen(replay, sigz))
            return WIRE_ERR_REPLAY;
    }
    /* header, parent and content (metadata is not needed, see wire.h). */
    json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    static const int which[3] = {0, 1, 3};
    json_object *objs[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        objs[i] = s_parse_obj(tok, parts[which[i]], plens[which[i]]);
        if (!objs[i]) {
            for (int j = 0; j < i; j++)
                json_object_put(objs[j]);
            json_tokener_free(tok);
            return WIRE_ERR_JSON;
        }
    }
    json_tokener_free(tok);
    out->header = objs[0];
    out->parent = objs[1];
    out->metadata = NULL;
    out->content = objs[2];
    const char *t = wire_get_str(out->header, "msg_type");
    out->msg_type = t ? t : "";
    const char *id = wire_get_str(out->header, "msg_id");
    out->msg_id = id ? id : "";
    out->parent_id = wire_get_str(out->parent, "msg_id");
    return WIRE_OK;
}

void wire_msg_free(wire_msg_t *m)
{
    json_object_put(m->header);
    json_object_put(m->parent);
    json_object_put(m->metadata);
    json_object_put(m->content);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ encode */

void wire_new_id(char out[WIRE_ID_LEN + 1])
{
    unsigned char r[WIRE_ID_LEN / 2];
    randombytes_buf(r, sizeof r);
    sodium_bin2hex(out, WIRE_ID_LEN + 1, r, sizeof r);
}

void wire_put_header(buf_t *b, const char *msg_id, const char *session, const char *msg_type)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    /* ISO 8601 UTC with zero-padded microseconds. */
    buf_printf(b,
               "{\"msg_id\":\"%s\",\"session\":\"%s\",\"username\":\"rat-py\","
               "\"date\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",\"msg_type\":",
               msg_id, session, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               (long)tv.tv_usec);
    buf_put_json_str(b, msg_type, strlen(msg_type));
    buf_puts(b, ",\"version\":\"" WIRE_PROTOCOL_VERSION "\"}");
}

void wire_out_init(wire_out_t *o)
{
    memset(o, 0, sizeof *o);
    buf_init(&o->buf, 0);
}

void wire_out_free(wire_out_t *o)
{
    buf_free(&o->buf);
}

void wire_encode(wire_out_t *o, const wire_auth_t *auth, const char *session, const char *msg_type,
                 const char *parent_json, const char *content)
{
    wire_new_id(o->msg_id);
    buf_reset(&o->buf);
    const char *texts[4] = {NULL, parent_json ? parent_json : "{}", "{}", content ? content : "{}"};
    o->off[0] = 0;
    wire_put_header(&o->buf, o->msg_id, session, msg_type);
    o->len[0] = o->buf.len;
    for (int i = 1; i < 4; i++) {
        o->off[i] = o->buf.len;
        buf_puts(&o->buf, texts[i]);
        o->len[i] = o->buf.len - o->off[i];
    }
    const void *parts[4];
    for (int i = 0; i < 4; i++)
        parts[i] = o->buf.data + o->off[i];
    wire_sign(auth, parts, o->len, o->sig);
}
