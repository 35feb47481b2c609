/* One journaled metadata operation (META brief, "The entry"): what the
 * server stamps at admission and what sl_meta_apply consumes. The on-disk
 * Prepare header codec lives beside it in entry.c (owned by the metalog
 * module); this header only defines the struct both sides share. */
#ifndef SL_META_ENTRY_H
#define SL_META_ENTRY_H

#include <stdint.h>

#include "base/bytes.h"

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

#endif
