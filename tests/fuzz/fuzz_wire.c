/* fuzz_wire: the Jupyter wire decoder and its replay set.
 *
 * Input: a flags byte, a churn count byte, a spare byte, then the frames of one
 * message separated by 0x1E (identities, "<IDS|MSG>", signature, header,
 * parent, metadata, content, buffers). Flags: bit 0 signs with a key (else
 * signing is off), bit 1 replaces the signature frame with the right HMAC so
 * the JSON parsing behind the check is reached, bit 2 decodes the message a
 * second time with a replay set (without it, none is used), bit 3 records
 * up to 255 other signatures in between.
 * Checked: a failed decode leaves *out zeroed; a decoded message has its
 * header, content and type and id, and its msg_type, msg_id, session and
 * parent msg_id are json-c's, whether the header and parent were read
 * without a tree or not; with a key, only the right signature is
 * accepted; a replay within the window is refused; without a key nothing is
 * remembered.
 *
 * With bit 4 the input after the three bytes is instead one WebSocket text
 * (a gateway's message as JSON) for wire_from_json_text, checked against
 * json-c parsing it whole (STRICT, VALIDATE_UTF8) and wire_from_json: the
 * same accepted, the same channel, a stream's text the same. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sodium.h>

#include "fuzz_check.h"
#include "wire.h"

#define MAX_FRAMES 32
#define SEP 0x1E

static const char s_key[] = "fuzz-key-0123456789abcdef";

static bool s_zeroed(const wire_msg_t *m)
{
    return !m->header && !m->parent && !m->metadata && !m->content && !m->msg_type && !m->msg_id &&
           !m->session && !m->parent_id && !m->topic && !m->header_raw;
}

/* Whether text holds a high-surrogate escape json-c 0.16 mis-decodes in a
 * pair: the 32 values \uD836, \uD837, \uD876, ... \uDBF7, i.e. those
 * with (value & 0x3E) == 0x36 (measured over all of D800..DBFF: each gives
 * U+FFFD where RFC 8259 gives the code point). Any hex case. */
static int s_hex(char c)
{
    c = (char)(c | 0x20);
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool s_has_d836(const void *text, size_t len)
{
    const char *p = text;
    for (size_t i = 0; i + 6 <= len; i++) {
        if (p[i] != '\\' || p[i + 1] != 'u')
            continue;
        int v = 0;
        for (int k = 2; k < 6 && v >= 0; k++)
            v = s_hex(p[i + k]) < 0 ? -1 : v * 16 + s_hex(p[i + k]);
        if (v >= 0xd800 && v <= 0xdbff && (v & 0x3e) == 0x36)
            return true;
    }
    return false;
}

/* A deterministic stream of distinct-looking signatures for the churn. */
static void s_churn_sig(uint64_t *state, char out[WIRE_SIG_HEX + 1])
{
    unsigned char bin[WIRE_SIG_HEX / 2];
    for (size_t i = 0; i < sizeof bin; i += 8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        memcpy(bin + i, state, 8);
    }
    sodium_bin2hex(out, WIRE_SIG_HEX + 1, bin, sizeof bin);
}

/* Compares a stream's text read in pieces with json-c's "text". */
static void s_check_stream(wire_msg_t *m, json_object *ref_content)
{
    json_object *t = NULL;
    bool has = json_object_object_get_ex(ref_content, "text", &t) && json_object_is_type(t, json_type_string);
    const char *want = has ? json_object_get_string(t) : "";
    size_t wlen = has ? (size_t)json_object_get_string_len(t) : 0, got = 0;
    const char *piece;
    size_t plen;
    while (wire_stream_next(m, &piece, &plen)) {
        FUZZ_ASSERT(plen <= WIRE_STREAM_PIECE && got + plen <= wlen && memcmp(want + got, piece, plen) == 0);
        got += plen;
    }
    FUZZ_ASSERT(got == wlen);
}

/* json-c's strict parse of a whole frame as an object, or NULL. */
static json_object *s_ref_obj(const void *p, size_t len)
{
    json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *o = json_tokener_parse_ex(tok, p, (int)len);
    if (o && (json_tokener_get_error(tok) != json_tokener_success || (size_t)json_tokener_get_parse_end(tok) != len ||
              !json_object_is_type(o, json_type_object))) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

static bool s_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The fields wire_decode gave, read without a tree or not, against json-c
 * parsing the header and parent frames (it must accept both). */
static void s_check_fields(wire_msg_t *m, const void *h, size_t hlen, const void *par, size_t plen)
{
    json_object *rh = s_ref_obj(h, hlen), *rp = s_ref_obj(par, plen);
    FUZZ_ASSERT(rh && rp);
    const char *t = wire_get_str(rh, "msg_type"), *id = wire_get_str(rh, "msg_id");
    FUZZ_ASSERT(strcmp(m->msg_type, t ? t : "") == 0 && strcmp(m->msg_id, id ? id : "") == 0);
    FUZZ_ASSERT(s_same(m->session, wire_get_str(rh, "session")));
    FUZZ_ASSERT(s_same(m->parent_id, wire_get_str(rp, "msg_id")));
    json_object *hdr = wire_msg_header(m);
    FUZZ_ASSERT(json_object_is_type(hdr, json_type_object) && wire_msg_header(m) == hdr);
    FUZZ_ASSERT(s_same(wire_get_str(hdr, "msg_id"), id) && s_same(wire_get_str(hdr, "session"), wire_get_str(rh, "session")));
    json_object_put(rh);
    json_object_put(rp);
}

static void s_json_text(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *whole = json_tokener_parse_ex(tok, text, (int)size);
    if (whole && (json_tokener_get_error(tok) != json_tokener_success || (size_t)json_tokener_get_parse_end(tok) != size)) {
        json_object_put(whole);
        whole = NULL;
    }
    json_tokener_free(tok);
    wire_msg_t ref;
    bool want = whole && wire_from_json(whole, &ref) == WIRE_OK;
    const char *want_ch = want ? wire_get_str(whole, "channel") : NULL;
    char ch[WIRE_CHANNEL_MAX];
    wire_msg_t m;
    wire_err_t e = wire_from_json_text(text, size, ch, &m);
    FUZZ_ASSERT((e == WIRE_OK) == want);
    if (e != WIRE_OK) {
        FUZZ_ASSERT(s_zeroed(&m) && !m.stream_raw && ch[0] == '\0');
    } else {
        FUZZ_ASSERT(json_object_is_type(m.header, json_type_object) && json_object_is_type(m.parent, json_type_object) &&
                    json_object_is_type(m.content, json_type_object) && m.msg_type && m.msg_id);
        FUZZ_ASSERT(strcmp(m.msg_type, ref.msg_type) == 0 && strcmp(m.msg_id, ref.msg_id) == 0);
        FUZZ_ASSERT(s_same(m.session, wire_get_str(m.header, "session")) && s_same(m.session, ref.session));
        if (want_ch && strlen(want_ch) < WIRE_CHANNEL_MAX)
            FUZZ_ASSERT(strcmp(ch, want_ch) == 0);
        else
            FUZZ_ASSERT(ch[0] == '\0');
        if (m.stream_raw) {
            FUZZ_ASSERT(m.stream_raw >= text && m.stream_raw + m.stream_len <= text + size);
            if (!s_has_d836(text, size))
                s_check_stream(&m, ref.content);
        } else {
            /* Parsed: the same content as json-c's. */
            FUZZ_ASSERT(json_object_equal(m.content, ref.content));
        }
        wire_msg_free(&m);
        FUZZ_ASSERT(s_zeroed(&m));
    }
    if (want)
        wire_msg_free(&ref);
    json_object_put(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static bool inited;
    if (!inited) {
        FUZZ_ASSERT(sodium_init() >= 0);
        inited = true;
    }
    uint8_t flags = data[0];
    /* Up to 255 other signatures: rotating the set takes 65536, which is
     * too slow per input; test_wire covers rotation. */
    size_t churn = flags & 8 ? data[1] : 0;
    data += 3;
    size -= 3;
    if (flags & 16) {
        s_json_text(data, size);
        return 0;
    }

    const void *frames[MAX_FRAMES];
    size_t lens[MAX_FRAMES];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= size && n < MAX_FRAMES; i++) {
        if (i < size && data[i] != SEP)
            continue;
        frames[n] = data + start;
        lens[n] = i - start;
        n++;
        start = i + 1;
    }

    wire_auth_t auth;
    bool keyed = flags & 1;
    wire_auth_init(&auth, s_key, keyed ? strlen(s_key) : 0);

    /* Where the signature sits, if the frames have a delimiter. */
    size_t d = 0;
    while (d < n && !(lens[d] == 9 && memcmp(frames[d], WIRE_DELIM, 9) == 0))
        d++;
    bool framed = d < n && n - d >= 6;
    char right[WIRE_SIG_HEX + 1] = "";
    if (framed) {
        const void *parts[4] = {frames[d + 2], frames[d + 3], frames[d + 4], frames[d + 5]};
        size_t plens[4] = {lens[d + 2], lens[d + 3], lens[d + 4], lens[d + 5]};
        wire_sign(&auth, parts, plens, right);
        if (flags & 2) {
            frames[d + 1] = right;
            lens[d + 1] = strlen(right);
        }
    }

    /* Without bit 2 the decoder runs without a replay set (allowed, and
     * much faster: the set's table is half a megabyte). */
    wire_replay_t *replay = flags & 4 ? wire_replay_new() : NULL;
    wire_msg_t m;
    wire_err_t e = wire_decode(&auth, replay, frames, lens, n, &m);
    FUZZ_ASSERT((int)e >= (int)WIRE_OK && (int)e <= (int)WIRE_ERR_SIZE);
    FUZZ_ASSERT(wire_strerror(e) != NULL);
    if (e != WIRE_OK) {
        FUZZ_ASSERT(s_zeroed(&m));
    } else {
        FUZZ_ASSERT(framed);
        /* metadata is verified but never parsed (wire.h). */
        FUZZ_ASSERT((m.parent == NULL || json_object_is_type(m.parent, json_type_object)) && m.metadata == NULL &&
                    json_object_is_type(m.content, json_type_object));
        FUZZ_ASSERT(m.msg_type && m.msg_id);
        s_check_fields(&m, frames[d + 2], lens[d + 2], frames[d + 3], lens[d + 3]);
        if (keyed) {
            /* Accepted with a key: the signature frame must be the HMAC. */
            FUZZ_ASSERT(lens[d + 1] == WIRE_SIG_HEX && memcmp(frames[d + 1], right, WIRE_SIG_HEX) == 0);
        }
        /* A stream's text read in pieces from the frame (wire.h) is json-c's
         * "text" byte for byte, in pieces of at most WIRE_STREAM_PIECE.
         * Except where json-c 0.16 is wrong: it decodes the pairs starting
         * with 32 of the high surrogates (s_has_d836) to U+FFFD; wire.c
         * decodes them as RFC 8259 says (the fuzzer found this, twice). */
        if (strcmp(m.msg_type, "stream") == 0 && !s_has_d836(frames[d + 5], lens[d + 5])) {
            json_object *ref;
            json_tokener *tok = json_tokener_new();
            json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
            ref = json_tokener_parse_ex(tok, frames[d + 5], (int)lens[d + 5]);
            FUZZ_ASSERT(ref != NULL);
            s_check_stream(&m, ref);
            json_object_put(ref);
            json_tokener_free(tok);
        }
        wire_msg_free(&m);
        FUZZ_ASSERT(s_zeroed(&m));

        if (flags & 4) {
            uint64_t state = 0x9E3779B97F4A7C15ull ^ size;
            char sig[WIRE_SIG_HEX + 1];
            for (size_t i = 0; i < churn; i++) {
                s_churn_sig(&state, sig);
                wire_replay_seen(replay, sig);
            }
            wire_err_t again = wire_decode(&auth, replay, frames, lens, n, &m);
            FUZZ_ASSERT(again == (keyed ? WIRE_ERR_REPLAY : WIRE_OK));
            wire_msg_free(&m);
        }
    }
    wire_replay_destroy(&replay);
    wire_auth_free(&auth);
    return 0;
}
