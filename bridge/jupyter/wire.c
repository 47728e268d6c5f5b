/* wire: Jupyter message signing, verification and decoding. */
#include "wire.h"

#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sodium.h>

#include "jsontok.h"
#include "mem.h"
#include "utf8.h"

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

/* Load factor <= 3/4 per generation: linear probing stays short (~2.5
 * probes for a hit, ~8.5 for a miss at the fullest), and the two tables
 * are 43 KiB instead of 64 at 1/2 (issue 14: they are fully resident after
 * a few thousand messages). */
#define REPLAY_SLOTS (WIRE_REPLAY_WINDOW * 4 / 3 + 1)

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

/* A tokener taken on first use (see jsontok.h): a message read without
 * trees needs none. longest: the longest input it parsed, for s_tok_give. */
typedef struct {
    json_tokener *tok;
    int depth;
    size_t longest;
} s_tok_t;

#define S_TOK(d) ((s_tok_t){.depth = (d)})

/* Parses p..p+len as exactly one JSON object, or returns NULL. */
static json_object *s_parse_obj(s_tok_t *t, const void *p, size_t len)
{
    if (!t->tok)
        t->tok = jsontok_take(t->depth);
    if (len > t->longest)
        t->longest = len;
    json_tokener_reset(t->tok);
    json_object *o = json_tokener_parse_ex(t->tok, p, (int)len);
    enum json_tokener_error e = json_tokener_get_error(t->tok);
    size_t end = (size_t)json_tokener_get_parse_end(t->tok);
    if (!o || e != json_tokener_success || end != len || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static void s_tok_give(s_tok_t *t)
{
    jsontok_give(&t->tok, t->depth, t->longest);
}

const char *wire_get_str(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

/* msg_type, msg_id and session from a header object (json-c's path). */
static void s_header_fields(wire_msg_t *out, json_object *h)
{
    const char *t = wire_get_str(h, "msg_type"), *id = wire_get_str(h, "msg_id");
    out->msg_type = t ? t : "";
    out->msg_id = id ? id : "";
    out->session = wire_get_str(h, "session");
}

/* ------------------------------------------------------ lazy stream text */

static bool s_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int s_hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Checks the JSON string body starting at p (after its opening quote):
 * strict escapes, no raw control characters, valid UTF-8. Returns the
 * closing quote, or NULL when the string is not valid JSON. */
static const char *s_scan_str(const char *p, const char *end)
{
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c < 0x20)
            return NULL;
        if (c == '\\') {
            if (end - p < 2)
                return NULL;
            char e = p[1];
            if (e == 'u') {
                if (end - p < 6 || s_hex4(p + 2) < 0)
                    return NULL;
                p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p += 2;
            } else {
                return NULL;
            }
        } else if (c < 0x80) {
            p++;
        } else {
            size_t n = utf8_valid_char(p, (size_t)(end - p));
            if (!n)
                return NULL;
            p += n;
        }
    }
    return NULL;
}

static size_t s_put_cp(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the already-checked string body [*pp, end) into out (room cap >=
 * 8), stopping before a character that would not fit; advances *pp. Returns
 * the bytes written. Surrogates decode as json-c decodes them: a pair to its
 * character, a lone one to U+FFFD. */
static size_t s_unescape(const char **pp, const char *end, char *out, size_t cap)
{
    const char *p = *pp;
    size_t o = 0;
    while (p < end && o + 8 <= cap) {
        if (*p != '\\') {
            const char *bs = memchr(p, '\\', (size_t)(end - p));
            size_t run = (size_t)((bs ? bs : end) - p);
            if (run > cap - o)
                run = utf8_floor(p, (size_t)(end - p), cap - o);
            if (run == 0)
                break;
            memcpy(out + o, p, run);
            o += run;
            p += run;
            continue;
        }
        char e = p[1];
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            out[o++] = to[strchr(from, e) - from];
            p += 2;
            continue;
        }
        unsigned cp = (unsigned)s_hex4(p + 2);
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = (end - p >= 6 && p[0] == '\\' && p[1] == 'u') ? s_hex4(p + 2) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
                p += 6;
            } else {
                cp = 0xFFFD;
            }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        o += s_put_cp(out + o, cp);
    }
    *pp = p;
    return o;
}

#define STREAM_NAME_MAX 64 /* raw bytes of a "name" value we decode here */

/* A member asked of s_str_object: its key (plain, unescaped) in; the raw
 * body of its string value (between the quotes, still escaped) out, NULL
 * when absent. */
typedef struct {
    const char *key;
    size_t klen;
    const char *v;
    size_t vlen;
} s_want_t;

/* Whether p..p+len is exactly one JSON object whose members are all
 * strings, strictly valid (s_scan_str: escapes, no raw control characters,
 * valid UTF-8), with no key spelled with an escape and nothing after the
 * closing brace (not even whitespace). Finds the members asked for; of a
 * repeated key the last counts, as in json-c. Anything else returns false,
 * and the caller gives the text to json-c: this never accepts what json-c
 * would refuse, only less. */
static bool s_str_object(const char *p, size_t len, s_want_t *want, size_t nwant)
{
    const char *end = p + len;
    for (size_t i = 0; i < nwant; i++)
        want[i].v = NULL;
    while (p < end && s_is_ws(*p))
        p++;
    if (p == end || *p++ != '{')
        return false;
    bool first = true;
    for (;;) {
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end)
            return false;
        if (*p == '}' && first) {
            p++;
            break;
        }
        if (*p != '"')
            return false;
        const char *k = p + 1, *ke = s_scan_str(k, end);
        if (!ke || memchr(k, '\\', (size_t)(ke - k)))
            return false;
        p = ke + 1;
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end || *p++ != ':')
            return false;
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end || *p != '"')
            return false;
        const char *v = p + 1, *ve = s_scan_str(v, end);
        if (!ve)
            return false;
        p = ve + 1;
        for (size_t i = 0; i < nwant; i++) {
            if ((size_t)(ke - k) == want[i].klen && memcmp(k, want[i].key, want[i].klen) == 0) {
                want[i].v = v;
                want[i].vlen = (size_t)(ve - v);
            }
        }
        first = false;
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end)
            return false;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p++ != '}')
            return false;
        break;
    }
    return p == end;
}

/* A stream message's content, when it is an object of strings with a
 * "text" (s_str_object): sets out->content to {"name": …} (when there is a
 * name) and out->stream_raw to the text's raw body, and returns true.
 * Anything else (other member types, a long name, invalid JSON) returns
 * false and changes nothing: json-c then decides. */
static bool s_lazy_stream(const char *p, size_t len, wire_msg_t *out)
{
    s_want_t w[2] = {{"text", 4, NULL, 0}, {"name", 4, NULL, 0}};
    if (!s_str_object(p, len, w, 2) || !w[0].v || w[1].vlen > STREAM_NAME_MAX)
        return false;
    json_object *c = json_object_new_object();
    if (w[1].v) {
        char nb[STREAM_NAME_MAX + 8];
        const char *np = w[1].v;
        size_t n = s_unescape(&np, w[1].v + w[1].vlen, nb, sizeof nb);
        json_object_object_add(c, "name", json_object_new_string_len(nb, (int)n));
    }
    out->content = c;
    out->stream_raw = w[0].v;
    out->stream_len = w[0].vlen;
    out->stream_pos = 0;
    return true;
}

/* Copies a raw string body into dst when it needs no unescaping and fits:
 * it is then what json-c would decode, byte for byte. */
static bool s_field(const s_want_t *w, char dst[WIRE_FIELD_MAX + 1])
{
    if (w->vlen > WIRE_FIELD_MAX || memchr(w->v, '\\', w->vlen))
        return false;
    memcpy(dst, w->v, w->vlen);
    dst[w->vlen] = '\0';
    return true;
}

/* The header without a tree: an object of strings (s_str_object) whose
 * msg_type, msg_id and session, where present, are plain and short. Fills
 * those fields and keeps the frame for wire_msg_header; false changes
 * nothing that json-c's path does not set again. */
static bool s_lazy_header(const char *p, size_t len, wire_msg_t *out)
{
    s_want_t w[3] = {{"msg_type", 8, NULL, 0}, {"msg_id", 6, NULL, 0}, {"session", 7, NULL, 0}};
    char *dst[3] = {out->f_type, out->f_id, out->f_session};
    if (!s_str_object(p, len, w, 3))
        return false;
    for (int i = 0; i < 3; i++)
        if (w[i].v && !s_field(&w[i], dst[i]))
            return false;
    out->msg_type = w[0].v ? out->f_type : "";
    out->msg_id = w[1].v ? out->f_id : "";
    out->session = w[2].v ? out->f_session : NULL;
    out->header_raw = p;
    out->header_len = len;
    return true;
}

/* The parent header without a tree: only its msg_id is ever read. */
static bool s_lazy_parent(const char *p, size_t len, wire_msg_t *out)
{
    s_want_t w = {"msg_id", 6, NULL, 0};
    if (!s_str_object(p, len, &w, 1) || (w.v && !s_field(&w, out->f_parent_id)))
        return false;
    out->parent_id = w.v ? out->f_parent_id : NULL;
    return true;
}

bool wire_stream_next(wire_msg_t *m, const char **text, size_t *len)
{
    if (!m->stream_raw) {
        json_object *t = NULL;
        if (m->stream_given || !json_object_object_get_ex(m->content, "text", &t) ||
            !json_object_is_type(t, json_type_string))
            return false;
        m->stream_given = true;
        *text = json_object_get_string(t);
        *len = (size_t)json_object_get_string_len(t);
        return true;
    }
    if (m->stream_pos >= m->stream_len)
        return false;
    size_t cap = m->stream_len - m->stream_pos + 8;
    if (cap > WIRE_STREAM_PIECE)
        cap = WIRE_STREAM_PIECE;
    if (!m->stream_piece)
        m->stream_piece = xmalloc(cap);
    const char *p = m->stream_raw + m->stream_pos;
    size_t n = s_unescape(&p, m->stream_raw + m->stream_len, m->stream_piece, cap);
    m->stream_pos = (size_t)(p - m->stream_raw);
    *text = m->stream_piece;
    *len = n;
    return true;
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
    /* header, parent and content (metadata is not needed, see wire.h):
     * header and parent without a tree when they are objects of plain
     * strings, as every kernel sends them. */
    s_tok_t tok = S_TOK(JSON_TOKENER_DEFAULT_DEPTH);
    json_object *h = NULL, *par = NULL, *c = NULL;
    if (!s_lazy_header(parts[0], plens[0], out)) {
        if (!(h = s_parse_obj(&tok, parts[0], plens[0])))
            goto bad;
        s_header_fields(out, h);
    }
    if (!s_lazy_parent(parts[1], plens[1], out)) {
        if (!(par = s_parse_obj(&tok, parts[1], plens[1])))
            goto bad;
        out->parent_id = wire_get_str(par, "msg_id");
    }
    if (strcmp(out->msg_type, "stream") == 0 && s_lazy_stream(parts[3], plens[3], out))
        c = out->content;
    else if (!(c = s_parse_obj(&tok, parts[3], plens[3])))
        goto bad;
    s_tok_give(&tok);
    out->header = h;
    out->parent = par;
    out->metadata = NULL;
    out->content = c;
    return WIRE_OK;
bad:
    s_tok_give(&tok);
    json_object_put(h);
    json_object_put(par);
    memset(out, 0, sizeof *out);
    return WIRE_ERR_JSON;
}

json_object *wire_msg_header(wire_msg_t *m)
{
    if (!m->header && m->header_raw) {
        s_tok_t tok = S_TOK(JSON_TOKENER_DEFAULT_DEPTH);
        m->header = s_parse_obj(&tok, m->header_raw, m->header_len); /* checked by s_lazy_header */
        s_tok_give(&tok);
    }
    return m->header;
}

void wire_msg_free(wire_msg_t *m)
{
    json_object_put(m->header);
    json_object_put(m->parent);
    json_object_put(m->metadata);
    json_object_put(m->content);
    free(m->stream_piece);
    memset(m, 0, sizeof *m);
}

wire_err_t wire_from_json(json_object *msg, wire_msg_t *out)
{
    memset(out, 0, sizeof *out);
    json_object *h = NULL, *p = NULL, *c = NULL;
    if (!json_object_is_type(msg, json_type_object) || !json_object_object_get_ex(msg, "header", &h) ||
        !json_object_is_type(h, json_type_object) || !json_object_object_get_ex(msg, "parent_header", &p) ||
        !json_object_is_type(p, json_type_object) || !json_object_object_get_ex(msg, "content", &c) ||
        !json_object_is_type(c, json_type_object))
        return WIRE_ERR_JSON;
    out->header = json_object_get(h);
    out->parent = json_object_get(p);
    out->content = json_object_get(c);
    s_header_fields(out, h);
    out->parent_id = wire_get_str(p, "msg_id");
    return WIRE_OK;
}

/* The end of the JSON value at p, or NULL: strings as s_scan_str checks
 * them, objects and arrays by depth (skipping their strings), scalars up to
 * a delimiter. It only finds the extent; json-c or s_lazy_stream then
 * checks the value itself. */
static const char *s_skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"') {
        const char *e = s_scan_str(p + 1, end);
        return e ? e + 1 : NULL;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                const char *e = s_scan_str(p + 1, end);
                if (!e)
                    return NULL;
                p = e + 1;
                continue;
            }
            if (c == '{' || c == '[') {
                if (++depth > JSON_TOKENER_DEFAULT_DEPTH)
                    return NULL;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (p < end && !s_is_ws(*p) && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

/* Where the top-level "content" value is in text, when text is one object
 * with exactly one such member; false otherwise (the caller then parses
 * the whole text). */
static bool s_find_content(const char *text, size_t len, const char **cs, const char **ce)
{
    const char *p = text, *end = text + len;
    *cs = *ce = NULL;
    while (p < end && s_is_ws(*p))
        p++;
    if (p == end || *p++ != '{')
        return false;
    for (bool first = true;; first = false) {
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end)
            return false;
        if (*p == '}' && first)
            return false;
        if (*p != '"')
            return false;
        const char *k = p + 1, *ke = s_scan_str(k, end);
        /* An escaped key might spell "content" too: json-c decides. */
        if (!ke || memchr(k, '\\', (size_t)(ke - k)))
            return false;
        p = ke + 1;
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end || *p++ != ':')
            return false;
        while (p < end && s_is_ws(*p))
            p++;
        const char *v = p, *ve = s_skip_value(p, end);
        if (!ve || ve == v)
            return false;
        if (ke - k == 7 && memcmp(k, "content", 7) == 0) {
            if (*cs)
                return false; /* repeated: json-c's rule (the last wins) applies */
            *cs = v;
            *ce = ve;
        }
        p = ve;
        while (p < end && s_is_ws(*p))
            p++;
        if (p == end)
            return false;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p++ != '}')
            return false;
        break;
    }
    while (p < end && s_is_ws(*p)) /* json-c takes whitespace after the value */
        p++;
    return p == end && *cs;
}

wire_err_t wire_from_json_text(const char *text, size_t len, char channel[WIRE_CHANNEL_MAX], wire_msg_t *out)
{
    memset(out, 0, sizeof *out);
    channel[0] = '\0';
    if (len > WIRE_MAX_FRAME)
        return WIRE_ERR_SIZE;
    if (!text || !len) /* an empty frame (wslay hands it over as NULL): no pointer arithmetic on NULL */
        return WIRE_ERR_JSON;
    s_tok_t tok = S_TOK(JSON_TOKENER_DEFAULT_DEPTH);
    const char *cs = NULL, *ce = NULL;
    json_object *shell = NULL, *content = NULL;
    if (s_find_content(text, len, &cs, &ce)) {
        /* Everything but the content, which may be megabytes of output. */
        size_t head = (size_t)(cs - text), tail = (size_t)(text + len - ce);
        char *sh = xmalloc(head + 2 + tail);
        memcpy(sh, text, head);
        memcpy(sh + head, "{}", 2);
        memcpy(sh + head + 2, ce, tail);
        shell = s_parse_obj(&tok, sh, head + 2 + tail);
        free(sh);
    } else {
        cs = NULL;
        shell = s_parse_obj(&tok, text, len);
    }
    json_object *h = NULL, *par = NULL, *c = NULL;
    wire_err_t rc = WIRE_ERR_JSON;
    if (!shell || !json_object_object_get_ex(shell, "header", &h) || !json_object_is_type(h, json_type_object) ||
        !json_object_object_get_ex(shell, "parent_header", &par) || !json_object_is_type(par, json_type_object))
        goto out;
    const char *t = wire_get_str(h, "msg_type");
    if (cs) {
        if (t && strcmp(t, "stream") == 0 && s_lazy_stream(cs, (size_t)(ce - cs), out)) {
            content = out->content;
        } else {
            /* One level less: in the whole text the content is nested in
             * the message, and json-c's depth limit counts from the top. */
            s_tok_t ctok = S_TOK(JSON_TOKENER_DEFAULT_DEPTH - 1);
            content = s_parse_obj(&ctok, cs, (size_t)(ce - cs));
            s_tok_give(&ctok);
        }
    } else if (json_object_object_get_ex(shell, "content", &c) && json_object_is_type(c, json_type_object)) {
        content = json_object_get(c);
    }
    if (!content)
        goto out;
    const char *ch = wire_get_str(shell, "channel");
    if (ch && strlen(ch) < WIRE_CHANNEL_MAX)
        memcpy(channel, ch, strlen(ch) + 1);
    out->header = json_object_get(h);
    out->parent = json_object_get(par);
    out->content = content;
    s_header_fields(out, h);
    out->parent_id = wire_get_str(par, "msg_id");
    rc = WIRE_OK;
out:
    s_tok_give(&tok);
    json_object_put(shell); /* header and parent live on by their references */
    if (rc != WIRE_OK) {
        json_object_put(content);
        memset(out, 0, sizeof *out);
    }
    return rc;
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

#define WIRE_OUT_KEEP 8192 /* bytes of wire_out_t's buffer kept between messages */

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
    /* The helper's source (~40 KiB as JSON) or a big cell must not keep its
     * buffer for the session: requests are small. */
    buf_reset_shrink(&o->buf, WIRE_OUT_KEEP);
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
