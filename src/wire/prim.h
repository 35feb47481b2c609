/* Shared body primitives (shared/protocol/encodings.md): Name, Identifier,
 * Consumer, optional partition id, Partitioning, polling strategy, ack level,
 * u8/u32-prefixed strings.
 *
 * Decoders read through an sl_reader_t and return false when the bytes do
 * not form the primitive (too short, bad kind, bad length, invalid UTF-8);
 * the command codec picks the error code (3 for requests, 4 for replies).
 * Decoded spans borrow the input buffer and live as long as it does.
 * Encoders append to an sl_buf_t and return false when the value cannot be
 * encoded (a name of 0 or more than 255 bytes, say) or the buffer failed. */
#ifndef SL_WIRE_PRIM_H
#define SL_WIRE_PRIM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"

/* --- strings ---------------------------------------------------------------- */

/* Name: [len u8 1..255][UTF-8]. */
bool sl_name_decode(sl_reader_t *r, sl_span_t *out);
bool sl_name_encode(sl_buf_t *b, sl_span_t name);
/* [len u8 0..255][UTF-8]: passwords and tokens, where empty is allowed. */
bool sl_str8_decode(sl_reader_t *r, sl_span_t *out);
bool sl_str8_encode(sl_buf_t *b, sl_span_t s);
/* Str32: [len u32][UTF-8] (stats, clients, cluster metadata). */
bool sl_str32_decode(sl_reader_t *r, sl_span_t *out);
bool sl_str32_encode(sl_buf_t *b, sl_span_t s);

/* --- identifier ---------------------------------------------------------------- */

typedef enum sl_ident_kind {
    SL_IDENT_NUMERIC = 1,
    SL_IDENT_STRING = 2,
} sl_ident_kind_t;

typedef struct sl_ident {
    uint8_t kind;    /* sl_ident_kind_t */
    uint32_t number; /* kind 1 */
    sl_span_t name;  /* kind 2: 1..255 bytes UTF-8 */
} sl_ident_t;

static inline sl_ident_t sl_ident_number(uint32_t id)
{
    return (sl_ident_t){.kind = SL_IDENT_NUMERIC, .number = id};
}
static inline sl_ident_t sl_ident_name(const char *name)
{
    return (sl_ident_t){.kind = SL_IDENT_STRING, .name = sl_span_str(name)};
}
bool sl_ident_eq(const sl_ident_t *a, const sl_ident_t *b);
bool sl_ident_decode(sl_reader_t *r, sl_ident_t *out);
bool sl_ident_encode(sl_buf_t *b, const sl_ident_t *id);

/* --- consumer -------------------------------------------------------------------- */

typedef enum sl_consumer_kind {
    SL_CONSUMER_SINGLE = 1,
    SL_CONSUMER_GROUP = 2,
} sl_consumer_kind_t;

typedef struct sl_consumer {
    uint8_t kind; /* sl_consumer_kind_t */
    sl_ident_t id;
} sl_consumer_t;

bool sl_consumer_decode(sl_reader_t *r, sl_consumer_t *out);
bool sl_consumer_encode(sl_buf_t *b, const sl_consumer_t *c);

/* --- optional partition id (5 fixed bytes) -------------------------------------------- */

typedef struct sl_opt_partition {
    bool present; /* flag byte == 1; any other flag is absent */
    uint32_t id;  /* 0 when absent */
} sl_opt_partition_t;

bool sl_opt_partition_decode(sl_reader_t *r, sl_opt_partition_t *out);
bool sl_opt_partition_encode(sl_buf_t *b, sl_opt_partition_t p);

/* --- partitioning ------------------------------------------------------------------------ */

typedef enum sl_partitioning_kind {
    SL_PARTITIONING_BALANCED = 1,
    SL_PARTITIONING_PARTITION_ID = 2,
    SL_PARTITIONING_MESSAGES_KEY = 3,
} sl_partitioning_kind_t;

typedef struct sl_partitioning {
    uint8_t kind;          /* sl_partitioning_kind_t */
    uint32_t partition_id; /* kind 2 */
    sl_span_t key;         /* kind 3: 1..255 raw bytes */
} sl_partitioning_t;

bool sl_partitioning_decode(sl_reader_t *r, sl_partitioning_t *out);
bool sl_partitioning_encode(sl_buf_t *b, const sl_partitioning_t *p);
/* Index into a topic's partition list for a MessagesKey: XXH32(key) % count. */
uint32_t sl_partitioning_key_index(sl_span_t key, uint32_t partitions_count);

/* --- polling strategy (9 fixed bytes) ----------------------------------------------------- */

typedef enum sl_strategy_kind {
    SL_STRATEGY_OFFSET = 1,
    SL_STRATEGY_TIMESTAMP = 2,
    SL_STRATEGY_FIRST = 3,
    SL_STRATEGY_LAST = 4,
    SL_STRATEGY_NEXT = 5,
} sl_strategy_kind_t;

typedef struct sl_strategy {
    uint8_t kind; /* sl_strategy_kind_t */
    uint64_t value;
} sl_strategy_t;

bool sl_strategy_decode(sl_reader_t *r, sl_strategy_t *out);
bool sl_strategy_encode(sl_buf_t *b, sl_strategy_t s);

/* --- ack level (1 byte) ------------------------------------------------------------------- */

typedef enum sl_ack {
    SL_ACK_NONE = 0,
    SL_ACK_QUORUM = 1,
} sl_ack_t;

bool sl_ack_decode(sl_reader_t *r, uint8_t *out);

/* Consumer id on a partition: numeric as-is, a name as XXH32(name, 0). */
uint32_t sl_consumer_key(const sl_ident_t *id);

#endif
