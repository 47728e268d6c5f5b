/* Unit tests: the client's roots (mcp_roots.h): which file: URIs are local,
 * absolute, well-encoded paths, and which root of a roots/list result wins. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mcp_roots.h"
#include "mem.h"

static void s_path_ok(const char *uri, const char *want)
{
    char err[300] = "";
    char *p = mcp_roots_file_path(uri, strlen(uri), err, sizeof err);
    CHECK_EQ_STR(p, want);
    if (!p)
        fprintf(stderr, "  %s: %s\n", uri, err);
    free(p);
}

static void s_path_bad(const char *uri, size_t len, const char *why)
{
    char err[300] = "";
    char *p = mcp_roots_file_path(uri, len, err, sizeof err);
    CHECK(p == NULL);
    CHECK(strstr(err, why) != NULL);
    if (!strstr(err, why))
        fprintf(stderr, "  %s: got \"%s\", want \"%s\"\n", uri, err, why);
    free(p);
}

/* file: URIs are client input: only local, absolute, well-encoded paths. */
static void test_root_uris(void)
{
    s_path_ok("file:///home/me/proj", "/home/me/proj");
    s_path_ok("FILE://localhost/home/me", "/home/me");
    s_path_ok("file://LocalHost/x", "/x");
    s_path_ok("file:/tmp/a", "/tmp/a");
    s_path_ok("file:///My%20Project/caf%C3%A9", "/My Project/caf\xc3\xa9");
    s_path_ok("file:///a+b", "/a+b");
    s_path_bad("https://example.com/x", 21, "not a file: URI");
    s_path_bad("file://server/share", 19, "names the host 'server'");
    s_path_bad("file://evil\x01host/x", 17, "names the host 'evil?host'");
    s_path_bad("file:relative/x", 15, "no absolute path");
    s_path_bad("file://localhost", 16, "no absolute path");
    s_path_bad("file:///x?y=1", 13, "query or a fragment");
    s_path_bad("file:///x#top", 13, "query or a fragment");
    s_path_bad("file:///x%2", 11, "two hex digits");
    s_path_bad("file:///x%zz", 12, "two hex digits");
    s_path_bad("file:///x%00y", 13, "NUL character (%00)");
    s_path_bad("file:///x\0y", 11, "contains a NUL");
    s_path_bad("file:///%FF%FE", 14, "not valid UTF-8");
    s_path_bad("file:///a%0Ab", 13, "control character");
    /* Long: a URI past the bound, and a path past PATH_MAX. */
    size_t big = MCP_ROOTS_URI_MAX + 10;
    char *u = xmalloc(big + 1);
    memcpy(u, "file:///", 8);
    memset(u + 8, 'a', big - 8);
    u[big] = '\0';
    s_path_bad(u, big, "longer than");
    s_path_bad(u, PATH_MAX + 20, "longer than");
    free(u);
    char *shown = mcp_roots_show("a\nb\x7f\xff", 5);
    CHECK_EQ_STR(shown, "a?b??");
    free(shown);
}

/* The first usable root wins; the ones before it are reported; a result
 * that is not {roots: [...]}, an empty list and a list with nothing usable
 * are errors that say why. */
static void test_roots_pick(void)
{
    char dir[] = "/tmp/rat-roots-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64], cmd[128];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    char text[1024];
    snprintf(text, sizeof text,
             "{\"roots\":[{\"uri\":\"https://x.org/\"},7,{\"uri\":\"file://%s\"},{\"uri\":\"file:///nonexistent-rat\"},"
             "{\"uri\":\"file://%s\",\"name\":\"p\"}]}",
             file, dir);
    json_object *res = json_tokener_parse(text);
    mcp_roots_pick_t p;
    char err[2048];
    CHECK_EQ_INT(mcp_roots_pick(res, &p, err, sizeof err), 0);
    CHECK_EQ_STR(p.dir, dir);
    CHECK_EQ_INT(p.count, 5);
    CHECK(p.problems && strstr(p.problems, "https://x.org/ is not a file: URI"));
    CHECK(p.problems && strstr(p.problems, "root 2 is not an object"));
    CHECK(p.problems && strstr(p.problems, "/f is not a directory"));
    CHECK(p.problems && strstr(p.problems, "nonexistent-rat is not a directory here (No such file"));
    mcp_roots_pick_free(&p);
    json_object_put(res);

    const char *bad[][2] = {
        {"{\"roots\":[]}", "shares no roots"},
        {"{\"roots\":{}}", "no \"roots\" array"},
        {"[]", "no \"roots\" array"},
        {"{\"roots\":[{\"uri\":\"file://host/x\"}]}", "none of the client's 1 root is"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        res = json_tokener_parse(bad[i][0]);
        CHECK_EQ_INT(mcp_roots_pick(res, &p, err, sizeof err), -1);
        CHECK(strstr(err, bad[i][1]) != NULL);
        CHECK(p.dir == NULL);
        mcp_roots_pick_free(&p);
        json_object_put(res);
    }
    /* A huge list: only the first MCP_ROOTS_MAX_CHECKED are read. */
    json_object *arr = json_object_new_array();
    for (int i = 0; i < 5000; i++) {
        json_object *r = json_object_new_object();
        json_object_object_add(r, "uri", json_object_new_string("file://elsewhere/x"));
        json_object_array_add(arr, r);
    }
    res = json_object_new_object();
    json_object_object_add(res, "roots", arr);
    CHECK_EQ_INT(mcp_roots_pick(res, &p, err, sizeof err), -1);
    CHECK(strstr(err, "5000 roots") != NULL);
    CHECK(strlen(err) < 2400);
    mcp_roots_pick_free(&p);
    json_object_put(res);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    RUN_CASE(test_root_uris);
    RUN_CASE(test_roots_pick);
    return check_report("test_mcp_roots");
}
