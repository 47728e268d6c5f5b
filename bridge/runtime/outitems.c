/* outitems: a run's outputs in order, as bounded JSON items (outitems.h). */
#include "outitems.h"

#include <string.h>

#include "buf.h"
#include "mem.h"
#include "output.h"
#include "utf8.h"

struct outitems {
    json_object *items;     /* owned array */
    size_t bytes;           /* text bytes held */
    size_t dropped, dropped_bytes;
    /* The last item, while it is a stream item still growing: its text is
     * gathered here and set on the item when it ends or is read (json-c
     * strings are immutable; setting it per chunk would copy it each time). */
    int last_stream;        /* -1: the last item is not a growing stream */
    buf_t last_text;
};

outitems_t *outitems_new(void)
{
    outitems_t *self = xcalloc(1, sizeof *self);
    self->items = json_object_new_array();
    self->last_stream = -1;
    buf_init(&self->last_text, 0);
    return self;
}

void outitems_destroy(outitems_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    outitems_t *self = *self_p;
    json_object_put(self->items);
    buf_free(&self->last_text);
    free(self);
    *self_p = NULL;
}

/* Sets the growing stream item's text. */
static void s_sync(const outitems_t *self)
{
    if (self->last_stream < 0)
        return;
    json_object *it = json_object_array_get_idx(self->items, json_object_array_length(self->items) - 1);
    json_object_object_add(it, "text", json_object_new_string_len(self->last_text.data ? self->last_text.data : "",
                                                                  (int)self->last_text.len));
}

static void s_end_stream(outitems_t *self)
{
    s_sync(self);
    self->last_stream = -1;
    buf_reset(&self->last_text);
}

/* Whether one more item fits; counts it as dropped otherwise. */
static bool s_room(outitems_t *self)
{
    if (json_object_array_length(self->items) < OUTITEMS_MAX)
        return true;
    self->dropped++;
    return false;
}

void outitems_stream(outitems_t *self, int stream, const char *text, size_t len)
{
    stream = stream ? 1 : 0;
    size_t room = OUTITEMS_BYTES > self->bytes ? OUTITEMS_BYTES - self->bytes : 0;
    size_t take = len <= room ? len : utf8_floor(text, len, room);
    self->dropped_bytes += len - take;
    if (!take)
        return;
    if (self->last_stream != stream) {
        if (!s_room(self)) {
            self->dropped_bytes += take;
            return;
        }
        s_end_stream(self);
        json_object *it = json_object_new_object();
        json_object_object_add(it, "type", json_object_new_string("stream"));
        json_object_object_add(it, "name", json_object_new_string(stream ? "stderr" : "stdout"));
        json_object_object_add(it, "text", json_object_new_string(""));
        json_object_array_add(self->items, it);
        self->last_stream = stream;
    }
    buf_append(&self->last_text, text, take);
    self->bytes += take;
}

/* The text parts of a bundle a client can show as they are. */
static const char *const s_text_mimes[] = {"text/plain", "text/markdown", "text/latex", "application/json"};

json_object *outitems_bundle(outitems_t *self, const char *msg_type, json_object *content, json_object *assets)
{
    s_end_stream(self);
    if (!s_room(self)) {
        json_object_put(assets);
        return NULL;
    }
    json_object *it = json_object_new_object(), *data = json_object_new_object(), *d = NULL, *v = NULL;
    json_object_object_add(it, "type", json_object_new_string(msg_type));
    if (json_object_object_get_ex(content, "data", &d) && json_object_is_type(d, json_type_object)) {
        for (size_t i = 0; i < sizeof s_text_mimes / sizeof s_text_mimes[0]; i++) {
            if (!json_object_object_get_ex(d, s_text_mimes[i], &v))
                continue;
            const char *s;
            size_t n;
            if (json_object_is_type(v, json_type_string)) {
                s = json_object_get_string(v);
                n = (size_t)json_object_get_string_len(v);
            } else {
                s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
                n = strlen(s);
            }
            if (n > OUTITEMS_PART_MAX || self->bytes + n > OUTITEMS_BYTES) {
                self->dropped_bytes += n;
                continue;
            }
            self->bytes += n;
            if (i == 0) {
                /* text/plain as the text result shows it (ANSI removed). */
                buf_t clean;
                buf_init(&clean, 0);
                output_clean_text(s, n, &clean);
                json_object_object_add(data, s_text_mimes[i], json_object_new_string_len(buf_str(&clean), (int)clean.len));
                buf_free(&clean);
                continue;
            }
            json_object_object_add(data, s_text_mimes[i], json_object_new_string_len(s, (int)n));
        }
    }
    json_object_object_add(it, "data", data);
    json_object_object_add(it, "assets", assets ? assets : json_object_new_array());
    json_object *tr = NULL, *id = NULL, *n = NULL;
    if (json_object_object_get_ex(content, "transient", &tr) && json_object_object_get_ex(tr, "display_id", &id) &&
        json_object_is_type(id, json_type_string))
        json_object_object_add(it, "display_id", json_object_new_string(json_object_get_string(id)));
    if (json_object_object_get_ex(content, "execution_count", &n) && json_object_is_type(n, json_type_int))
        json_object_object_add(it, "execution_count", json_object_new_int64(json_object_get_int64(n)));
    json_object_array_add(self->items, it);
    return it;
}

json_object *outitems_clear(outitems_t *self)
{
    s_end_stream(self);
    json_object_put(self->items);
    self->items = json_object_new_array();
    self->bytes = 0;
    json_object *it = json_object_new_object();
    json_object_object_add(it, "type", json_object_new_string("clear_output"));
    json_object_array_add(self->items, it);
    return it;
}

void outitems_reset(outitems_t *self)
{
    s_end_stream(self);
    json_object_put(self->items);
    self->items = json_object_new_array();
    self->bytes = self->dropped = self->dropped_bytes = 0;
}

json_object *outitems_json(const outitems_t *self)
{
    s_sync(self);
    return json_object_get(self->items);
}

void outitems_dropped(const outitems_t *self, size_t *items, size_t *bytes)
{
    *items = self->dropped;
    *bytes = self->dropped_bytes;
}
