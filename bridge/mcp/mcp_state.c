/* mcp_state: the requestState of MCP 2026-07-28 multi-round requests. The
 * token passes through the client, so it is attacker-controlled input
 * (mrtr.mdx): it is sealed with HMAC-SHA256 under a random key of this
 * process and binds the method, the tool/prompt/resource name and an expiry,
 * so an altered, stale or transplanted token is refused. Format:
 * base64url(JSON {m, n, x, s}) "." base64url(MAC of the first part). */
#define LOG_MODULE "mcp"
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_internal.h"
#include "mem.h"

#define STATE_MAX (64u << 10) /* a longer token is refused before decoding */

static char *s_b64(const unsigned char *bin, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = xmalloc(cap);
    sodium_bin2base64(out, cap, bin, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

char *mcp_state_seal(const mcp_server_t *srv, const char *method, const char *name, const char *payload, long expiry)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "m", json_object_new_string(method));
    json_object_object_add(o, "n", json_object_new_string(name ? name : ""));
    json_object_object_add(o, "x", json_object_new_int64(expiry));
    json_object_object_add(o, "s", json_object_new_string(payload));
    const char *js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    char *body = s_b64((const unsigned char *)js, strlen(js));
    json_object_put(o);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256(mac, (const unsigned char *)body, strlen(body), srv->state_key);
    char *tag = s_b64(mac, sizeof mac);
    char *tok = xasprintf("%s.%s", body, tag);
    free(body);
    free(tag);
    return tok;
}

char *mcp_state_open(const mcp_server_t *srv, const char *method, const char *name, const char *token, long now)
{
    size_t len = strnlen(token, STATE_MAX + 1);
    const char *dot = memchr(token, '.', len);
    if (len > STATE_MAX || !dot)
        return NULL;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    size_t maclen = 0;
    if (sodium_base642bin(mac, sizeof mac, dot + 1, len - (size_t)(dot + 1 - token), NULL, &maclen, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        maclen != sizeof mac ||
        crypto_auth_hmacsha256_verify(mac, (const unsigned char *)token, (size_t)(dot - token), srv->state_key) != 0)
        return NULL;
    size_t blen = (size_t)(dot - token);
    unsigned char *js = xmalloc(blen + 1);
    size_t jl = 0;
    char *out = NULL;
    if (sodium_base642bin(js, blen, token, blen, NULL, &jl, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0) {
        js[jl] = '\0';
        json_object *o = json_tokener_parse((const char *)js), *m = NULL, *n = NULL, *x = NULL, *st = NULL;
        if (o && json_object_object_get_ex(o, "m", &m) && json_object_object_get_ex(o, "n", &n) &&
            json_object_object_get_ex(o, "x", &x) && json_object_object_get_ex(o, "s", &st) &&
            strcmp(json_object_get_string(m), method) == 0 && strcmp(json_object_get_string(n), name ? name : "") == 0 &&
            json_object_get_int64(x) >= now)
            out = xstrdup(json_object_get_string(st));
        json_object_put(o);
    }
    free(js);
    return out;
}
