/* nbjson (bridge/app/nbjson.c): the file API's JSON scanner accepts exactly
 * strict JSON (what jsontok's json-c settings accepted), bounds nesting, and
 * its writer gives nbformat's layout. Byte-level faults an HTTP client
 * cannot always produce (a lone byte 0xff, a NUL in the text) are here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nbjson.h"

static bool s_ok(const char *text, size_t len)
{
    char why[160];
    return nbjson_validate(text, len, NULL, why, sizeof why);
}
#define OK(t) s_ok(t, sizeof(t) - 1)

static void test_strict_grammar(void)
{
    static const char *const good[] = {"{}", "[]", "0", "-0", "1.5e-3", "\"a\"", " true ", "null", "false",
                                       "{\"a\":[1,{\"b\":null}]}", "\"\\ud83d\\ude00\\u0000\"", "\"é✓😀\""};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECK(s_ok(good[i], strlen(good[i])));
    static const char *const bad[] = {"", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "1e", "+1", "-",
                                      "tru", "nul", "\"a", "\"\\x\"", "\"\\u12\"", "{a:1}", "[1 2]", "{} {}",
                                      "'a'", "\"\t\"", "NaN", "[1]]", "{\"a\" 1}", "\"\\"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (s_ok(bad[i], strlen(bad[i])))
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK(!s_ok(bad[i], strlen(bad[i])));
    }
    CHECK(!OK("\"\xff\""));      /* invalid UTF-8 */
    CHECK(!OK("\"\xc0\xaf\""));  /* overlong */
    CHECK(!OK("[1]\0"));         /* a NUL after the value */
    CHECK(!OK("\"a\0b\""));      /* a raw NUL in a string */
}

static void test_depth_is_bounded(void)
{
    char text[300];
    for (int d = 60; d <= 70; d++) {
        memset(text, '[', (size_t)d);
        memset(text + d, ']', (size_t)d);
        char why[160] = "";
        bool ok = nbjson_validate(text, 2 * (size_t)d, NULL, why, sizeof why);
        CHECK(ok == (d <= NBJSON_DEPTH));
        if (!ok)
            CHECK(strstr(why, "nested deeper than 64 levels") != NULL);
    }
}

static void test_layout(void)
{
    const char *in = "{\"b\":[1,{},[]],\"a\":\"x\\u00e9\\n\",\"d\":1,\"d\":2,\"c\":{\"z\":-0,\"y\":2.50}}";
    char why[160];
    nbjson_t *j = nbjson_parse(in, strlen(in), why, sizeof why);
    CHECK(j != NULL);
    buf_t b;
    buf_init(&b, 0);
    CHECK(nbjson_write_nb(j, 0, &b) == 0);
    buf_putc(&b, '\0');
    CHECK_EQ_STR(b.data, "{\n \"a\": \"xé\\n\",\n \"b\": [\n  1,\n  {},\n  []\n ],\n \"c\": {\n  \"y\": 2.50,\n"
                         "  \"z\": 0\n },\n \"d\": 2\n}");
    CHECK(nbjson_member(j, 0, "d") >= 0 && nbjson_type(j, (uint32_t)nbjson_member(j, 0, "d")) == NBJSON_NUMBER);
    CHECK(nbjson_member(j, 0, "nope") < 0);
    buf_free(&b);
    /* A writer that would pass the cap stops there. */
    buf_init(&b, 10);
    CHECK(nbjson_write_nb(j, 0, &b) < 0);
    buf_free(&b);
    nbjson_free(&j);
    CHECK(j == NULL);
}

int main(void)
{
    RUN_CASE(test_strict_grammar);
    RUN_CASE(test_depth_is_bounded);
    RUN_CASE(test_layout);
    return check_report("nbjson");
}
