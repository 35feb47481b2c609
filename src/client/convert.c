/* Conversions between the wire codecs' structs (spans into the reply,
 * arrays in the arena) and the public result types of <sluice/client.h>
 * (NUL-terminated strings and arrays, all in the client's arena), plus the
 * two request-side encodings the public API adds: topic options and
 * permission sets. */
#include "client/client_internal.h"

#include <string.h>

#include "wire/perms.h"
#include "wire/tlv.h"
#include "wire/topic_options.h"

/* The public option bits are the wire catalog's key bits. */
_Static_assert(SL_TOPIC_OPT_COMPRESSION == SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_COMPRESSION_ALGORITHM),
               "option bit");
_Static_assert(SL_TOPIC_OPT_MESSAGE_EXPIRY == SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGE_EXPIRY),
               "option bit");
_Static_assert(SL_TOPIC_OPT_MAX_TOPIC_SIZE == SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE),
               "option bit");
_Static_assert(SL_TOPIC_OPT_SEGMENT_SIZE == SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE),
               "option bit");
_Static_assert(SL_TOPIC_OPT_ENFORCE_FSYNC == SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_ENFORCE_FSYNC),
               "option bit");
_Static_assert(SL_TOPIC_OPT_MESSAGES_REQUIRED_TO_SAVE ==
                   SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE),
               "option bit");
_Static_assert(SL_TOPIC_OPT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE ==
                   SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE),
               "option bit");
_Static_assert(SL_TOPIC_OPT_PREALLOCATE_SEGMENTS ==
                   SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_PREALLOCATE_SEGMENTS),
               "option bit");
/* The public constants restate wire values; compare them as plain ints. */
_Static_assert((int)SL_TOPIC_COMPRESSION_NONE == (int)SL_COMPRESSION_NONE &&
                   (int)SL_TOPIC_COMPRESSION_GZIP == (int)SL_COMPRESSION_GZIP,
               "compression codes");
_Static_assert((int)SL_USER_STATUS_ACTIVE == (int)SL_USER_ACTIVE &&
                   (int)SL_USER_STATUS_INACTIVE == (int)SL_USER_INACTIVE,
               "user status codes");
_Static_assert((int)SL_ID_NUMBER == (int)SL_IDENT_NUMERIC &&
                   (int)SL_ID_NAME == (int)SL_IDENT_STRING,
               "id kinds");

/* --- allocation ------------------------------------------------------------------ */

int sl_client_conv_end(const sl_client_conv_t *cv)
{
    return cv->failed ? -SL_ERR_ERROR : 0;
}

const char *sl_client_conv_str(sl_client_conv_t *cv, sl_span_t s)
{
    char *copy = sl_arena_strndup(cv->arena, s.ptr, s.len);
    if (copy == NULL) {
        cv->failed = true;
        return "";
    }
    return copy;
}

void *sl_client_conv_alloc(sl_client_conv_t *cv, size_t size, size_t count, size_t align)
{
    if (count == 0)
        return NULL;
    void *p = count <= SIZE_MAX / size ? sl_arena_alloc(cv->arena, size * count, align) : NULL;
    if (p == NULL)
        cv->failed = true;
    return p;
}

bool sl_client_ident(sl_id_t id, sl_ident_t *out)
{
    if (id.kind == SL_ID_NUMBER) {
        *out = sl_ident_number(id.number);
        return true;
    }
    if (id.kind == SL_ID_NAME && id.name != NULL) {
        *out = sl_ident_name(id.name);
        return true;
    }
    return false;
}

/* --- options blocks ------------------------------------------------------------- */

void sl_client_conv_options(sl_client_conv_t *cv, sl_span_t block, const sl_option_t **items,
                            uint32_t *count)
{
    *items = NULL;
    *count = 0;
    uint32_t pairs;
    /* The reply decoders validated the block; checking again keeps this
     * function safe on its own. */
    if (!sl_options_validate(block, &pairs) || pairs == 0)
        return;
    sl_option_t *out = SL_CONV_NEW(cv, sl_option_t, pairs);
    if (out == NULL)
        return;
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    uint32_t n = 0;
    while (n < pairs && sl_tlv_next(&it, &e)) {
        out[n] = (sl_option_t){
            .key = sl_client_conv_str(cv, e.key.data),
            .kind = e.value.kind,
            .value = (const uint8_t *)sl_client_conv_str(cv, e.value.data),
            .value_len = (uint32_t)e.value.data.len,
        };
        n++;
    }
    *items = out;
    *count = n;
}

void sl_client_conv_settings(sl_span_t explicit_block, sl_span_t derived_block,
                             sl_topic_options_t *out)
{
    sl_topic_config_t cfg;
    sl_topic_config_from_blocks(explicit_block, derived_block, &cfg);
    *out = (sl_topic_options_t){
        .set = cfg.explicit_keys,
        .compression = cfg.compression_algorithm,
        .message_expiry_us = cfg.message_expiry,
        .max_topic_size = cfg.max_topic_size,
        .segment_size = cfg.segment_size,
        .enforce_fsync = cfg.enforce_fsync,
        .messages_required_to_save = cfg.messages_required_to_save,
        .size_of_messages_required_to_save = cfg.size_of_messages_required_to_save,
        .preallocate_segments = cfg.preallocate_segments,
    };
}

/* One set field in its canonical kind (options.md 4.1). A compression code
 * other than none/gzip goes out as Uint8 so the server judges it. */
static void option_value(sl_topic_key_t key, const sl_topic_options_t *in, uint8_t *kind,
                         uint8_t bytes[8], size_t *len)
{
    uint64_t number = 0;
    *kind = sl_topic_option_catalog[key].kind;
    switch (key) {
    case SL_TOPIC_KEY_COMPRESSION_ALGORITHM: {
        const char *text = in->compression == SL_COMPRESSION_NONE   ? "none"
                           : in->compression == SL_COMPRESSION_GZIP ? "gzip"
                                                                    : NULL;
        if (text == NULL) {
            *kind = SL_KIND_UINT8;
            bytes[0] = in->compression;
            *len = 1;
        } else {
            *len = strlen(text);
            memcpy(bytes, text, *len);
        }
        return;
    }
    case SL_TOPIC_KEY_MESSAGE_EXPIRY:
        number = in->message_expiry_us;
        break;
    case SL_TOPIC_KEY_MAX_TOPIC_SIZE:
        number = in->max_topic_size;
        break;
    case SL_TOPIC_KEY_SEGMENT_SIZE:
        number = in->segment_size;
        break;
    case SL_TOPIC_KEY_ENFORCE_FSYNC:
        number = in->enforce_fsync;
        break;
    case SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE:
        number = in->messages_required_to_save;
        break;
    case SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE:
        number = in->size_of_messages_required_to_save;
        break;
    case SL_TOPIC_KEY_PREALLOCATE_SEGMENTS:
        number = in->preallocate_segments;
        break;
    default:
        sl_assert(!"unknown topic key");
    }
    *len = sl_kind_width(*kind);
    sl_assert(*len >= 1 && *len <= 8);
    uint8_t le[8];
    sl_store_u64(le, number);
    memcpy(bytes, le, *len);
}

/* The catalog keys in byte order of their names: the order the server
 * stores them in, so a request reads like the stored block. */
static void keys_by_name(sl_topic_key_t keys[SL_TOPIC_KEY_COUNT])
{
    for (int i = 0; i < SL_TOPIC_KEY_COUNT; i++) {
        sl_topic_key_t k = (sl_topic_key_t)i;
        int j = i;
        while (j > 0 && strcmp(sl_topic_key_name(keys[j - 1]), sl_topic_key_name(k)) > 0) {
            keys[j] = keys[j - 1];
            j--;
        }
        keys[j] = k;
    }
}

int sl_client_topic_options_encode(sl_buf_t *b, const sl_topic_options_t *in)
{
    if (in == NULL)
        return 0;
    sl_topic_key_t keys[SL_TOPIC_KEY_COUNT];
    keys_by_name(keys);
    bool ok = true;
    for (int i = 0; i < SL_TOPIC_KEY_COUNT && ok; i++) {
        if ((in->set & SL_TOPIC_KEY_BIT(keys[i])) == 0)
            continue;
        uint8_t kind, bytes[8];
        size_t len;
        option_value(keys[i], in, &kind, bytes, &len);
        ok = sl_tlv_put_pair(b, sl_topic_key_name(keys[i]), kind, sl_span(bytes, len));
    }
    if (in->extra_count > 0 && in->extra == NULL)
        ok = false;
    for (uint32_t i = 0; i < in->extra_count && ok; i++) {
        const sl_option_t *e = &in->extra[i];
        ok = e->key != NULL && e->value != NULL &&
             sl_tlv_put_pair(b, e->key, e->kind, sl_span(e->value, e->value_len));
    }
    if (!sl_buf_ok(b))
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return ok ? 0 : -SL_ERR_INVALID_COMMAND;
}

/* --- streams and topics ---------------------------------------------------------- */

static void conv_partitions(sl_client_conv_t *cv, const sl_partition_info_t *in, uint32_t count,
                            const sl_topic_partition_t **out)
{
    sl_topic_partition_t *p = SL_CONV_NEW(cv, sl_topic_partition_t, count);
    for (uint32_t i = 0; p != NULL && i < count; i++) {
        p[i] = (sl_topic_partition_t){
            .id = in[i].id,
            .created_at_us = in[i].created_at,
            .segments_count = in[i].segments_count,
            .current_offset = in[i].current_offset,
            .size_bytes = in[i].size_bytes,
            .messages_count = in[i].messages_count,
        };
    }
    *out = p;
}

void sl_client_conv_topic(sl_client_conv_t *cv, const sl_topic_header_t *in,
                          const sl_partition_info_t *partitions, sl_topic_t *out)
{
    *out = (sl_topic_t){
        .id = in->id,
        .created_at_us = in->created_at,
        .partitions_count = in->partitions_count,
        .message_expiry_us = in->message_expiry,
        .compression = in->compression_algorithm,
        .max_topic_size = in->max_topic_size,
        .size_bytes = in->size_bytes,
        .messages_count = in->messages_count,
        .name = sl_client_conv_str(cv, in->name),
    };
    sl_client_conv_settings(in->options, in->derived_options, &out->settings);
    sl_client_conv_options(cv, in->options, &out->options, &out->options_count);
    sl_client_conv_options(cv, in->derived_options, &out->derived_options,
                           &out->derived_options_count);
    if (partitions != NULL)
        conv_partitions(cv, partitions, in->partitions_count, &out->partitions);
}

void sl_client_conv_stream(sl_client_conv_t *cv, const sl_stream_header_t *in,
                           const sl_topic_header_t *topics, sl_stream_t *out)
{
    *out = (sl_stream_t){
        .id = in->id,
        .created_at_us = in->created_at,
        .topics_count = in->topics_count,
        .size_bytes = in->size_bytes,
        .messages_count = in->messages_count,
        .name = sl_client_conv_str(cv, in->name),
    };
    if (topics == NULL)
        return;
    sl_topic_t *t = SL_CONV_NEW(cv, sl_topic_t, in->topics_count);
    for (uint32_t i = 0; t != NULL && i < in->topics_count; i++)
        sl_client_conv_topic(cv, &topics[i], NULL, &t[i]);
    out->topics = t;
}

/* --- users and permissions ------------------------------------------------------ */

void sl_client_conv_user(sl_client_conv_t *cv, const sl_user_header_t *in, sl_user_t *out)
{
    *out = (sl_user_t){
        .id = in->id,
        .created_at_us = in->created_at,
        .status = in->status,
        .username = sl_client_conv_str(cv, in->username),
    };
}

void sl_client_conv_user_details(sl_client_conv_t *cv, const sl_user_details_t *in, sl_user_t *out)
{
    sl_client_conv_user(cv, &in->header, out);
    if (in->has_permissions)
        out->permissions = sl_client_conv_permissions(cv, in->permissions);
}

static void conv_stream_permission(sl_client_conv_t *cv, const sl_stream_perms_t *in,
                                   sl_stream_permission_t *out)
{
    *out = (sl_stream_permission_t){
        .stream_id = in->stream_id,
        .manage_stream = in->manage_stream,
        .read_stream = in->read_stream,
        .manage_topics = in->manage_topics,
        .read_topics = in->read_topics,
        .poll_messages = in->poll_messages,
        .send_messages = in->send_messages,
        .topics_count = in->topics_count,
    };
    sl_topic_permission_t *t = SL_CONV_NEW(cv, sl_topic_permission_t, in->topics_count);
    for (uint32_t i = 0; t != NULL && i < in->topics_count; i++) {
        t[i] = (sl_topic_permission_t){
            .topic_id = in->topics[i].topic_id,
            .manage_topic = in->topics[i].manage_topic,
            .read_topic = in->topics[i].read_topic,
            .poll_messages = in->topics[i].poll_messages,
            .send_messages = in->topics[i].send_messages,
        };
    }
    out->topics = t;
}

const sl_permission_set_t *sl_client_conv_permissions(sl_client_conv_t *cv, sl_span_t raw)
{
    sl_permissions_t w;
    sl_permission_set_t *out = SL_CONV_NEW(cv, sl_permission_set_t, 1);
    if (out == NULL || !sl_permissions_unpack(raw, cv->arena, &w)) {
        cv->failed = true;
        return NULL;
    }
    *out = (sl_permission_set_t){
        .manage_servers = w.manage_servers,
        .read_servers = w.read_servers,
        .manage_users = w.manage_users,
        .read_users = w.read_users,
        .manage_streams = w.manage_streams,
        .read_streams = w.read_streams,
        .manage_topics = w.manage_topics,
        .read_topics = w.read_topics,
        .poll_messages = w.poll_messages,
        .send_messages = w.send_messages,
        .streams_count = w.streams_count,
    };
    sl_stream_permission_t *s = SL_CONV_NEW(cv, sl_stream_permission_t, w.streams_count);
    for (uint32_t i = 0; s != NULL && i < w.streams_count; i++)
        conv_stream_permission(cv, &w.streams[i], &s[i]);
    out->streams = s;
    return out;
}

static bool wire_stream_permission(sl_client_conv_t *cv, const sl_stream_permission_t *in,
                                   sl_stream_perms_t *out)
{
    *out = (sl_stream_perms_t){
        .stream_id = in->stream_id,
        .manage_stream = in->manage_stream,
        .read_stream = in->read_stream,
        .manage_topics = in->manage_topics,
        .read_topics = in->read_topics,
        .poll_messages = in->poll_messages,
        .send_messages = in->send_messages,
        .topics_count = in->topics_count,
    };
    if (in->topics_count > 0 && in->topics == NULL)
        return false;
    out->topics = SL_CONV_NEW(cv, sl_topic_perms_t, in->topics_count);
    for (uint32_t i = 0; out->topics != NULL && i < in->topics_count; i++) {
        const sl_topic_permission_t *t = &in->topics[i];
        out->topics[i] = (sl_topic_perms_t){
            .topic_id = t->topic_id,
            .manage_topic = t->manage_topic,
            .read_topic = t->read_topic,
            .poll_messages = t->poll_messages,
            .send_messages = t->send_messages,
        };
    }
    return true;
}

int sl_client_permissions_encode(sl_buf_t *b, sl_client_conv_t *cv, const sl_permission_set_t *in)
{
    sl_permissions_t w = {
        .manage_servers = in->manage_servers,
        .read_servers = in->read_servers,
        .manage_users = in->manage_users,
        .read_users = in->read_users,
        .manage_streams = in->manage_streams,
        .read_streams = in->read_streams,
        .manage_topics = in->manage_topics,
        .read_topics = in->read_topics,
        .poll_messages = in->poll_messages,
        .send_messages = in->send_messages,
        .streams_count = in->streams_count,
    };
    if (in->streams_count > 0 && in->streams == NULL)
        return -SL_ERR_INVALID_COMMAND;
    w.streams = SL_CONV_NEW(cv, sl_stream_perms_t, in->streams_count);
    for (uint32_t i = 0; w.streams != NULL && i < in->streams_count; i++) {
        if (!wire_stream_permission(cv, &in->streams[i], &w.streams[i]))
            return -SL_ERR_INVALID_COMMAND;
    }
    if (cv->failed)
        return -SL_ERR_ERROR;
    if (!sl_permissions_encode(b, &w))
        return sl_buf_ok(b) ? -SL_ERR_INVALID_COMMAND : -SL_ERR_COMMAND_LENGTH_ERROR;
    return 0;
}

/* --- system ------------------------------------------------------------------------ */

void sl_client_conv_client(sl_client_conv_t *cv, const sl_client_header_t *in,
                           const sl_client_group_t *groups, sl_client_info_t *out)
{
    *out = (sl_client_info_t){
        .client_id = in->client_id,
        .user_id = in->user_id,
        .transport = in->transport,
        .address = sl_client_conv_str(cv, in->address),
        .groups_count = in->groups_count,
    };
    if (groups == NULL)
        return;
    sl_membership_t *g = SL_CONV_NEW(cv, sl_membership_t, in->groups_count);
    for (uint32_t i = 0; g != NULL && i < in->groups_count; i++)
        g[i] = (sl_membership_t){groups[i].stream_id, groups[i].topic_id, groups[i].group_id};
    out->groups = g;
}

void sl_client_conv_stats(sl_client_conv_t *cv, const sl_get_stats_reply_t *in, sl_stats_t *out)
{
    *out = (sl_stats_t){
        .process_id = in->process_id,
        .cpu_usage = in->cpu_usage,
        .total_cpu_usage = in->total_cpu_usage,
        .memory_usage = in->memory_usage,
        .total_memory = in->total_memory,
        .available_memory = in->available_memory,
        .run_time_us = in->run_time_us,
        .start_time_us = in->start_time_us,
        .read_bytes = in->read_bytes,
        .written_bytes = in->written_bytes,
        .messages_size_bytes = in->messages_size_bytes,
        .streams_count = in->streams_count,
        .topics_count = in->topics_count,
        .partitions_count = in->partitions_count,
        .segments_count = in->segments_count,
        .messages_count = in->messages_count,
        .clients_count = in->clients_count,
        .consumer_groups_count = in->consumer_groups_count,
        .hostname = sl_client_conv_str(cv, in->hostname),
        .os_name = sl_client_conv_str(cv, in->os_name),
        .os_version = sl_client_conv_str(cv, in->os_version),
        .kernel_version = sl_client_conv_str(cv, in->kernel_version),
        .server_version = sl_client_conv_str(cv, in->server_version),
        .server_semver = in->server_semver,
        .cache_metrics_count = in->cache_metrics_count,
        .threads_count = in->threads_count,
        .free_disk_space = in->free_disk_space,
        .total_disk_space = in->total_disk_space,
    };
    sl_stats_cache_metric_t *m = SL_CONV_NEW(cv, sl_stats_cache_metric_t, in->cache_metrics_count);
    for (uint32_t i = 0; m != NULL && i < in->cache_metrics_count; i++) {
        const sl_cache_metric_t *w = &in->cache_metrics[i];
        m[i] = (sl_stats_cache_metric_t){w->stream_id, w->topic_id, w->partition_id,
                                         w->hits,      w->misses,   w->hit_ratio};
    }
    out->cache_metrics = m;
}

/* --- consumer groups -------------------------------------------------------------- */

void sl_client_conv_group(sl_client_conv_t *cv, const sl_group_header_t *in,
                          const sl_group_member_t *members, sl_consumer_group_t *out)
{
    *out = (sl_consumer_group_t){
        .id = in->id,
        .partitions_count = in->partitions_count,
        .members_count = in->members_count,
        .name = sl_client_conv_str(cv, in->name),
    };
    if (members == NULL)
        return;
    sl_consumer_group_member_t *m = SL_CONV_NEW(cv, sl_consumer_group_member_t, in->members_count);
    /* The partition arrays already live in the client's arena (the wire
     * decoder put them there), so they are shared rather than copied. */
    for (uint32_t i = 0; m != NULL && i < in->members_count; i++)
        m[i] = (sl_consumer_group_member_t){members[i].id, members[i].partitions_count,
                                            members[i].partitions};
    out->members = m;
}
