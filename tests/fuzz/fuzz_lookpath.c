/* fuzz_lookpath: look's dot-path parser.
 *
 * The input is a path (cut at its first NUL, as a C string from JSON would
 * be). Checked: either a JSON array of at most LOOKPATH_MAX_SEGMENTS
 * {"t": name|key|index, "v": string|integer} objects in valid UTF-8, or NULL
 * with a non-empty error message; the message goes into an MCP result, so it
 * must be valid UTF-8 whenever the path was. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "lookpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 1);
    memcpy(path, data, size);
    path[size] = '\0';
    size_t plen = strlen(path);
    char err[512];
    memset(err, 'X', sizeof err);
    char *segs = lookpath_parse(path, err, sizeof err);
    if (segs) {
        size_t len = strlen(segs);
        FUZZ_ASSERT(fuzz_utf8_ok(segs, len));
        json_object *arr = fuzz_parse_json(segs, len);
        FUZZ_ASSERT(arr && json_object_is_type(arr, json_type_array));
        size_t n = json_object_array_length(arr);
        FUZZ_ASSERT(n >= 1 && n <= LOOKPATH_MAX_SEGMENTS);
        for (size_t i = 0; i < n; i++) {
            json_object *seg = json_object_array_get_idx(arr, i), *t = NULL, *v = NULL;
            FUZZ_ASSERT(json_object_is_type(seg, json_type_object));
            FUZZ_ASSERT(json_object_object_get_ex(seg, "t", &t) && json_object_is_type(t, json_type_string));
            FUZZ_ASSERT(json_object_object_get_ex(seg, "v", &v));
            const char *ts = json_object_get_string(t);
            if (strcmp(ts, "index") == 0)
                FUZZ_ASSERT(json_object_is_type(v, json_type_int));
            else
                FUZZ_ASSERT((strcmp(ts, "name") == 0 || strcmp(ts, "key") == 0) &&
                            json_object_is_type(v, json_type_string));
            /* The first segment is always a name. */
            FUZZ_ASSERT(i > 0 || strcmp(ts, "name") == 0);
        }
        json_object_put(arr);
        free(segs);
    } else {
        size_t elen = strnlen(err, sizeof err);
        FUZZ_ASSERT(elen > 0 && elen < sizeof err);
        if (fuzz_utf8_ok(path, plen))
            FUZZ_ASSERT(fuzz_utf8_ok(err, elen));
    }
    free(path);
    return 0;
}
