/* outq: queues of unsent bytes with shared bodies and a total budget
 * (outq.h). */
#include "outq.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

typedef struct outq_item outq_item_t;
struct outq_item {
    outq_item_t *next;
    rcbytes_t *body;          /* one reference, or NULL */
    size_t off;               /* bytes of the item already read */
    uint8_t hlen, tlen;
    bool droppable;
    char frame[OUTQ_FRAME_MAX]; /* head, then tail */
};

struct outq {
    outq_group_t *group;      /* borrowed, or NULL */
    outq_item_t *head, *tail; /* owned list, oldest first */
    size_t unsent;
    size_t ndroppable;        /* droppable items in the list (a started one included) */
    unsigned long dropped;
    outq_t *next;             /* in group->queues */
};

struct outq_group {
    size_t budget;
    size_t unsent;
    unsigned long dropped;
    outq_t *queues;           /* borrowed list of the group's queues */
};

static size_t s_item_len(const outq_item_t *it)
{
    return it->hlen + (it->body ? rcbytes_len(it->body) : 0) + it->tlen;
}

static void s_item_free(outq_item_t *it)
{
    rcbytes_unref(&it->body);
    free(it);
}

outq_group_t *outq_group_new(size_t budget)
{
    outq_group_t *g = xcalloc(1, sizeof *g);
    g->budget = budget;
    return g;
}

void outq_group_destroy(outq_group_t **g_p)
{
    outq_group_t *g = *g_p;
    *g_p = NULL;
    if (!g)
        return;
    if (g->queues) {
        fprintf(stderr, "outq_group_destroy: queues still in the group\n");
        abort();
    }
    free(g);
}

size_t outq_group_unsent(const outq_group_t *g)
{
    return g->unsent;
}

unsigned long outq_group_dropped(const outq_group_t *g)
{
    return g->dropped;
}

outq_t *outq_new(outq_group_t *g)
{
    outq_t *q = xcalloc(1, sizeof *q);
    q->group = g;
    if (g) {
        q->next = g->queues;
        g->queues = q;
    }
    return q;
}

static void s_forget(outq_t *q, size_t n)
{
    q->unsent -= n;
    if (q->group)
        q->group->unsent -= n;
}

void outq_destroy(outq_t **q_p)
{
    outq_t *q = *q_p;
    *q_p = NULL;
    if (!q)
        return;
    if (q->group) {
        for (outq_t **pp = &q->group->queues; *pp; pp = &(*pp)->next) {
            if (*pp == q) {
                *pp = q->next;
                break;
            }
        }
        q->group->unsent -= q->unsent;
    }
    for (outq_item_t *it = q->head, *next; it; it = next) {
        next = it->next;
        s_item_free(it);
    }
    free(q);
}

/* Drops q's oldest droppable item that has not started to go out. Returns
 * false when it has none. */
static bool s_drop_oldest(outq_t *q)
{
    outq_item_t *prev = NULL;
    for (outq_item_t *it = q->head; it; prev = it, it = it->next) {
        if (!it->droppable || it->off)
            continue;
        if (prev)
            prev->next = it->next;
        else
            q->head = it->next;
        if (q->tail == it)
            q->tail = prev;
        s_forget(q, s_item_len(it));
        q->ndroppable--;
        q->dropped++;
        q->group->dropped++;
        s_item_free(it);
        return true;
    }
    return false;
}

/* The budget: the slowest queue (most unsent) loses first. A queue whose
 * only droppable item has started is passed over (its ndroppable counts
 * that item, so it is looked at and skipped: rare and cheap). */
static void s_enforce(outq_group_t *g)
{
    while (g->budget && g->unsent > g->budget) {
        outq_t *worst = NULL;
        for (outq_t *q = g->queues; q; q = q->next)
            if (q->ndroppable && (!worst || q->unsent > worst->unsent))
                if (!(q->ndroppable == 1 && q->head && q->head->droppable && q->head->off))
                    worst = q;
        if (!worst || !s_drop_oldest(worst))
            return;
    }
}

void outq_push(outq_t *q, const char *head, size_t hlen, rcbytes_t *body, const char *tail, size_t tlen,
               bool droppable)
{
    if (hlen + tlen > OUTQ_FRAME_MAX) {
        fprintf(stderr, "outq_push: %zu bytes of framing (at most %d)\n", hlen + tlen, OUTQ_FRAME_MAX);
        abort();
    }
    outq_item_t *it = xmalloc(sizeof *it);
    it->next = NULL;
    it->body = body ? rcbytes_ref(body) : NULL;
    it->off = 0;
    it->hlen = (uint8_t)hlen;
    it->tlen = (uint8_t)tlen;
    it->droppable = droppable;
    if (hlen)
        memcpy(it->frame, head, hlen);
    if (tlen)
        memcpy(it->frame + hlen, tail, tlen);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    size_t n = s_item_len(it);
    q->unsent += n;
    if (droppable)
        q->ndroppable++;
    if (q->group) {
        q->group->unsent += n;
        s_enforce(q->group);
    }
}

/* Copies from one part (head, body or tail) of an item: part spans
 * [start, start + len) of the item; off is where reading is. */
static size_t s_copy_part(outq_item_t *it, const char *part, size_t start, size_t len, char *dst, size_t max)
{
    if (it->off < start || it->off >= start + len || !max)
        return 0;
    size_t from = it->off - start, n = len - from < max ? len - from : max;
    memcpy(dst, part + from, n);
    it->off += n;
    return n;
}

size_t outq_read(outq_t *q, char *dst, size_t max)
{
    size_t got = 0;
    while (q->head && got < max) {
        outq_item_t *it = q->head;
        size_t blen = it->body ? rcbytes_len(it->body) : 0;
        size_t n = s_copy_part(it, it->frame, 0, it->hlen, dst + got, max - got);
        if (blen)
            n += s_copy_part(it, rcbytes_data(it->body), it->hlen, blen, dst + got + n, max - got - n);
        n += s_copy_part(it, it->frame + it->hlen, it->hlen + blen, it->tlen, dst + got + n, max - got - n);
        got += n;
        s_forget(q, n);
        if (it->off == it->hlen + blen + it->tlen) {
            q->head = it->next;
            if (!q->head)
                q->tail = NULL;
            if (it->droppable)
                q->ndroppable--;
            s_item_free(it);
        }
    }
    return got;
}

size_t outq_unsent(const outq_t *q)
{
    return q->unsent;
}

unsigned long outq_dropped(const outq_t *q)
{
    return q->dropped;
}
