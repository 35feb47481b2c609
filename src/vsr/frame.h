/* Replica-plane frames (shared/protocol/cluster.md): the 256-byte headers of
 * commands 6..29, their seals (frame seal, prepare identity, body seal) and
 * the state manifest of state transfer.
 *
 * Decoding follows the hostile-input rules of src/wire: every length is
 * checked against the bytes present before it is used, a seal is verified
 * before any field is trusted, and a frame that breaks a rule of cluster.md
 * gets a verdict naming the rule class, never an assert. Decoded spans borrow
 * the input bytes and live as long as they do. Headers are read and written
 * by offset; no struct is cast over wire bytes.
 *
 * Encoding writes a whole header from a typed struct and seals it last
 * (cluster.md 3: the frame seal covers checksum_body, so the body seal comes
 * first). Reserved bytes are always written as zero. */
#ifndef SL_VSR_FRAME_H
#define SL_VSR_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "base/limits.h"

/* --- command bytes (cluster.md 2) ------------------------------------------------ */

typedef enum sl_vsr_command {
    SL_VSR_PREPARE = 6,
    SL_VSR_PREPARE_OK = 7,
    SL_VSR_COMMIT = 9,
    SL_VSR_START_VIEW_CHANGE = 10,
    SL_VSR_DO_VIEW_CHANGE = 11,
    SL_VSR_START_VIEW = 12,
    SL_VSR_REPLICA_HELLO = 14,
    SL_VSR_REPLICA_CHALLENGE = 15,
    SL_VSR_REPLICA_FINISH = 16,
    SL_VSR_REQUEST_START_VIEW = 17,
    SL_VSR_REQUEST_PREPARES = 18,
    SL_VSR_REPAIR_PREPARE = 19,
    SL_VSR_REPAIR_DONE = 20,
    SL_VSR_RANGE_EVICTED = 21,
    SL_VSR_REQUEST_STATE_TRANSFER = 22,
    SL_VSR_STATE_TRANSFER_TARGET = 23,
    SL_VSR_REQUEST_STATE_CHUNK = 24,
    SL_VSR_STATE_CHUNK = 25,
    SL_VSR_FORWARD_REGISTER = 26,
    SL_VSR_FORWARD_REGISTER_RESULT = 27,
    SL_VSR_FORWARD_LOGOUT = 28,
    SL_VSR_FORWARD_LOGOUT_RESULT = 29,
} sl_vsr_command_t;

/* The protocol name of a replica-plane command ("DoViewChange"), or NULL. */
const char *sl_vsr_command_name(uint8_t command);
/* Commands whose header carries the frame seal (cluster.md 3). */
bool sl_vsr_command_sealed(uint8_t command);

/* --- groups (cluster.md 5) ------------------------------------------------------- */

#define SL_VSR_GROUP_METADATA (UINT64_C(1) << 63)
#define SL_VSR_PARTITIONS_MAX 1000000u
#define SL_VSR_TOPICS_MAX     4096u
#define SL_VSR_STREAMS_MAX    (1u << 20)

/* The partition group of (stream, topic, partition), or 0 when a component
 * is out of its range. */
uint64_t sl_vsr_group_partition(uint32_t stream, uint32_t topic, uint32_t partition);
bool sl_vsr_group_is_metadata(uint64_t group);
/* A group value cluster.md 5 can produce: the metadata group, or a packed
 * partition whose components are in range (bits 52..63 zero). */
bool sl_vsr_group_valid(uint64_t group);

/* --- sizes ------------------------------------------------------------------------ */

/* DoViewChange / StartView carry at most this many suffix headers, which is
 * why a prepare queue is at most 127 deep (cluster.md 7). */
#define SL_VSR_SUFFIX_MAX   128u
#define SL_VSR_PIPELINE_MAX (SL_VSR_SUFFIX_MAX - 1u)
/* State manifest (cluster.md 9). */
#define SL_VSR_MANIFEST_ENTRIES_MAX 65536u
#define SL_VSR_MANIFEST_ENTRY_LEN   25u

/* --- the common prefix (framing.md 1.1) -------------------------------------------- */

typedef struct sl_vsr_common {
    sl_u128_t checksum;      /* frame seal, or the prepare identity */
    sl_u128_t checksum_body; /* body seal */
    sl_u128_t cluster;       /* first 16 bytes of BLAKE3(cluster name) */
    uint32_t size;           /* header + body */
    uint32_t view;
    uint32_t release; /* always 0 */
    uint8_t command;
    uint8_t replica; /* the sender */
} sl_vsr_common_t;

/* --- per-command fields --------------------------------------------------------------- */

/* Prepare (6) and RepairPrepare (19), and the entries of a DoViewChange or
 * StartView suffix (cluster.md 6.1). */
typedef struct sl_vsr_prepare {
    sl_u128_t client;
    sl_u128_t parent; /* identity of the previous op's prepare (0 before op 1) */
    sl_u128_t request_checksum;
    uint64_t op;
    uint64_t commit; /* the primary's commit point when it built the prepare */
    uint64_t timestamp;
    uint64_t request;
    uint8_t operation;
    uint64_t group;
    uint32_t user_id;
} sl_vsr_prepare_t;

typedef struct sl_vsr_prepare_ok {
    sl_u128_t parent;
    sl_u128_t prepare_checksum; /* the identity acknowledged */
    uint64_t op;
    uint64_t commit; /* the acker's commit point */
    uint64_t timestamp;
    uint64_t request;
    uint8_t operation;
    uint64_t group;
} sl_vsr_prepare_ok_t;

typedef struct sl_vsr_commit {
    sl_u128_t commit_checksum; /* unused: 0 */
    uint64_t timestamp_monotonic;
    uint64_t commit;
    uint64_t checkpoint_op; /* unused: 0 */
    uint64_t group;
} sl_vsr_commit_t;

typedef struct sl_vsr_view_change {
    uint64_t group; /* StartViewChange carries only this */
} sl_vsr_view_change_t;

typedef struct sl_vsr_do_view_change {
    uint64_t op;
    uint64_t commit;
    uint64_t group;
    uint32_t log_view;
    sl_u128_t nack_bitset;
    sl_u128_t present_bitset;
} sl_vsr_do_view_change_t;

typedef struct sl_vsr_start_view {
    uint64_t op;
    uint64_t commit;
    uint64_t group;
    sl_u128_t incarnation; /* echo of a RequestStartView, 0 if unsolicited */
} sl_vsr_start_view_t;

typedef struct sl_vsr_request_start_view {
    uint64_t group;
    sl_u128_t incarnation;
} sl_vsr_request_start_view_t;

typedef struct sl_vsr_request_prepares {
    sl_u128_t nonce;
    uint64_t from_op;
    uint64_t to_op;
    uint64_t group;
} sl_vsr_request_prepares_t;

/* RepairDone (op = last op served) and RangeEvicted (op = oldest retained). */
typedef struct sl_vsr_repair_end {
    sl_u128_t nonce;
    uint64_t op;
    uint64_t group;
} sl_vsr_repair_end_t;

typedef struct sl_vsr_request_state {
    sl_u128_t nonce;
    uint64_t group;
} sl_vsr_request_state_t;

typedef struct sl_vsr_state_target {
    sl_u128_t nonce;
    uint64_t commit_op;
    uint64_t group;
    uint8_t available;
    uint8_t unavailable_transient;
    uint64_t commit_max;
    /* Sluice, in bytes cluster.md reserves (176..192): the identity of the
     * prepare at commit_op, so the new checkpoint's successor chains to it
     * (0 with available = 0). */
    sl_u128_t commit_checksum;
} sl_vsr_state_target_t;

typedef struct sl_vsr_request_chunk {
    sl_u128_t nonce;
    uint64_t offset;
    uint64_t group;
    uint32_t len;
    uint32_t artifact;
} sl_vsr_request_chunk_t;

typedef struct sl_vsr_state_chunk {
    sl_u128_t nonce;
    uint64_t offset;
    uint64_t group;
    uint32_t artifact;
} sl_vsr_state_chunk_t;

/* Handshake frames 14..16 (cluster.md 4). */
typedef struct sl_vsr_handshake {
    uint8_t nonce[32];
    uint8_t mac[32];
    uint8_t status; /* Challenge only */
} sl_vsr_handshake_t;

typedef struct sl_vsr_forward_register {
    sl_u128_t client;
    sl_u128_t nonce;
    uint32_t user_id;
} sl_vsr_forward_register_t;

typedef struct sl_vsr_forward_register_result {
    sl_u128_t nonce;
    sl_u128_t client;
    uint64_t epoch;
    uint64_t watermark;
    uint8_t outcome;
} sl_vsr_forward_register_result_t;

typedef struct sl_vsr_forward_logout {
    sl_u128_t client;
    sl_u128_t nonce;
    uint64_t session;
    uint64_t request;
} sl_vsr_forward_logout_t;

typedef struct sl_vsr_forward_logout_result {
    sl_u128_t nonce;
    sl_u128_t client;
    uint64_t commit;
    uint8_t outcome;
} sl_vsr_forward_logout_result_t;

/* Outcomes of the Forward results (cluster.md 10). */
enum {
    SL_VSR_FWD_REGISTER_OK = 0,
    SL_VSR_FWD_REGISTER_CLIENT_OWNED = 6, /* the highest outcome */
    SL_VSR_FWD_LOGOUT_OK = 0,
    SL_VSR_FWD_LOGOUT_CANCELED = 4, /* the highest outcome */
};

/* A decoded frame: the prefix, the fields of its command and its body. */
typedef struct sl_vsr_frame {
    sl_vsr_common_t h;
    union {
        sl_vsr_prepare_t prepare; /* 6, 19 */
        sl_vsr_prepare_ok_t prepare_ok;
        sl_vsr_commit_t commit;
        sl_vsr_view_change_t start_view_change;
        sl_vsr_do_view_change_t do_view_change;
        sl_vsr_start_view_t start_view;
        sl_vsr_request_start_view_t request_start_view;
        sl_vsr_request_prepares_t request_prepares;
        sl_vsr_repair_end_t repair_end; /* 20, 21 */
        sl_vsr_request_state_t request_state;
        sl_vsr_state_target_t state_target;
        sl_vsr_request_chunk_t request_chunk;
        sl_vsr_state_chunk_t state_chunk;
        sl_vsr_handshake_t handshake; /* 14, 15, 16 */
        sl_vsr_forward_register_t forward_register;
        sl_vsr_forward_register_result_t forward_register_result;
        sl_vsr_forward_logout_t forward_logout;
        sl_vsr_forward_logout_result_t forward_logout_result;
    } u;
    sl_span_t body; /* bytes 256..size of the input */
} sl_vsr_frame_t;

/* --- decoding ------------------------------------------------------------------------ */

typedef enum sl_vsr_verdict {
    SL_VSR_OK = 0,
    SL_VSR_BAD_SIZE,    /* size < 256, above the limit, or not the bytes given */
    SL_VSR_BAD_COMMAND, /* not a replica-plane command (0..5, 8, 13, > 29) */
    SL_VSR_BAD_SEAL,    /* frame seal or prepare identity does not verify */
    SL_VSR_BAD_BODY,    /* body seal does not verify */
    SL_VSR_BAD_FIELD,   /* a field breaks a rule of cluster.md (reserved, range, bits) */
    SL_VSR_BAD_SUFFIX,  /* a DoViewChange / StartView suffix entry is malformed */
} sl_vsr_verdict_t;

const char *sl_vsr_verdict_name(sl_vsr_verdict_t v);

/* Decodes one whole frame of len bytes: size at 48 must equal len and lie in
 * 256..frame_max. Seals are checked before fields; suffix entries of
 * DoViewChange / StartView are checked one by one (sl_vsr_suffix_entry). The
 * cluster id is not compared: the receiver knows its own. */
sl_vsr_verdict_t sl_vsr_frame_decode(const uint8_t *frame, size_t len, uint32_t frame_max,
                                     sl_vsr_frame_t *out);

/* Entry i of a DoViewChange / StartView suffix of `count` entries, whose
 * highest op is `op`: entries are 256-byte Prepare headers, highest op
 * first and contiguous (entry i has op - i). A header the sender does not
 * know is sent blank: every byte zero except `op` (Sluice's encoding of a
 * gap; cluster.md leaves it open). Writes the entry into *out (blank: only
 * op set) and its identity into *identity (0 for a blank). */
typedef struct sl_vsr_suffix_entry {
    bool blank;
    sl_u128_t identity;
    uint32_t view; /* the view the sender holds it under */
    sl_vsr_prepare_t prepare;
} sl_vsr_suffix_entry_t;
sl_vsr_verdict_t sl_vsr_suffix_entry(sl_span_t body, uint32_t i, uint64_t op,
                                     sl_vsr_suffix_entry_t *out);

/* The `group` of a decoded consensus frame; false for the handshake and
 * Forward frames, which carry none (cluster.md 5). */
bool sl_vsr_frame_group(const sl_vsr_frame_t *f, uint64_t *group);

/* --- seals ----------------------------------------------------------------------------- */

/* XXH3-64 (seed 0) of bytes, zero-extended: every checksum of cluster.md 3. */
sl_u128_t sl_vsr_checksum(sl_span_t bytes);
/* The prepare identity of a 256-byte Prepare or RepairPrepare header:
 * XXH3-64 of the header with checksum and view zeroed (and the command byte
 * read as 6, since a RepairPrepare is the journaled prepare with only that
 * byte changed). */
sl_u128_t sl_vsr_prepare_identity(const uint8_t header[SL_HEADER_SIZE]);
/* The frame seal: XXH3-64 of header bytes 16..256. */
sl_u128_t sl_vsr_frame_seal(const uint8_t header[SL_HEADER_SIZE]);

/* --- encoding --------------------------------------------------------------------------- */

/* Writes f's header (f->h.command picks the layout; h.size, checksum and
 * checksum_body are computed here from body) into out and seals it:
 * checksum_body over body where cluster.md 3 asks for one, then the prepare
 * identity (6, 19) or the frame seal (sealed commands). Returns the
 * checksum written. The fields must obey the rules the decoder checks
 * (asserted for the cheap ones: a programmer error, not input). */
sl_u128_t sl_vsr_header_encode(uint8_t out[SL_HEADER_SIZE], const sl_vsr_frame_t *f,
                               sl_span_t body);

/* Writes a blank suffix entry for op (see sl_vsr_suffix_entry). */
void sl_vsr_suffix_blank(uint8_t out[SL_HEADER_SIZE], uint64_t op);

/* --- state manifest (cluster.md 9) -------------------------------------------------------------
 */

enum {
    SL_VSR_ARTIFACT_METADATA_SNAPSHOT = 0,
    SL_VSR_ARTIFACT_CLIENT_TABLE = 1,
    SL_VSR_ARTIFACT_SEGMENT_LOG = 2,
    SL_VSR_ARTIFACT_CONSUMER_OFFSETS = 3,
};

typedef struct sl_vsr_artifact {
    uint8_t kind;
    uint64_t frontier;
    uint64_t len;
    uint64_t checksum; /* XXH3-64 of the whole artifact */
} sl_vsr_artifact_t;

/* Appends "ISM1", count, entry_len 25, the entries and the XXH3 trailer. */
void sl_vsr_manifest_encode(sl_buf_t *b, const sl_vsr_artifact_t *entries, uint32_t count);
/* Verifies the trailer, the magic, count <= 65536 and <= max, entry_len >= 25
 * (longer entries: the tail is skipped) and that nothing follows. Writes at
 * most max entries. 0 or -1. */
SL_WUR int sl_vsr_manifest_decode(sl_span_t bytes, sl_vsr_artifact_t *entries, uint32_t max,
                                  uint32_t *count);

#endif
