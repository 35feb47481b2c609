/* The client table of a consensus group: per client id, the session (the op
 * of its latest committed Register), the request watermark and the latest
 * committed reply. Every replica updates it at commit, in op order, so after
 * a failover the new primary answers a retried request from its table
 * instead of executing it again (framing.md 6.1: replies exactly-once within
 * the retained history).
 *
 * Entries are kept sorted by client id (binary search; insert and evict move
 * memory, which only a Register does). When the table is full, a Register of
 * a new client evicts the entry whose latest commit is oldest (ties: lowest
 * client id), so every replica evicts the same one. The encoding (magic
 * "ICT2") is the CLIENT_TABLE artifact of state transfer (cluster.md 9):
 * entries in id order, each with its latest reply, and an XXH3 trailer.
 *
 * Ownership: the table owns each entry's reply bytes (malloc'd, grown on
 * demand up to reply_max). Pointers returned by find/register are valid until
 * the next register, decode, reset or free. */
#ifndef SL_VSR_CLIENT_TABLE_H
#define SL_VSR_CLIENT_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

typedef struct sl_vsr_client {
    sl_u128_t client;
    uint64_t session; /* op of the latest committed Register */
    uint32_t user_id;
    uint64_t request; /* watermark: highest committed request number */
    sl_u128_t request_checksum;
    uint64_t last_op; /* op of the latest commit for this client (Register too) */
    /* the reply to the watermark request: header fields and body */
    uint64_t reply_op;
    uint64_t reply_timestamp;
    uint8_t reply_operation;
    bool has_reply;
    uint32_t reply_len;
    uint32_t reply_cap;
    uint8_t *reply;
} sl_vsr_client_t;

typedef struct sl_vsr_clients {
    sl_vsr_client_t *entries; /* sorted by client id */
    uint32_t count;
    uint32_t max;
    uint32_t reply_max; /* largest reply body kept */
} sl_vsr_clients_t;

/* 0, or -1 when the entries cannot be allocated. */
SL_WUR int sl_vsr_clients_init(sl_vsr_clients_t *t, uint32_t max, uint32_t reply_max);
void sl_vsr_clients_free(sl_vsr_clients_t *t);
/* Empties the table (keeps the allocation). */
void sl_vsr_clients_reset(sl_vsr_clients_t *t);

sl_vsr_client_t *sl_vsr_clients_find(sl_vsr_clients_t *t, sl_u128_t client);
/* A committed Register at op: a new entry (evicting the oldest when full) or
 * a rebind of an existing one, which keeps its watermark (framing.md 5.2). */
sl_vsr_client_t *sl_vsr_clients_register(sl_vsr_clients_t *t, sl_u128_t client, uint64_t op,
                                         uint32_t user_id);
/* Records a committed request and its reply on an entry. A body longer than
 * reply_max (or one that cannot be stored) is not kept: has_reply goes false,
 * so a retry gets RequestAlreadyApplied instead of a wrong reply. */
void sl_vsr_clients_commit(sl_vsr_clients_t *t, sl_vsr_client_t *c, uint64_t request,
                           sl_u128_t request_checksum, uint64_t op, uint64_t timestamp,
                           uint8_t operation, sl_span_t reply);

/* Appends the "ICT2" encoding. */
void sl_vsr_clients_encode(const sl_vsr_clients_t *t, sl_buf_t *out);
/* Replaces the table's content with a decoded one; on any error (trailer,
 * magic, order, count above max, lengths) the table is left empty and -1 is
 * returned. */
SL_WUR int sl_vsr_clients_decode(sl_vsr_clients_t *t, sl_span_t bytes);

#endif
