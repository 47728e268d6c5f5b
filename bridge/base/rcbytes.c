/* rcbytes: immutable bytes shared by reference count (rcbytes.h). */
#include "rcbytes.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"

struct rcbytes {
    size_t refs;
    size_t len;
    char data[]; /* len bytes, then a NUL */
};

rcbytes_t *rcbytes_new(const void *data, size_t len)
{
    rcbytes_t *b = xmalloc(sizeof *b + len + 1);
    b->refs = 1;
    b->len = len;
    if (len)
        memcpy(b->data, data, len);
    b->data[len] = '\0';
    return b;
}

rcbytes_t *rcbytes_ref(rcbytes_t *b)
{
    b->refs++;
    return b;
}

void rcbytes_unref(rcbytes_t **b_p)
{
    rcbytes_t *b = *b_p;
    *b_p = NULL;
    if (b && --b->refs == 0)
        free(b);
}

const char *rcbytes_data(const rcbytes_t *b)
{
    return b->data;
}

size_t rcbytes_len(const rcbytes_t *b)
{
    return b->len;
}

size_t rcbytes_refs(const rcbytes_t *b)
{
    return b->refs;
}
