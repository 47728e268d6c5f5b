/* yaml_block: reads and edits the two top levels of a block-style YAML
 * mapping, line by line, keeping every other byte of the file as it was.
 *
 * Made for configuration files such as mcp2cli's:
 *     version: 1
 *     servers:
 *         py:
 *             command: /usr/local/bin/rat-py --cwd /home/me/project
 *             expose:
 *                 - py
 * Here `servers` is a section and `py` one of its entries. An edit replaces,
 * adds or removes one entry's lines; comments, other entries and their
 * formatting are untouched (a parse-and-re-emit would drop comments and
 * restyle the user's file). The file is untrusted input: it is parsed only as
 * far as needed, and any construct this module cannot edit safely (flow
 * style for the section, tabs in indentation, several documents, anchors in
 * the entry being replaced, ...) is an error naming the line, never a guess. */
#ifndef RAT_YAML_BLOCK_H
#define RAT_YAML_BLOCK_H

#include <stdbool.h>
#include <stddef.h>

#define YAML_BLOCK_MAX_TEXT (1u << 20)   /* bytes of YAML accepted */
#define YAML_BLOCK_MAX_LINES 20000

typedef struct yaml_block yaml_block_t;

/* One line of an entry to write: its depth below the entry's key line (1 for
 * the entry's own keys, 2 below those, ...) and its text without indentation. */
typedef struct {
    int depth;
    const char *text;
} yaml_block_line_t;

/* Parses text (NULL or "" for an empty document). Returns NULL with err
 * filled ("line N: ...") when the top levels are not block mappings this
 * module can edit. Caller owns the result. */
yaml_block_t *yaml_block_parse(const char *text, size_t len, char *err, size_t errlen);
void yaml_block_destroy(yaml_block_t **self_p);

/* The whole document as text. Caller owns the result. */
char *yaml_block_text(const yaml_block_t *self);

/* Whether section.key exists. */
bool yaml_block_has(const yaml_block_t *self, const char *section, const char *key);
/* The keys of section's entries, in file order. Returns the count; *out
 * receives a NULL-terminated array the caller frees with strv_free (NULL
 * when the count is 0). */
size_t yaml_block_keys(const yaml_block_t *self, const char *section, char ***out);
/* The scalar value of section.key.sub (plain or quoted, on one line), or
 * NULL when absent or not a one-line scalar. Caller owns the result. */
char *yaml_block_scalar(const yaml_block_t *self, const char *section, const char *key, const char *sub);
/* The scalars of the sequence section.key.sub (block `- a` items or a flow
 * `[a, b]` on one line). Returns the count; *out receives a NULL-terminated
 * array the caller frees with strv_free (NULL when the count is 0). */
size_t yaml_block_list(const yaml_block_t *self, const char *section, const char *key, const char *sub,
                       char ***out);

/* Replaces section.key with the given lines (or appends it at the end of
 * the section, creating the section when missing). Indentation follows the
 * section's existing entries (4 spaces, yaml.v3's style, when it has none).
 * Returns 0, or -1 with err filled (e.g. the old entry defines an anchor
 * that other parts of the file may use). */
int yaml_block_set(yaml_block_t *self, const char *section, const char *key, const yaml_block_line_t *lines,
                   size_t nlines, char *err, size_t errlen);
/* Removes section.key. Returns 1 when removed, 0 when it was not there, -1
 * with err filled when it cannot be removed safely. */
int yaml_block_remove(yaml_block_t *self, const char *section, const char *key, char *err, size_t errlen);

/* s as a YAML scalar: plain when that reads back as the same string,
 * double-quoted with escapes otherwise. Caller owns the result. */
char *yaml_block_quote(const char *s);

#endif
