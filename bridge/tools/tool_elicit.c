/* tool_elicit: elicitation/create for input(), and its untrusted reply. */
#include "tool_elicit.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mem.h"
#include "utf8.h"

/* The field's description: the prompt less its trailing spaces and one
 * colon. Terminal clients print a field as `<description>: ` (mcp2cli,
 * mcptocli), so "Name: " would read `Name: : `; other clients show it as
 * the field's help text, where the colon adds nothing. */
static json_object *s_label(const char *prompt)
{
    size_t n = prompt ? strlen(prompt) : 0;
    while (n && strchr(" \t\r\n", prompt[n - 1]))
        n--;
    if (n && prompt[n - 1] == ':')
        n--;
    while (n && strchr(" \t", prompt[n - 1]))
        n--;
    return n ? json_object_new_string_len(prompt, (int)n) : json_object_new_string("Your answer");
}

json_object *tool_elicit_params(const char *prompt)
{
    json_object *params = json_object_new_object();
    char *msg = xasprintf("The running code asks for input: %s", prompt && *prompt ? prompt : "(no prompt)");
    json_object_object_add(params, "message", json_object_new_string(msg));
    free(msg);
    json_object *value = json_object_new_object();
    json_object_object_add(value, "type", json_object_new_string("string"));
    json_object_object_add(value, "title", json_object_new_string("Input"));
    json_object_object_add(value, "description", s_label(prompt));
    json_object *props = json_object_new_object();
    json_object_object_add(props, "value", value);
    json_object *required = json_object_new_array();
    json_object_array_add(required, json_object_new_string("value"));
    json_object *schema = json_object_new_object();
    json_object_object_add(schema, "type", json_object_new_string("object"));
    json_object_object_add(schema, "properties", props);
    json_object_object_add(schema, "required", required);
    json_object_object_add(params, "requestedSchema", schema);
    return params;
}

long tool_elicit_request(mcp_call_t *call, const char *prompt, mcp_response_fn *fn, void *ud)
{
    return mcp_call_request(call, "elicitation/create", tool_elicit_params(prompt), fn, ud);
}

tool_elicit_kind_t tool_elicit_reply(json_object *result, json_object *error, const char **value, const char **why)
{
    *value = NULL;
    *why = NULL;
    json_object *message = NULL;
    if (!result) {
        /* A JSON-RPC error: mcp checked that message is a string. */
        *why = json_object_object_get_ex(error, "message", &message) && json_object_is_type(message, json_type_string)
                   ? json_object_get_string(message)
                   : "unknown error";
        return TOOL_ELICIT_FAILED;
    }
    json_object *action = NULL, *content = NULL, *v = NULL;
    if (!json_object_is_type(result, json_type_object)) {
        *why = "the result is not an object";
        return TOOL_ELICIT_INVALID;
    }
    if (!json_object_object_get_ex(result, "action", &action) || !json_object_is_type(action, json_type_string)) {
        *why = "\"action\" must be \"accept\", \"decline\" or \"cancel\"";
        return TOOL_ELICIT_INVALID;
    }
    const char *a = json_object_get_string(action);
    if (strcmp(a, "decline") == 0 || strcmp(a, "cancel") == 0)
        return TOOL_ELICIT_DECLINE;
    if (strcmp(a, "accept") != 0) {
        *why = "\"action\" must be \"accept\", \"decline\" or \"cancel\"";
        return TOOL_ELICIT_INVALID;
    }
    if (!json_object_object_get_ex(result, "content", &content) || !json_object_is_type(content, json_type_object) ||
        !json_object_object_get_ex(content, "value", &v) || !json_object_is_type(v, json_type_string)) {
        *why = "an accepted reply needs content.value, a string";
        return TOOL_ELICIT_INVALID;
    }
    *value = json_object_get_string(v);
    return TOOL_ELICIT_ACCEPT;
}

char *tool_elicit_note(tool_elicit_kind_t kind, const char *why)
{
    if (kind != TOOL_ELICIT_INVALID && kind != TOOL_ELICIT_FAILED)
        return NULL;
    buf_t note;
    buf_init(&note, 0);
    if (kind == TOOL_ELICIT_INVALID) {
        buf_printf(&note, "the client's elicitation reply was not valid (%s)", why ? why : "?");
    } else {
        const char *w = why ? why : "";
        buf_puts(&note, "the elicitation failed: ");
        buf_put_json_str(&note, w, utf8_floor(w, strlen(w), 200));
    }
    return buf_take(&note);
}
