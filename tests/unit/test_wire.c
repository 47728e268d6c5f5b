/* Unit tests: Jupyter wire signing and decoding against vectors made by
 * jupyter_client's Session in the same test run (wire_interop.py), and the
 * reverse: messages we encode are written out for Session to verify.
 * Usage: test_wire VECTORS.json OUT.json */
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "buf.h"
#include "check.h"
#include "fileio.h"
#include "jmsg.h"
#include "mem.h"
#include "utf8.h"
#include "wire.h"

#define MAXF 16

typedef struct {
    unsigned char *data[MAXF];
    size_t len[MAXF];
    size_t n;
} s_frames_t;

static void s_frames_load(json_object *arr, s_frames_t *f)
{
    f->n = 0;
    for (size_t i = 0; i < json_object_array_length(arr) && i < MAXF; i++) {
        const char *b64 = json_object_get_string(json_object_array_get_idx(arr, i));
        size_t cap = strlen(b64) + 1, bin = 0;
        f->data[i] = xmalloc(cap);
        sodium_base642bin(f->data[i], cap, b64, strlen(b64), NULL, &bin, NULL, sodium_base64_VARIANT_ORIGINAL);
        f->len[i] = bin;
        f->n++;
    }
}

static void s_frames_free(s_frames_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->data[i]);
    f->n = 0;
}

static wire_err_t s_decode(const wire_auth_t *a, wire_replay_t *r, s_frames_t *f, wire_msg_t *m)
{
    const void *p[MAXF];
    for (size_t i = 0; i < f->n; i++)
        p[i] = f->data[i];
    return wire_decode(a, r, p, f->len, f->n, m);
}

static size_t s_delim(const s_frames_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->len[i] == 9 && memcmp(f->data[i], "<IDS|MSG>", 9) == 0)
            return i;
    return f->n;
}

static void s_check_vectors(json_object *set)
{
    json_object *key = NULL, *msgs = NULL;
    json_object_object_get_ex(set, "key", &key);
    json_object_object_get_ex(set, "messages", &msgs);
    wire_auth_t auth;
    wire_auth_init(&auth, json_object_get_string(key), (size_t)json_object_get_string_len(key));
    wire_replay_t *replay = wire_replay_new();
    for (size_t i = 0; i < json_object_array_length(msgs); i++) {
        json_object *v = json_object_array_get_idx(msgs, i), *frames = NULL, *want = NULL;
        json_object_object_get_ex(v, "frames", &frames);
        s_frames_t f;
        s_frames_load(frames, &f);
        size_t d = s_delim(&f);
        CHECK(d < f.n);
        /* Our signature of Session's four JSON frames equals Session's. */
        char sig[WIRE_SIG_HEX + 1];
        const void *parts[4] = {f.data[d + 2], f.data[d + 3], f.data[d + 4], f.data[d + 5]};
        size_t lens[4] = {f.len[d + 2], f.len[d + 3], f.len[d + 4], f.len[d + 5]};
        wire_sign(&auth, parts, lens, sig);
        CHECK(f.len[d + 1] == strlen(sig) && memcmp(sig, f.data[d + 1], strlen(sig)) == 0);
        wire_msg_t m;
        CHECK_EQ_INT(s_decode(&auth, replay, &f, &m), WIRE_OK);
        json_object_object_get_ex(v, "msg_type", &want);
        CHECK_EQ_STR(m.msg_type, json_object_get_string(want));
        json_object_object_get_ex(v, "msg_id", &want);
        CHECK_EQ_STR(m.msg_id, json_object_get_string(want));
        json_object_object_get_ex(v, "parent_id", &want);
        if (want && !json_object_is_type(want, json_type_null))
            CHECK_EQ_STR(m.parent_id, json_object_get_string(want));
        else
            CHECK(m.parent_id == NULL);
        /* The header object, read without a tree or not, is Session's. */
        json_object *hdr = wire_msg_header(&m);
        CHECK(json_object_is_type(hdr, json_type_object));
        CHECK_EQ_STR(wire_get_str(hdr, "msg_id"), m.msg_id);
        CHECK(m.session && strcmp(wire_get_str(hdr, "session"), m.session) == 0);
        json_object_object_get_ex(v, "text", &want);
        if (want) {
            buf_t all;
            buf_init(&all, 0);
            const char *piece;
            size_t plen;
            while (wire_stream_next(&m, &piece, &plen))
                buf_append(&all, piece, plen);
            CHECK_EQ_STR(all.data ? all.data : "", json_object_get_string(want));
            buf_free(&all);
        }
        wire_msg_free(&m);
        if (auth.len) {
            /* The same message again is a replay. */
            CHECK_EQ_INT(s_decode(&auth, replay, &f, &m), WIRE_ERR_REPLAY);
            /* One flipped byte in the content breaks the signature. */
            f.data[d + 5][0] ^= 1;
            CHECK_EQ_INT(s_decode(&auth, NULL, &f, &m), WIRE_ERR_SIGNATURE);
            f.data[d + 5][0] ^= 1;
            /* A short signature is rejected before any comparison. */
            f.len[d + 1] = 10;
            CHECK_EQ_INT(s_decode(&auth, NULL, &f, &m), WIRE_ERR_SIGNATURE);
            /* No signature at all. */
            f.len[d + 1] = 0;
            CHECK_EQ_INT(s_decode(&auth, NULL, &f, &m), WIRE_ERR_UNSIGNED);
        }
        s_frames_free(&f);
    }
    wire_replay_destroy(&replay);
    wire_auth_free(&auth);
}

static void s_check_malformed(void)
{
    wire_auth_t auth;
    wire_auth_init(&auth, "k", 1);
    wire_msg_t m;
    const void *p[3] = {"a", "b", "c"};
    size_t l[3] = {1, 1, 1};
    CHECK_EQ_INT(wire_decode(&auth, NULL, p, l, 3, &m), WIRE_ERR_FRAMES);
    CHECK_EQ_INT(wire_decode(&auth, NULL, p, l, 0, &m), WIRE_ERR_FRAMES);
    /* Correctly signed, but not JSON objects. */
    const void *parts[4] = {"[1]", "{}", "{}", "{}"};
    size_t plens[4] = {3, 2, 2, 2};
    char sig[WIRE_SIG_HEX + 1];
    wire_sign(&auth, parts, plens, sig);
    const void *fr[6] = {WIRE_DELIM, sig, parts[0], parts[1], parts[2], parts[3]};
    size_t fl[6] = {9, 64, 3, 2, 2, 2};
    CHECK_EQ_INT(wire_decode(&auth, NULL, fr, fl, 6, &m), WIRE_ERR_JSON);
    wire_auth_free(&auth);
}

/* Decodes an unsigned message of the given header, parent and content. */
static wire_err_t s_decode4(const char *h, const char *par, const char *c, wire_msg_t *m)
{
    wire_auth_t none;
    wire_auth_init(&none, "", 0);
    const void *fr[6] = {WIRE_DELIM, "", h, par, "{}", c};
    size_t fl[6] = {9, 0, strlen(h), strlen(par), 2, strlen(c)};
    wire_err_t e = wire_decode(&none, NULL, fr, fl, 6, m);
    wire_auth_free(&none);
    return e;
}

/* Header and parent read without a tree when they are objects of plain
 * strings, through json-c otherwise: the same fields either way. */
static void s_check_lazy_fields(void)
{
    static const struct {
        const char *h, *par;
        bool tree_h, tree_p; /* json-c's path expected */
        const char *type, *id, *session, *parent_id;
    } cases[] = {
        {"{\"msg_id\":\"a\",\"msg_type\":\"status\",\"session\":\"s\",\"date\":\"2026\"}", "{\"msg_id\":\"p\"}",
         false, false, "status", "a", "s", "p"},
        {"{}", "{}", false, false, "", "", NULL, NULL},
        /* A kernel with subshells sends "subshell_id": null: json-c. */
        {"{\"msg_id\":\"a\",\"msg_type\":\"status\",\"subshell_id\":null}", "{\"msg_id\":\"p\",\"n\":1}",
         true, true, "status", "a", NULL, "p"},
        /* Escaped values and keys, and a value too long to copy: json-c. */
        {"{\"msg_id\":\"a\",\"msg_type\":\"str\\u0065am\"}", "{\"msg_id\":\"p\\/q\"}", true, true, "stream", "a",
         NULL, "p/q"},
        {"{\"msg_\\u0069d\":\"a\",\"msg_type\":\"x\"}", "{\"msg_\\u0069d\":\"p\"}", true, true, "x", "a", NULL, "p"},
        {"{\"msg_id\":\"" "0123456789012345678901234567890123456789012345678901234567890123456789"
         "0123456789012345678901234567890123456789012345678901234567890123456789\"}",
         "{}", true, false, "", "0123456789012345678901234567890123456789012345678901234567890123456789"
                             "0123456789012345678901234567890123456789012345678901234567890123456789", NULL, NULL},
        /* Repeated keys: the last counts, as in json-c. */
        {"{\"msg_type\":\"a\",\"msg_type\":\"b\",\"msg_id\":\"i\"}", "{\"msg_id\":\"1\",\"msg_id\":\"2\"}", false,
         false, "b", "i", NULL, "2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wire_msg_t m;
        CHECK_EQ_INT(s_decode4(cases[i].h, cases[i].par, "{}", &m), WIRE_OK);
        CHECK((m.header != NULL) == cases[i].tree_h);
        CHECK((m.parent != NULL) == cases[i].tree_p);
        CHECK_EQ_STR(m.msg_type, cases[i].type);
        CHECK_EQ_STR(m.msg_id, cases[i].id);
        CHECK(cases[i].session ? m.session && strcmp(m.session, cases[i].session) == 0 : m.session == NULL);
        CHECK(cases[i].parent_id ? m.parent_id && strcmp(m.parent_id, cases[i].parent_id) == 0 : m.parent_id == NULL);
        json_object *hdr = wire_msg_header(&m);
        CHECK(json_object_is_type(hdr, json_type_object));
        CHECK(wire_msg_header(&m) == hdr); /* parsed once */
        wire_msg_free(&m);
    }
    /* Not objects, or invalid, whichever path looks first: refused. (A raw
     * control character is not here: json-c 0.16 accepts it even STRICT, so
     * the plain-string path leaves such a header to json-c.) */
    static const char *bad[][2] = {{"{\"msg_id\":\"a\"", "{}"}, {"{}", "{\"msg_id\":\"a\",}"},
                                   {"{\"msg_id\":\"\xff\"}", "{}"}, {"{} ", "[]"}, {"{\"a\":\"b\"}x", "{}"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wire_msg_t m;
        CHECK_EQ_INT(s_decode4(bad[i][0], bad[i][1], "{}", &m), WIRE_ERR_JSON);
        CHECK(m.header == NULL && m.msg_type == NULL && m.session == NULL && m.parent_id == NULL);
    }
}

static void s_check_replay_bounded(void)
{
    wire_replay_t *r = wire_replay_new();
    char hex[WIRE_SIG_HEX + 1];
    unsigned char bin[32];
    memset(bin, 0, sizeof bin);
    sodium_bin2hex(hex, sizeof hex, bin, sizeof bin);
    CHECK(!wire_replay_seen(r, hex));
    CHECK(wire_replay_seen(r, hex));
    /* After 3 windows of other signatures the first is forgotten: memory stays bounded. */
    for (unsigned i = 1; i <= 3 * WIRE_REPLAY_WINDOW; i++) {
        memcpy(bin, &i, sizeof i);
        bin[31] = 1;
        char h[WIRE_SIG_HEX + 1];
        randombytes_buf(bin + 8, 8);
        sodium_bin2hex(h, sizeof h, bin, sizeof bin);
        wire_replay_seen(r, h);
    }
    memset(bin, 0, sizeof bin);
    sodium_bin2hex(hex, sizeof hex, bin, sizeof bin);
    CHECK(!wire_replay_seen(r, hex));
    wire_replay_destroy(&r);
}

/* Decodes content as a signed "stream" message; returns the error and, on
 * success, the text gathered from wire_stream_next (pieces counted). */
static wire_err_t s_stream_text(const char *content, size_t clen, buf_t *text, int *pieces)
{
    wire_auth_t auth;
    wire_auth_init(&auth, "k", 1);
    const char *hdr = "{\"msg_type\":\"stream\",\"msg_id\":\"x\"}";
    const void *parts[4] = {hdr, "{}", "{}", content};
    size_t plens[4] = {strlen(hdr), 2, 2, clen};
    char sig[WIRE_SIG_HEX + 1];
    wire_sign(&auth, parts, plens, sig);
    const void *fr[6] = {WIRE_DELIM, sig, parts[0], parts[1], parts[2], parts[3]};
    size_t fl[6] = {9, 64, plens[0], 2, 2, clen};
    wire_msg_t m;
    wire_err_t e = wire_decode(&auth, NULL, fr, fl, 6, &m);
    *pieces = 0;
    const char *piece;
    size_t plen;
    while (e == WIRE_OK && wire_stream_next(&m, &piece, &plen)) {
        CHECK(plen <= WIRE_STREAM_PIECE);
        CHECK(utf8_valid_prefix(piece, plen) == plen || utf8_valid_prefix(content, clen) != clen);
        buf_append(text, piece, plen);
        (*pieces)++;
    }
    if (e == WIRE_OK)
        CHECK_EQ_STR(wire_get_str(m.content, "name") ? wire_get_str(m.content, "name") : "-", "stdout");
    wire_msg_free(&m);
    wire_auth_free(&auth);
    return e;
}

/* Stream text is decoded from the frame in pieces (wire.h): whatever the
 * content, the result is json-c's, byte for byte, or json-c's refusal. */
static void s_check_stream_lazy(void)
{
    static const char *cases[] = {
        "{\"name\":\"stdout\",\"text\":\"hello\\n\"}",
        " {\"text\" : \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\" , \"name\":\"stdout\"}",
        "{\"name\":\"stdout\",\"text\":\"\\u00e9\\u20ac\\ud83d\\ude00 h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
        "{\"name\":\"stdout\",\"text\":\"lone \\ud83d x \\ude00 y \\ud83d\"}",
        "{\"name\":\"stdout\",\"text\":\"nul \\u0000 in\"}",
        "{\"name\":\"stdout\",\"text\":\"first\",\"text\":\"second\"}",
        "{\"name\":\"stdout\",\"text\":\"\",\"other\":\"x\"}",
        "{\"name\":\"stdout\",\"text\":\"n\",\"n\":1}",         /* json-c's path */
        "{\"name\":\"stdout\",\"t\\u0065xt\":\"esc key\"}",      /* json-c's path */
        "{\"name\":\"stdout\",\"text\":\"x\"} ",                 /* trailing byte */
        "{\"name\":\"stdout\",\"text\":\"bad \\x escape\"}",
        "{\"name\":\"stdout\",\"text\":\"raw\ttab\"}",
        "{\"name\":\"stdout\",\"text\":\"bad utf8 \xc3\"}",
        "{\"name\":\"stdout\",\"text\":\"overlong \xc0\xaf\"}",
        "{\"name\":\"stdout\",\"text\":\"surrogate \xed\xa0\x80\"}",
        "{\"name\":\"stdout\",\"text\":\"past U+10FFFF \xf4\x90\x80\x80\"}",
        "{\"name\":\"stdout\",\"text\":\"noncharacter \xef\xbf\xbf, max \xf4\x8f\xbf\xbf\"}",
        "{\"name\":\"stdout\",\"text\":\"del \x7f\"}",
        "{\"name\":\"stdout\",\"text\":\"short \\u12\"}",
        "{\"name\":\"stdout\",\"text\":\"unterminated}",
        "{\"name\":\"stdout\",\"text\":\"x\",}",
        "{\"name\":\"stdout\" \"text\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *c = cases[i];
        json_tokener *tok = json_tokener_new();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        json_object *o = json_tokener_parse_ex(tok, c, (int)strlen(c));
        bool ok = o && json_tokener_get_error(tok) == json_tokener_success &&
                  (size_t)json_tokener_get_parse_end(tok) == strlen(c) && json_object_is_type(o, json_type_object);
        buf_t got;
        buf_init(&got, 0);
        int pieces;
        wire_err_t e = s_stream_text(c, strlen(c), &got, &pieces);
        if (!ok) {
            if (e != WIRE_ERR_JSON)
                fprintf(stderr, "case %zu: %s\n", i, c);
            CHECK_EQ_INT(e, WIRE_ERR_JSON);
        } else {
            CHECK_EQ_INT(e, WIRE_OK);
            json_object *t = NULL;
            json_object_object_get_ex(o, "text", &t);
            const char *want = t ? json_object_get_string(t) : "";
            size_t wlen = t ? (size_t)json_object_get_string_len(t) : 0;
            if (got.len != wlen || memcmp(got.data ? got.data : "", want, wlen) != 0)
                fprintf(stderr, "case %zu: %s\n", i, c);
            CHECK(got.len == wlen && memcmp(got.data ? got.data : "", want, wlen) == 0);
        }
        json_object_put(o);
        json_tokener_free(tok);
        buf_free(&got);
    }
    /* json-c 0.16 decodes the pairs starting \ud836/\ud837 (U+1D800..
     * U+1DFFF) and 30 more high surrogates to U+FFFD; the stream path
     * decodes them as RFC 8259 says. */
    buf_t sw;
    buf_init(&sw, 0);
    int swp;
    const char *sutton = "{\"name\":\"stdout\",\"text\":\"\\ud836\\ude00\"}";
    CHECK_EQ_INT(s_stream_text(sutton, strlen(sutton), &sw, &swp), WIRE_OK);
    CHECK_EQ_STR(sw.data, "\xf0\x9d\xa8\x80");
    buf_free(&sw);
    /* And so for all 32 high surrogates with (value & 0x3E) == 0x36, e.g.
     * \ud876\ude00 = U+2DA00 (found by fuzz_wire). */
    buf_init(&sw, 0);
    const char *cjk = "{\"name\":\"stdout\",\"text\":\"\\ud876\\ude00\"}";
    CHECK_EQ_INT(s_stream_text(cjk, strlen(cjk), &sw, &swp), WIRE_OK);
    CHECK_EQ_STR(sw.data, "\xf0\xad\xa8\x80");
    buf_free(&sw);
    /* A flood's message: megabytes with escapes and multi-byte characters
     * across piece boundaries come back whole, in pieces of at most
     * WIRE_STREAM_PIECE bytes. */
    buf_t big, want;
    buf_init(&big, 0);
    buf_init(&want, 0);
    buf_puts(&big, "{\"name\":\"stdout\",\"text\":\"");
    for (int i = 0; i < 200000; i++) {
        buf_printf(&big, "%07d \xc3\xa9\\u20ac\\ud83d\\ude00\\n", i);
        buf_printf(&want, "%07d \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\n", i);
    }
    buf_puts(&big, "\"}");
    buf_t got;
    buf_init(&got, 0);
    int pieces;
    CHECK_EQ_INT(s_stream_text(big.data, big.len, &got, &pieces), WIRE_OK);
    CHECK(got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    CHECK(pieces >= (int)(want.len / WIRE_STREAM_PIECE));
    buf_free(&got);
    buf_free(&big);
    buf_free(&want);
}

/* Messages we sign, for Session.deserialize to verify. */
static void s_write_ours(const char *key, const char *out_path)
{
    wire_auth_t auth;
    wire_auth_init(&auth, key, strlen(key));
    struct { const char *type, *parent, *content; } ms[] = {
        {"execute_request", NULL, "{\"code\":\"print('é')\",\"silent\":false,\"store_history\":true,"
                                  "\"user_expressions\":{},\"allow_stdin\":true,\"stop_on_error\":false}"},
        {"input_reply", "{\"msg_id\":\"abc\",\"msg_type\":\"input_request\",\"session\":\"s\",\"username\":\"u\","
                        "\"date\":\"2026-01-01T00:00:00.000001Z\",\"version\":\"5.3\"}", "{\"value\":\"Alice\"}"},
        {"execute_request", NULL, NULL}, /* content: a 100 KB cell, set below */
        {"kernel_info_request", NULL, NULL},
    };
    /* A big message, then small ones: wire_out_t gives the big buffer back
     * (an idle rat-py must not keep it) and still signs what follows. */
    char *big = xmalloc(100 * 1024 + 64);
    int n = snprintf(big, 64, "{\"code\":\"");
    memset(big + n, 'x', 100 * 1024);
    strcpy(big + n + 100 * 1024, "\",\"silent\":true}");
    ms[2].content = big;
    json_object *arr = json_object_new_array();
    wire_out_t o;
    wire_out_init(&o);
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        wire_encode(&o, &auth, "0123456789abcdef0123456789abcdef", ms[i].type, ms[i].parent, ms[i].content);
        CHECK_EQ_INT(strlen(o.msg_id), WIRE_ID_LEN);
        json_object *frames = json_object_new_array();
        const void *ptr[6] = {WIRE_DELIM, o.sig, wire_out_part(&o, 0), wire_out_part(&o, 1), wire_out_part(&o, 2),
                              wire_out_part(&o, 3)};
        size_t len[6] = {9, strlen(o.sig), o.len[0], o.len[1], o.len[2], o.len[3]};
        for (int k = 0; k < 6; k++) {
            size_t cap = sodium_base64_encoded_len(len[k], sodium_base64_VARIANT_ORIGINAL);
            char *b64 = xmalloc(cap);
            sodium_bin2base64(b64, cap, ptr[k], len[k], sodium_base64_VARIANT_ORIGINAL);
            json_object_array_add(frames, json_object_new_string(b64));
            free(b64);
        }
        json_object *e = json_object_new_object();
        json_object_object_add(e, "frames", frames);
        json_object_object_add(e, "msg_type", json_object_new_string(ms[i].type));
        json_object_object_add(e, "msg_id", json_object_new_string(o.msg_id));
        json_object_array_add(arr, e);
        if (i == 2)
            CHECK(o.buf.cap > 100 * 1024);
    }
    CHECK(o.buf.cap <= 8192);
    free(big);
    const char *text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
    CHECK_EQ_INT(fileio_write_atomic(out_path, text, strlen(text), 0600), 0);
    json_object_put(arr);
    wire_out_free(&o);
    wire_auth_free(&auth);
}

/* jmsg: every request content is what the nine hand-written copies wrote
 * before there was one builder, byte for byte; replies parse typed and
 * plain completions and inspect answers. */
static void s_check_jmsg(void)
{
    buf_t b;
    buf_init(&b, 0);
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = "x = \"é\"\n", .store_history = true, .allow_stdin = true});
    CHECK_EQ_STR(buf_str(&b), "{\"code\":\"x = \\\"é\\\"\\n\",\"silent\":false,\"store_history\":true,"
                              "\"user_expressions\":{},\"allow_stdin\":true,\"stop_on_error\":false}");
    buf_reset(&b);
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = "1", .rat_expr = "_rat.snap()", .silent = true});
    CHECK_EQ_STR(buf_str(&b), "{\"code\":\"1\",\"silent\":true,\"store_history\":false,"
                              "\"user_expressions\":{\"rat\":\"_rat.snap()\"},\"allow_stdin\":false,\"stop_on_error\":false}");
    buf_reset(&b);
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = "abc", .code_len = 2});
    CHECK_EQ_STR(buf_str(&b), "{\"code\":\"ab\",\"silent\":false,\"store_history\":false,"
                              "\"user_expressions\":{},\"allow_stdin\":false,\"stop_on_error\":false}");
    buf_reset(&b);
    jmsg_input_reply(&b, "yes\"");
    CHECK_EQ_STR(buf_str(&b), "{\"value\":\"yes\\\"\"}");
    buf_reset(&b);
    jmsg_complete_request(&b, "pri", 3);
    CHECK_EQ_STR(buf_str(&b), "{\"code\":\"pri\",\"cursor_pos\":3}");
    buf_reset(&b);
    jmsg_inspect_request(&b, "len", 3);
    CHECK_EQ_STR(buf_str(&b), "{\"code\":\"len\",\"cursor_pos\":3,\"detail_level\":0}");
    buf_free(&b);
    CHECK_EQ_STR(jmsg_shutdown_request(true), "{\"restart\":true}");
    CHECK_EQ_STR(jmsg_shutdown_request(false), "{\"restart\":false}");

    json_object *typed = json_tokener_parse(
        "{\"matches\":[\"print\"],\"cursor_start\":0,\"cursor_end\":3,\"metadata\":{\"_jupyter_types_experimental\":"
        "[{\"text\":\"print\",\"type\":\"function\",\"signature\":\"(*args)\"},{\"type\":\"x\"}]}}");
    jmsg_complete_reply_t r;
    jmsg_complete_reply_parse(typed, &r);
    CHECK_EQ_INT(r.n, 2);
    CHECK_EQ_STR(r.items[0].label, "print");
    CHECK_EQ_STR(r.items[0].kind, "function");
    CHECK_EQ_STR(r.items[0].signature, "(*args)");
    CHECK(r.items[1].label == NULL && r.items[1].signature == NULL);
    CHECK_EQ_INT(r.cursor_start, 0);
    CHECK_EQ_INT(r.cursor_end, 3);
    jmsg_complete_reply_free(&r);
    json_object_put(typed);
    json_object *plain = json_tokener_parse("{\"matches\":[\"a\",\"b\"]}");
    jmsg_complete_reply_parse(plain, &r);
    CHECK_EQ_INT(r.n, 2);
    CHECK(r.items[1].kind == NULL && !strcmp(r.items[1].label, "b"));
    CHECK_EQ_INT(r.cursor_start, -1);
    jmsg_complete_reply_free(&r);
    json_object_put(plain);

    size_t len = 99;
    json_object *found = json_tokener_parse("{\"found\":true,\"data\":{\"text/plain\":\"int\"}}");
    CHECK_EQ_STR(jmsg_inspect_reply_text(found, &len), "int");
    CHECK_EQ_INT(len, 3);
    json_object_put(found);
    json_object *missing = json_tokener_parse("{\"found\":false,\"data\":{}}");
    CHECK(jmsg_inspect_reply_text(missing, &len) == NULL);
    json_object_put(missing);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_wire VECTORS.json OUT.json (run through wire_interop.py)\n");
        return 2;
    }
    if (sodium_init() < 0)
        return 1;
    size_t len = 0;
    char *text = fileio_read(argv[1], 64u << 20, &len);
    json_object *root = text ? json_tokener_parse(text) : NULL;
    CHECK(root != NULL);
    json_object *sets = NULL, *key = NULL;
    if (root && json_object_object_get_ex(root, "sets", &sets)) {
        for (size_t i = 0; i < json_object_array_length(sets); i++)
            s_check_vectors(json_object_array_get_idx(sets, i));
    }
    s_check_malformed();
    s_check_lazy_fields();
    s_check_stream_lazy();
    s_check_replay_bounded();
    s_check_jmsg();
    if (root && json_object_object_get_ex(root, "our_key", &key))
        s_write_ours(json_object_get_string(key), argv[2]);
    json_object_put(root);
    free(text);
    return check_report("test_wire");
}
