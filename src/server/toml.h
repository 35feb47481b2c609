/* A small, strict TOML reader for the subset sluiced's configuration uses:
 * comments, [table] and [dotted.table] headers, [[arrays.of.tables]], bare
 * keys, basic and literal strings, decimal integers, booleans and one-line
 * inline tables of those ({ tcp = 8090, http = 3000 }). Everything else is a
 * clear error.
 *
 * The parser builds a flat list of entries named "table.key". Element n of
 * an array of tables is the table "name.n" ([[cluster.nodes]] twice gives
 * "cluster.nodes.0" and "cluster.nodes.1", and a [cluster.nodes.sub] header
 * after them belongs to "cluster.nodes.1.sub"); an inline table's pairs are
 * entries below its key ("cluster.nodes.0.ports.tcp"). It keeps no
 * global state, never recurses, and never asserts on input: every problem in
 * the text is reported as an error with a 1-based line and byte column. */
#ifndef SL_SERVER_TOML_H
#define SL_SERVER_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/assert.h"

/* A configuration file has a few dozen keys; these caps keep the duplicate
 * checks (linear scans) cheap on hostile input. */
#define SL_TOML_ENTRIES_MAX 1024u
#define SL_TOML_TABLES_MAX  256u
/* [a.b.c] has depth 3. Our deepest table is [system.sharding]. */
#define SL_TOML_DEPTH_MAX 16u
/* Input bytes parsed at most; the config loader reads files up to this
 * too, and it keeps line and column numbers well inside 32 bits. */
#define SL_TOML_INPUT_MAX (1u << 20)
/* Bytes of a full dotted name ("system.partition.validate_checksum"). */
#define SL_TOML_NAME_MAX 255u

typedef enum sl_toml_type {
    SL_TOML_STRING = 1,
    SL_TOML_INTEGER = 2,
    SL_TOML_BOOL = 3,
} sl_toml_type_t;

typedef struct sl_toml_value {
    sl_toml_type_t type;
    /* SL_TOML_STRING: the decoded text, NUL-terminated, never containing a
     * NUL byte (\u0000 is refused), valid UTF-8. */
    const char *string;
    size_t string_len;
    int64_t integer; /* SL_TOML_INTEGER */
    bool boolean;    /* SL_TOML_BOOL */
    /* Where the value starts, for errors about its meaning. */
    uint32_t line;
    uint32_t column;
} sl_toml_value_t;

typedef struct sl_toml_entry {
    /* The full dotted name: "tcp.address", or "key" for a key before any
     * table header. */
    const char *name;
    /* Bytes of name that name the table (0 at the root). */
    size_t table_len;
    /* Where the key starts. */
    uint32_t line;
    uint32_t column;
    sl_toml_value_t value;
} sl_toml_entry_t;

/* The parsed document. Entries appear in file order. All strings live in the
 * document's arena and stay valid until sl_toml_doc_free. */
typedef struct sl_toml_doc {
    sl_toml_entry_t *entries;
    uint32_t count;
    /* private to toml.c */
    uint32_t entry_capacity;
    const char **tables; /* table headers written explicitly, in order */
    uint32_t table_count;
    sl_arena_t arena;
} sl_toml_doc_t;

typedef struct sl_toml_error {
    uint32_t line;   /* 1-based; 0 when the error has no position */
    uint32_t column; /* 1-based byte column */
    char message[160];
} sl_toml_error_t;

/* Parses len bytes of text (no NUL terminator needed) into doc. On failure
 * returns -SL_ERR_INVALID_CONFIGURATION, fills err and leaves doc empty
 * (still to be freed). doc must not be initialised by the caller. */
SL_WUR int sl_toml_parse(const char *text, size_t len, sl_toml_doc_t *doc, sl_toml_error_t *err);
/* Frees everything the document owns; safe on an empty or failed document. */
void sl_toml_doc_free(sl_toml_doc_t *doc);
/* The entry with that full dotted name, or NULL. */
const sl_toml_entry_t *sl_toml_find(const sl_toml_doc_t *doc, const char *name);

/* Writes "file:line:column: message" (or "file: message" without a position). */
void sl_toml_error_format(const sl_toml_error_t *err, const char *file, char *buf, size_t len);

/* Parses a whole TOML decimal integer ("-1_000", "+7", "0"): optional sign,
 * no leading zeros, '_' only between digits, overflow refused. Returns 0, or
 * -SL_ERR_INVALID_CONFIGURATION with *why set to a static message. Shared
 * with the environment-variable parser so both read numbers alike. */
SL_WUR int sl_toml_parse_integer(const char *text, size_t len, int64_t *out, const char **why);

/* The name of a value type for messages ("string", "integer", "boolean"). */
const char *sl_toml_type_name(sl_toml_type_t type);

#endif
