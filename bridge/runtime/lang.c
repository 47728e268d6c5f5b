/* lang: the adapter for a kernel's language. */
#include "lang.h"

#include <stddef.h>
#include <strings.h>

const lang_t *lang_find(const char *language)
{
    static const lang_t *const all[] = {&lang_python, &lang_r};
    for (size_t i = 0; language && i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(language, all[i]->name) == 0)
            return all[i];
    return NULL;
}
