/* One journaled metadata operation and its on-disk form: a 256-byte Prepare header
 * (cluster.md 6.1, command 6) followed by the admitted body (storage.md 7.1).
 * The struct is shared with the state machine; the header codec is the journal's. */
#ifndef SL_META_ENTRY_H
#define SL_META_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "base/limits.h"

typedef struct sl_meta_entry {
    uint64_t op;        /* log position, 1, 2, 3, ... (the session epoch of a Register) */
    uint64_t timestamp; /* microseconds, strictly increasing, chosen before journaling */
    sl_u128_t client;   /* 128-bit client id of the session (0 for internal ops) */
    uint64_t request;   /* client request number (u64::MAX for a disconnect logout) */
    uint32_t user_id;   /* acting user, stamped by the server */
    uint8_t operation;  /* sl_op_t: 1 Register, 3 Logout, 64 CreateTopicWithAssignments,
                           65 CreatePartitionsWithAssignments, 68 TruncatePartition,
                           128..149 (not 138); the committed reply carries this byte */
    sl_u128_t request_checksum;
    sl_span_t body; /* the admitted body */
} sl_meta_entry_t;

/* The Prepare header's size: every entry starts with one. */
#define SL_META_HEADER_SIZE SL_HEADER_SIZE
/* `command` byte of a Prepare (cluster.md 2). */
#define SL_META_PREPARE_COMMAND 6u
/* `group` of the metadata consensus group (cluster.md 5). */
#define SL_META_GROUP (UINT64_C(1) << 63)
/* Largest entry, header included: one frame (storage.md 7.1: size > 64 MiB is invalid). */
#define SL_META_ENTRY_SIZE_MAX SL_FRAME_MAX_DEFAULT

/* Header field offsets (framing.md 1.1, cluster.md 6.1). */
enum {
    SL_META_AT_CHECKSUM = 0,
    SL_META_AT_CHECKSUM_BODY = 16,
    SL_META_AT_CLUSTER = 32,
    SL_META_AT_SIZE = 48,
    SL_META_AT_VIEW = 52,
    SL_META_AT_RELEASE = 56,
    SL_META_AT_COMMAND = 60,
    SL_META_AT_REPLICA = 61,
    SL_META_AT_CLIENT = 128,
    SL_META_AT_PARENT = 144,
    SL_META_AT_REQUEST_CHECKSUM = 160,
    SL_META_AT_OP = 176,
    SL_META_AT_COMMIT = 184,
    SL_META_AT_TIMESTAMP = 192,
    SL_META_AT_REQUEST = 200,
    SL_META_AT_OPERATION = 208,
    SL_META_AT_GROUP = 216,
    SL_META_AT_USER_ID = 224,
};

/* A decoded header: the entry (body not yet attached) plus the fields only the journal uses. */
typedef struct sl_meta_header {
    sl_meta_entry_t entry;   /* body.ptr NULL, body.len = size - 256 */
    sl_u128_t checksum;      /* seal of header bytes 16..256: the entry's identity */
    sl_u128_t checksum_body; /* XXH3-64 of the body, zero-extended */
    sl_u128_t parent;        /* checksum of the previous entry (0: none known) */
    uint64_t commit;         /* commit point when built: op - 1 on a single node */
    uint32_t size;           /* 256 + body length */
} sl_meta_header_t;

/* XXH3-64 (seed 0) of p, zero-extended: every checksum of the format. */
sl_u128_t sl_meta_checksum(sl_span_t bytes);

/* Builds e's header into out: size, command 6, metadata group, commit = op - 1, parent, and both
 * checksums (body first, then the header seal over bytes 16..256). cluster, view, release and
 * replica are 0 (a single node), reserved bytes zero. e->op >= 1 and the entry fits
 * SL_META_ENTRY_SIZE_MAX (asserted: the server never admits more). Returns the header checksum. */
sl_u128_t sl_meta_header_encode(uint8_t out[SL_META_HEADER_SIZE], const sl_meta_entry_t *e,
                                sl_u128_t parent);

/* Verifies and decodes a header read from disk: the seal first, then command 6, release 0,
 * size 256..64 MiB, metadata group, op >= 1, commit < op, zero reserved bytes and padding.
 * 0, -SL_ERR_INVALID_STATE_ENTRY_CHECKSUM (seal) or -SL_ERR_STATE_FILE_CORRUPTED (a field). */
SL_WUR int sl_meta_header_decode(const uint8_t in[SL_META_HEADER_SIZE], sl_meta_header_t *out);

/* True when body (size - 256 bytes) matches the header's checksum_body. */
bool sl_meta_body_verify(const sl_meta_header_t *h, sl_span_t body);

#endif
