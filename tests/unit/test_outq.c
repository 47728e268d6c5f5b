/* Unit tests of the shared, budgeted send queues (bridge/base/outq.c,
 * rcbytes.c): one body referenced by many queues, reads in any sizes, and
 * the total budget (the slowest queue loses its oldest droppable items
 * first, which a reader sees as a gap in the numbers the items carry). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "outq.h"

/* Reads everything q holds, max bytes at a time, into a fresh string. */
static char *s_drain(outq_t *q, size_t max)
{
    size_t cap = outq_unsent(q) + 1, len = 0;
    char *s = malloc(cap);
    size_t n;
    while ((n = outq_read(q, s + len, max)) > 0)
        len += n;
    s[len] = '\0';
    return s;
}

/* Pushes an event numbered seq, framed like an SSE event: the body is
 * "<seq>:" padded with x to pad bytes. */
static void s_push_seq(outq_t *q, int seq, size_t pad, bool droppable)
{
    char body[256];
    int n = snprintf(body, sizeof body, "%d:", seq);
    while ((size_t)n < pad && (size_t)n < sizeof body - 1)
        body[n++] = 'x';
    rcbytes_t *b = rcbytes_new(body, (size_t)n);
    outq_push(q, "[", 1, b, "]", 1, droppable);
    rcbytes_unref(&b);
}

static void test_shared_body_is_referenced(void)
{
    outq_group_t *g = outq_group_new(0);
    outq_t *q[3];
    for (int i = 0; i < 3; i++)
        q[i] = outq_new(g);
    rcbytes_t *b = rcbytes_new("{\"seq\":1}", 9);
    for (int i = 0; i < 3; i++) {
        char head[16];
        int n = snprintf(head, sizeof head, "id: %d\n", i);
        outq_push(q[i], head, (size_t)n, b, "\n\n", 2, true);
    }
    CHECK_EQ_INT(rcbytes_refs(b), 4);                 /* ours and one per queue: no copies */
    CHECK_EQ_INT(outq_group_unsent(g), 3 * (6 + 9 + 2)); /* each queue counts what it has to send */
    char *s = s_drain(q[1], 1 << 16);
    CHECK_EQ_STR(s, "id: 1\n{\"seq\":1}\n\n");
    free(s);
    CHECK_EQ_INT(rcbytes_refs(b), 3);                 /* read out: q[1]'s reference is gone */
    CHECK_EQ_INT(outq_unsent(q[1]), 0);
    for (int i = 0; i < 3; i++)
        outq_destroy(&q[i]);
    CHECK(q[0] == NULL);
    CHECK_EQ_INT(rcbytes_refs(b), 1);
    CHECK_EQ_INT(outq_group_unsent(g), 0);
    rcbytes_unref(&b);
    CHECK(b == NULL);
    outq_group_destroy(&g);
}

static void test_reads_in_small_pieces(void)
{
    outq_t *q = outq_new(NULL);
    s_push_seq(q, 1, 10, true);
    outq_push(q, ": keepalive\n\n", 13, NULL, NULL, 0, false);
    s_push_seq(q, 2, 0, false);
    rcbytes_t *empty = rcbytes_new("", 0);
    outq_push(q, "", 0, empty, "", 0, true); /* an item of no bytes at all */
    rcbytes_unref(&empty);
    char *s = s_drain(q, 3);
    CHECK_EQ_STR(s, "[1:xxxxxxxx]: keepalive\n\n[2:]");
    free(s);
    CHECK_EQ_INT(outq_unsent(q), 0);
    CHECK_EQ_INT(outq_read(q, (char[4]){0}, 4), 0);
    outq_destroy(&q);
}

static void test_budget_slowest_loses_oldest(void)
{
    /* Items of 22 bytes ("[" + 20 + "]"); a budget of 100 bytes. The fast
     * reader reads each event as it comes; the slow one never reads. */
    outq_group_t *g = outq_group_new(100);
    outq_t *slow = outq_new(g), *fast = outq_new(g);
    for (int seq = 1; seq <= 8; seq++) {
        s_push_seq(slow, seq, 20, true);
        s_push_seq(fast, seq, 20, true);
        char *s = s_drain(fast, 1 << 16);
        int got = 0;
        CHECK(sscanf(s, "[%d:", &got) == 1 && got == seq); /* the fast reader lost nothing */
        free(s);
        CHECK(outq_group_unsent(g) <= 100);
    }
    CHECK_EQ_INT(outq_dropped(fast), 0);
    CHECK(outq_dropped(slow) > 0);
    CHECK_EQ_INT(outq_group_dropped(g), outq_dropped(slow));
    /* What the slow reader gets: the newest events, in order, after a gap
     * in seq where the oldest were. */
    char *s = s_drain(slow, 1 << 16);
    size_t n = strlen(s) / 22;
    CHECK_EQ_INT(n + outq_dropped(slow), 8);
    for (size_t i = 0; i < n; i++) {
        int got = 0;
        CHECK(sscanf(s + 22 * i, "[%d:", &got) == 1 && got == (int)(8 - n + 1 + i));
    }
    free(s);
    outq_destroy(&slow);
    outq_destroy(&fast);
    outq_group_destroy(&g);
}

static void test_budget_takes_from_the_largest(void)
{
    outq_group_t *g = outq_group_new(100);
    outq_t *a = outq_new(g), *b = outq_new(g);
    s_push_seq(a, 1, 20, true);
    s_push_seq(a, 2, 20, true);
    s_push_seq(a, 3, 20, true); /* a: 66 */
    s_push_seq(b, 1, 20, true); /* b: 22, total 88 */
    s_push_seq(b, 2, 20, true); /* total 110: a, the larger, loses its oldest */
    CHECK_EQ_INT(outq_dropped(a), 1);
    CHECK_EQ_INT(outq_dropped(b), 0);
    CHECK_EQ_INT(outq_unsent(a), 44);
    CHECK_EQ_INT(outq_unsent(b), 44);
    char *s = s_drain(a, 1 << 16);
    CHECK(strncmp(s, "[2:", 3) == 0); /* seq 1 is the gap */
    free(s);
    outq_destroy(&a);
    outq_destroy(&b);
    outq_group_destroy(&g);
}

static void test_budget_spares_responses_and_started_items(void)
{
    outq_group_t *g = outq_group_new(50);
    outq_t *q = outq_new(g);
    s_push_seq(q, 1, 20, true);
    char c[5];
    CHECK_EQ_INT(outq_read(q, c, 5), 5); /* seq 1 has started to go out */
    s_push_seq(q, 2, 20, false);          /* a response: never dropped */
    s_push_seq(q, 3, 20, true);           /* 17 + 22 + 22 = 61 > 50: seq 3 goes */
    CHECK_EQ_INT(outq_dropped(q), 1);
    s_push_seq(q, 4, 20, false);          /* over budget with nothing droppable: kept */
    CHECK_EQ_INT(outq_dropped(q), 1);
    CHECK_EQ_INT(outq_unsent(q), 17 + 22 + 22);
    char *s = s_drain(q, 7);
    CHECK(strncmp(s, "xxxxxxxxxxxxxxxx][2:", 20) == 0);
    CHECK(strstr(s, "[3:") == NULL);
    CHECK(strstr(s, "[4:") != NULL);
    free(s);
    outq_destroy(&q);
    outq_group_destroy(&g);
}

int main(void)
{
    RUN_CASE(test_shared_body_is_referenced);
    RUN_CASE(test_reads_in_small_pieces);
    RUN_CASE(test_budget_slowest_loses_oldest);
    RUN_CASE(test_budget_takes_from_the_largest);
    RUN_CASE(test_budget_spares_responses_and_started_items);
    return check_report("outq");
}
