/* The topic option catalog (shared/protocol/options.md 4-5): which keys a
 * topic accepts, the value forms each key takes, create-time resolution with
 * the reference's check order, update-time patches, the stored explicit and
 * derived blocks, and the DescribeOptions descriptors.
 *
 * Everything here is a pure function over spans: no I/O, no allocation (the
 * encoders append to a caller's sl_buf_t; a fixed buffer never allocates).
 * Option blocks passed in must already have passed sl_options_validate; the
 * request decoders in cmd_topics.c do that first, answering 3 otherwise. */
#ifndef SL_WIRE_TOPIC_OPTIONS_H
#define SL_WIRE_TOPIC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "wire/tlv.h"

/* The catalog keys, in DescribeOptions order (options.md 5). */
typedef enum sl_topic_key {
    SL_TOPIC_KEY_COMPRESSION_ALGORITHM,
    SL_TOPIC_KEY_MESSAGE_EXPIRY,
    SL_TOPIC_KEY_MAX_TOPIC_SIZE,
    SL_TOPIC_KEY_SEGMENT_SIZE,
    SL_TOPIC_KEY_ENFORCE_FSYNC,
    SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE,
    SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE,
    SL_TOPIC_KEY_PREALLOCATE_SEGMENTS,
    SL_TOPIC_KEY_COUNT,
} sl_topic_key_t;

#define SL_TOPIC_KEY_BIT(key) (1u << (key))
#define SL_TOPIC_KEYS_ALL     ((1u << SL_TOPIC_KEY_COUNT) - 1u)
/* The keys UpdateTopic may carry (options.md 3). */
#define SL_TOPIC_KEYS_UPDATABLE                                                                    \
    (SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_COMPRESSION_ALGORITHM) |                                        \
     SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGE_EXPIRY) |                                               \
     SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE))

/* compression_algorithm codes in the TopicHeader fixed field. */
typedef enum sl_compression {
    SL_COMPRESSION_NONE = 1,
    SL_COMPRESSION_GZIP = 2,
} sl_compression_t;

/* Sentinels of the u64 fields: 0 asks for the server default, all ones
 * means never expire / unlimited (options.md 4.1, commands.md 2.2). */
#define SL_TOPIC_EXPIRY_SERVER_DEFAULT 0u
#define SL_TOPIC_EXPIRY_NEVER          UINT64_MAX
#define SL_TOPIC_SIZE_SERVER_DEFAULT   0u
#define SL_TOPIC_SIZE_UNLIMITED        UINT64_MAX

/* Build-constant defaults an absent key resolves to (options.md 4.1). */
#define SL_TOPIC_DEFAULT_COMPRESSION    SL_COMPRESSION_NONE
#define SL_TOPIC_DEFAULT_MESSAGE_EXPIRY SL_TOPIC_EXPIRY_NEVER
#define SL_TOPIC_DEFAULT_MAX_TOPIC_SIZE SL_TOPIC_SIZE_UNLIMITED

/* A topic's resolved option values. After create every field holds the
 * effective value; explicit_keys says which keys the client chose (they go
 * to the explicit block, the rest to the derived block). */
typedef struct sl_topic_config {
    uint8_t compression_algorithm; /* sl_compression_t */
    uint64_t message_expiry;       /* microseconds; SL_TOPIC_EXPIRY_NEVER */
    uint64_t max_topic_size;       /* bytes; SL_TOPIC_SIZE_UNLIMITED */
    uint64_t segment_size;         /* bytes */
    bool enforce_fsync;
    uint32_t messages_required_to_save;
    uint64_t size_of_messages_required_to_save; /* bytes */
    bool preallocate_segments;
    uint32_t explicit_keys; /* SL_TOPIC_KEY_BIT set */
} sl_topic_config_t;

/* Every key at its default, none explicit. */
void sl_topic_config_default(sl_topic_config_t *out);

/* The key's text ("segment_size"); key must be < SL_TOPIC_KEY_COUNT. */
const char *sl_topic_key_name(sl_topic_key_t key);
/* The catalog key spelled exactly by bytes; false for any other text. */
bool sl_topic_key_find(sl_span_t name, sl_topic_key_t *out);

/* Parses one value sent for key in any form of options.md 4.1/4.3 and checks
 * the per-key range of step 2 (options.md 4.2). *out gets the canonical
 * number: the compression code, microseconds, bytes, 0/1 for booleans, the
 * message count. Segment bounds and the cross-key rules are not checked here.
 * 0 or -SL_ERR_INVALID_OPTION_VALUE. */
int sl_topic_option_parse(sl_topic_key_t key, const sl_tlv_field_t *value, uint64_t *out) SL_WUR;

/* Text parsers of options.md 4.3, exposed for tests and for config files.
 * Each returns false when the text is not of its form. */
/* Byte size: "128 MiB", "1GB", "1.5 KiB", "8b" (bits), bare bytes; the words
 * 0/unlimited/Unlimited/none/None give 0. A fractional byte count is rounded
 * up. */
bool sl_parse_byte_size(sl_span_t text, uint64_t *bytes);
/* Humantime duration: one or more <integer><unit> groups ("1h 30m",
 * "7 days"); microseconds, sub-microsecond remainders dropped. Fails above
 * SL_EXPIRY_SECONDS_MAX seconds or on overflow. */
bool sl_parse_duration(sl_span_t text, uint64_t *micros);
/* message_expiry text: the never/server-default words, else a duration. */
bool sl_parse_message_expiry(sl_span_t text, uint64_t *micros);
/* max_topic_size text: "unlimited" -> unlimited, "0"/"server_default" -> 0,
 * else a byte size. */
bool sl_parse_max_topic_size(sl_span_t text, uint64_t *bytes);

/* --- create (options.md 4.2, 4.4) ------------------------------------------ */

/* Resolves a CreateTopic options block in the reference's order:
 * per entry (block order) unknown key -4041 / bad value -4042; explicit
 * segment_size bounds -4042; preallocation cap -4042; partitions_count above
 * 1000 -2015; explicit max_topic_size below the segment size -1019.
 * Sentinel-0 values are dropped and resolve like absent keys. */
int sl_topic_options_resolve_create(sl_span_t block, uint32_t partitions_count,
                                    sl_topic_config_t *out) SL_WUR;

/* The preallocation cap: false when a topic preallocating its segments would reserve more
 * than SL_PREALLOCATE_TOTAL_MAX with partitions_count partitions (CreateTopic, and
 * CreatePartitions with the count it would reach). */
bool sl_topic_preallocation_fits(const sl_topic_config_t *c, uint64_t partitions_count);

/* Appends the stored block (no length prefix): the explicit keys when
 * explicit_side, else the derived ones; canonical kinds, sorted by key.
 * 0, -SL_ERR_INVALID_COMMAND for an unencodable compression code, or
 * -SL_ERR_COMMAND_LENGTH_ERROR when the buffer failed. */
int sl_topic_options_encode(sl_buf_t *b, const sl_topic_config_t *cfg, bool explicit_side) SL_WUR;

/* Reads stored explicit and derived blocks back into a config (after a
 * restart, say): defaults first, then derived, then explicit entries.
 * Entries that do not parse, unknown keys and sentinel-0 values leave the
 * earlier value, as the reference degrades per key. explicit_keys gets the
 * catalog keys present in the explicit block. */
void sl_topic_config_from_blocks(sl_span_t explicit_block, sl_span_t derived_block,
                                 sl_topic_config_t *out);

/* --- update (options.md 4.2 last paragraph, 4.4) --------------------------- */

/* The parsed UpdateTopic block. keys says which of the three were sent; a
 * sent value of 0 for expiry or size is the server-default sentinel. */
typedef struct sl_topic_patch {
    uint32_t keys; /* SL_TOPIC_KEY_BIT set, within SL_TOPIC_KEYS_UPDATABLE */
    uint8_t compression_algorithm;
    uint64_t message_expiry;
    uint64_t max_topic_size;
} sl_topic_patch_t;

/* Any key outside the updatable three anywhere in the block -4041 (checked
 * for the whole block first), then the first value that does not parse
 * -4042. */
int sl_topic_patch_parse(sl_span_t block, sl_topic_patch_t *out) SL_WUR;
/* -SL_ERR_INVALID_TOPIC_SIZE when the patch sets max_topic_size (not 0,
 * not unlimited) below stored_segment_size (0: nothing stored, 1 GiB). */
int sl_topic_patch_check_size(const sl_topic_patch_t *patch, uint64_t stored_segment_size) SL_WUR;
/* Updates the fixed fields the patch sets, except sentinel-0 values, and
 * marks every sent key explicit. */
void sl_topic_patch_apply(const sl_topic_patch_t *patch, sl_topic_config_t *cfg);
/* The stored blocks after an update: every sent entry goes verbatim (kind and
 * bytes as the client sent them) into the explicit block, replacing an
 * explicit or derived entry of the same key; both outputs sorted by key.
 * The three blocks must be valid options blocks with at most
 * SL_TOPIC_KEY_COUNT entries each (what create and update store).
 * 0, -SL_ERR_INVALID_FORMAT for a block beyond that, or
 * -SL_ERR_COMMAND_LENGTH_ERROR when a buffer failed. */
int sl_topic_options_patch_blocks(sl_span_t explicit_block, sl_span_t derived_block,
                                  sl_span_t update_block, sl_buf_t *explicit_out,
                                  sl_buf_t *derived_out) SL_WUR;

/* --- DescribeOptions catalog (options.md 5) -------------------------------- */

/* One DescribeOptions descriptor. Strings are static and NUL-terminated;
 * default_value borrows static bytes in the canonical kind's encoding. */
typedef struct sl_topic_option_info {
    const char *key;
    uint8_t kind; /* sl_kind_t */
    sl_span_t default_value;
    const char *description;
} sl_topic_option_info_t;

/* The 8 topic descriptors, indexed by sl_topic_key_t (DescribeOptions order). */
extern const sl_topic_option_info_t sl_topic_option_catalog[SL_TOPIC_KEY_COUNT];

/* The catalog of a DescribeOptions scope: 1 topic (8 entries), 2 stream and
 * 3 user (0 entries, *items NULL). Any other scope -SL_ERR_INVALID_COMMAND. */
int sl_option_catalog(uint8_t scope, const sl_topic_option_info_t **items, uint32_t *count) SL_WUR;

#endif
