/* jsontok: strict json-c tokeners kept per thread (see jsontok.h). */
#include "jsontok.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mem.h"

/* A thread uses a few depths (JSON-RPC's, the wire's, one less for content
 * nested in a gateway message): one slot each. */
#define S_SLOTS 3

typedef struct {
    json_tokener *tok[S_SLOTS];
    int depth[S_SLOTS];
} s_cache_t;

static pthread_key_t s_key;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static int s_key_ok;

/* Runs when a thread that kept tokeners ends (not for the main thread at
 * exit, where they are still reachable through the key). */
static void s_cache_free(void *p)
{
    s_cache_t *c = p;
    for (int i = 0; i < S_SLOTS; i++)
        if (c->tok[i])
            json_tokener_free(c->tok[i]);
    free(c);
}

static void s_key_init(void)
{
    s_key_ok = pthread_key_create(&s_key, s_cache_free) == 0;
}

static s_cache_t *s_cache(int make)
{
    pthread_once(&s_once, s_key_init);
    if (!s_key_ok)
        return NULL;
    s_cache_t *c = pthread_getspecific(s_key);
    if (!c && make) {
        c = xcalloc(1, sizeof *c);
        if (pthread_setspecific(s_key, c) != 0)
            FREE_AND_NULL(c);
    }
    return c;
}

json_tokener *jsontok_take(int depth)
{
    s_cache_t *c = s_cache(0);
    for (int i = 0; c && i < S_SLOTS; i++) {
        if (c->tok[i] && c->depth[i] == depth) {
            json_tokener *t = c->tok[i];
            c->tok[i] = NULL;
            return t;   /* reset when it was given back */
        }
    }
    json_tokener *t = json_tokener_new_ex(depth);
    if (!t) {
        fputs("rat-py: out of memory\n", stderr);
        abort();
    }
    json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    return t;
}

void jsontok_give(json_tokener **tok, int depth, size_t longest)
{
    json_tokener *t = *tok;
    *tok = NULL;
    if (!t)
        return;
    /* Only after a parse that succeeded: json_tokener_reset does not undo
     * all of one that stopped half-way (a UTF-16 high surrogate waiting for
     * its pair survives it, and the next string's first \u escape would
     * come out as U+FFFD: found by fuzz_wire). */
    s_cache_t *c = longest <= JSONTOK_KEEP_MAX && json_tokener_get_error(t) == json_tokener_success ? s_cache(1)
                                                                                                   : NULL;
    for (int i = 0; c && i < S_SLOTS; i++) {
        if (!c->tok[i]) {
            /* Objects of a parse that stopped half-way stay on the
             * tokener's stack until reset: drop them now, not at the next
             * take, so that a kept tokener holds no object. */
            json_tokener_reset(t);
            c->tok[i] = t;
            c->depth[i] = depth;
            return;
        }
    }
    json_tokener_free(t);
}

int jsontok_kept(void)
{
    s_cache_t *c = s_cache(0);
    int n = 0;
    for (int i = 0; c && i < S_SLOTS; i++)
        n += c->tok[i] != NULL;
    return n;
}
