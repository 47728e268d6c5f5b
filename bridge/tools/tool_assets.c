/* tool_assets: assets as MCP resources (resources/list, resources/read), so
 * stdio clients can fetch the images and HTML that runs produced. */
#define LOG_MODULE "resources"
#include "tools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "assets.h"
#include "fileio.h"
#include "jsonrpc.h"
#include "mem.h"

#define URI_PREFIX "rat://assets/"

static void s_list(json_object *arr, void *ud)
{
    tools_ctx_t *ctx = ud;
    assets_entry_t *list = NULL;
    size_t n = ctx->assets ? assets_list(ctx->assets, &list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_new_object();
        char *uri = xasprintf(URI_PREFIX "%s", list[i].id);
        json_object_object_add(r, "uri", json_object_new_string(uri));
        json_object_object_add(r, "name", json_object_new_string(list[i].id));
        json_object_object_add(r, "mimeType", json_object_new_string(list[i].mime));
        json_object_object_add(r, "size", json_object_new_int64((int64_t)list[i].size));
        json_object_object_add(r, "description", json_object_new_string("An output saved by a run"));
        json_object_array_add(arr, r);
        free(uri);
    }
    free(list);
}

static bool s_read(mcp_call_t *call, const char *uri, void *ud)
{
    tools_ctx_t *ctx = ud;
    const char *mime = NULL;
    char *path = NULL;
    if (ctx->assets && strncmp(uri, URI_PREFIX, strlen(URI_PREFIX)) == 0)
        path = assets_path(ctx->assets, uri + strlen(URI_PREFIX), &mime);
    if (!path)
        return false;
    size_t len = 0;
    char *data = fileio_read(path, ASSETS_DEFAULT_MAX_ONE, &len);
    free(path);
    if (!data) {
        char msg[300];
        snprintf(msg, sizeof msg, "Resource could not be read: %s", strerror(errno));
        mcp_call_error(call, JSONRPC_INTERNAL_ERROR, msg);
        return true;
    }
    json_object *item = json_object_new_object();
    json_object_object_add(item, "uri", json_object_new_string(uri));
    json_object_object_add(item, "mimeType", json_object_new_string(mime));
    if (strncmp(mime, "image/png", 9) == 0 || strncmp(mime, "image/jpeg", 10) == 0) {
        size_t cap = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
        char *b64 = xmalloc(cap);
        sodium_bin2base64(b64, cap, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
        json_object_object_add(item, "blob", json_object_new_string(b64));
        free(b64);
    } else {
        json_object_object_add(item, "text", json_object_new_string_len(data, (int)len));
    }
    free(data);
    json_object *contents = json_object_new_array();
    json_object_array_add(contents, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    mcp_call_reply(call, res);
    return true;
}

void tool_assets_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    mcp_server_set_resource_provider(srv, s_list, s_read, ctx);
}
