/* yaml_block: reads and edits one entry of a two-level YAML mapping,
 * keeping every other byte of the file as it was.
 *
 * Made for configuration files such as mcp2cli's:
 *     version: 1
 *     servers:
 *         py:
 *             command: /usr/local/bin/rat-py --cwd /home/me/project
 *             expose:
 *                 - py
 * Here `servers` is a section and `py` one of its entries. The text is parsed
 * by libyaml (a real YAML parser: every escape, quoting style, flow or block
 * collection, anchor and comment as the reader sees them); an edit splices
 * new text in at the byte positions libyaml reports for the entry, so
 * comments, other entries and their formatting are untouched (a
 * parse-and-re-emit would drop comments and restyle the user's file).
 *
 * The file is untrusted input. A document that mcp2cli's parser would reject
 * (a syntax error, a key twice in one mapping, several documents) or that
 * cannot be edited safely (a merge key `<<` or a non-scalar key in a mapping
 * being edited, an anchor in the entry being replaced that an alias elsewhere
 * uses, line breaks other than \n and \r\n) is an error naming the line, and
 * the text is left as it was. Every edit is parsed again before it is kept:
 * an edit that would not read back as intended is refused, never written. */
#ifndef RAT_YAML_BLOCK_H
#define RAT_YAML_BLOCK_H

#include <stdbool.h>
#include <stddef.h>

#define YAML_BLOCK_MAX_TEXT (1u << 20)   /* bytes of YAML accepted */
#define YAML_BLOCK_MAX_NODES 100000      /* scalars + collections + aliases */
#define YAML_BLOCK_MAX_DEPTH 64          /* collections nested in each other */
#define YAML_BLOCK_MAX_ALIASES 1000      /* *name references */

typedef struct yaml_block yaml_block_t;

/* One field of an entry to write: `key: scalar`, or `key:` followed by the
 * sequence items[0..nitems) when items is not NULL. */
typedef struct {
    const char *key;
    const char *scalar;
    const char *const *items;
    size_t nitems;
} yaml_block_field_t;

/* Parses text (NULL or "" for an empty document). Returns NULL with err
 * filled ("line N: ...") when the text is not one YAML document whose top
 * level is a mapping, or is one mcp2cli would reject. Caller owns the
 * result. */
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
/* The scalar value of section.key.sub, or NULL when absent or not a scalar.
 * Caller owns the result. */
char *yaml_block_scalar(const yaml_block_t *self, const char *section, const char *key, const char *sub);
/* The scalars of the sequence section.key.sub. Returns the count; *out
 * receives a NULL-terminated array the caller frees with strv_free (NULL
 * when the count is 0). */
size_t yaml_block_list(const yaml_block_t *self, const char *section, const char *key, const char *sub,
                       char ***out);

/* Replaces section.key with a mapping of the given fields (or adds it at the
 * end of the section, creating the section when missing), in the style of
 * its surroundings: block lines indented as the section's entries are (4
 * spaces, yaml.v3's style, when it has none), or a flow mapping inside a
 * flow collection. Returns 0, or -1 with err filled and the text unchanged. */
int yaml_block_set(yaml_block_t *self, const char *section, const char *key, const yaml_block_field_t *fields,
                   size_t nfields, char *err, size_t errlen);
/* Removes section.key. Returns 1 when removed, 0 when it was not there, -1
 * with err filled (text unchanged) when it cannot be removed safely. */
int yaml_block_remove(yaml_block_t *self, const char *section, const char *key, char *err, size_t errlen);

/* s as a YAML scalar: plain when that reads back as the same string (in
 * block and flow context alike), double-quoted with escapes otherwise.
 * Caller owns the result. */
char *yaml_block_quote(const char *s);

#endif
