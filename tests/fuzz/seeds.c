/* Builds the seed corpus of every fuzz target: the golden vectors of
 * tests/vectors cut to each target's input format, plus a few inputs made
 * with the project's own encoders. Usage: sl_fuzz_seeds VECTORS_DIR OUT_DIR
 * (OUT_DIR/<target>/ is created for each target; run.sh calls this). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/bytes.h"
#include "meta/entry.h"
#include "meta/state.h"
#include "rest/rest.h"
#include "wire/batch.h"
#include "vsr/client_table.h"
#include "vsr/frame.h"
#include "wire/codec.h"
#include "wire/header.h"
#include "wire/perms.h"
#include "wire/prim.h"
#include "wire/tlv.h"
#ifdef SL_FUZZ_HAVE_COMMANDS
#include "wire/command.h"
#endif

static const char *vectors_dir;
static const char *out_dir;

static _Noreturn void die(const char *what, const char *path)
{
    fprintf(stderr, "sl_fuzz_seeds: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Reads a vector file into b: the hex column is characters 10..58 of each
 * line (tests/vectors/README.md). */
static void load_vector(sl_buf_t *b, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", vectors_dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open", path);
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        for (size_t i = 10; i + 1 < n && i < 58; i += 3) {
            int hi = hex_digit(line[i]), lo = hex_digit(line[i + 1]);
            if (hi < 0 || lo < 0)
                break;
            sl_put_u8(b, (uint8_t)(hi << 4 | lo));
        }
    }
    fclose(f);
    if (!sl_buf_ok(b) || b->len == 0)
        die("empty or unreadable vector", path);
}

/* A vector's bytes [from, to), to == 0 meaning its end. */
static sl_buf_t vector_slice(const char *name, size_t from, size_t to)
{
    sl_buf_t all, out;
    sl_buf_init(&all, 0);
    sl_buf_init(&out, 0);
    load_vector(&all, name);
    if (to == 0)
        to = all.len;
    if (from > to || to > all.len) {
        errno = ERANGE;
        die("vector too short:", name);
    }
    /* A zero-length put on a fresh buffer would compute NULL + 0. */
    if (to > from)
        sl_put_bytes(&out, all.data + from, to - from);
    sl_buf_free(&all);
    return out;
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        die("cannot create", path);
}

/* Writes OUT_DIR/target/name = prefix || body, then empties body. */
static void emit(const char *target, const char *name, sl_span_t prefix, sl_buf_t *body)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", out_dir, target);
    make_dir(path);
    snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || !sl_buf_ok(body))
        die("cannot write", path);
    bool ok = (prefix.len == 0 || fwrite(prefix.ptr, 1, prefix.len, f) == prefix.len) &&
              (body->len == 0 || fwrite(body->data, 1, body->len, f) == body->len);
    if (fclose(f) != 0 || !ok)
        die("cannot write", path);
    sl_buf_reset(body);
}

static const sl_span_t no_prefix = {NULL, 0};

/* --- fuzz_header: whole frames ------------------------------------------- */

static void seeds_header(void)
{
    static const char *const frames[] = {
        "a_ping_request.hex",
        "b_login_register_request.hex",
        "c2_send_messages_request.hex",
        "f_eviction_incompatible_protocol.hex",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(frames); i++) {
        sl_buf_t v = vector_slice(frames[i], 0, 0);
        emit("fuzz_header", frames[i], no_prefix, &v);
        sl_buf_free(&v);
    }
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint8_t *hdr = sl_buf_extend(&b, SL_HEADER_SIZE);
    sl_reply_header_t reply = {.size = 300,
                               .view = 1,
                               .request = 7,
                               .operation = SL_OP_CREATE_STREAM,
                               .client = {1, 2},
                               .op = 9,
                               .commit = 9,
                               .timestamp = 5};
    sl_reply_header_encode(hdr, &reply);
    emit("fuzz_header", "reply_ok", no_prefix, &b);
    hdr = sl_buf_extend(&b, SL_HEADER_SIZE);
    reply.size = SL_HEADER_SIZE;
    reply.status = 3;
    sl_reply_header_encode(hdr, &reply);
    emit("fuzz_header", "reply_status", no_prefix, &b);
    for (uint8_t reason = 1; reason <= SL_EVICT_MALFORMED_LOGIN; reason += 7) {
        sl_eviction_header_t evict = {.client = {3, 0}, .reason = reason};
        char name[32];
        snprintf(name, sizeof(name), "eviction_%u", reason);
        hdr = sl_buf_extend(&b, SL_HEADER_SIZE);
        sl_eviction_header_encode(hdr, &evict);
        emit("fuzz_header", name, no_prefix, &b);
    }
    sl_buf_free(&b);
}

/* --- fuzz_tlv: [mode byte][block] ------------------------------------------ */

static void seeds_tlv(void)
{
    static const uint8_t user_headers = 0, options = 1, poptions = 2;
    /* Frame 1 of vector c carries a 12-byte user-header block at body 329. */
    sl_buf_t b = vector_slice("c_send_messages_body.hex", 329, 341);
    emit("fuzz_tlv", "user_headers_c", sl_span(&user_headers, 1), &b);

    sl_buf_t block;
    sl_buf_init(&block, 0);
    uint8_t seconds[8] = {60};
    sl_tlv_put_pair(&block, "message_expiry", SL_KIND_UINT64, sl_span(seconds, 8));
    sl_tlv_put_pair(&block, "compression", SL_KIND_STRING, sl_span_str("gzip"));
    sl_tlv_put_pair(&block, "replicated", SL_KIND_BOOL, sl_span("\x01", 1));
    sl_put_span(&b, sl_buf_span(&block));
    emit("fuzz_tlv", "options", sl_span(&options, 1), &b);
    sl_put_span(&b, sl_buf_span(&block));
    emit("fuzz_tlv", "options_as_headers", sl_span(&user_headers, 1), &b);
    sl_poptions_encode(&b, sl_buf_span(&block));
    sl_poptions_encode(&b, sl_span(NULL, 0));
    emit("fuzz_tlv", "poptions", sl_span(&poptions, 1), &b);
    sl_buf_free(&block);
    sl_buf_free(&b);
}

/* --- fuzz_prim_perms: [selector][primitive]... ----------------------------- */

/* Selectors of fuzz_prim_perms.c. */
enum {
    P_NAME,
    P_STR8,
    P_STR32,
    P_IDENT,
    P_CONSUMER,
    P_OPT,
    P_PARTITIONING,
    P_STRATEGY,
    P_ACK,
    P_PERMS
};

static void put_permissions(sl_buf_t *b)
{
    sl_topic_perms_t topics[2] = {{.topic_id = 1, .read_topic = true},
                                  {.topic_id = 2, .send_messages = true}};
    sl_stream_perms_t streams[2] = {
        {.stream_id = 1, .read_stream = true, .topics_count = 2, .topics = topics},
        {.stream_id = 7, .manage_topics = true},
    };
    sl_permissions_t p = {
        .read_users = true, .poll_messages = true, .streams_count = 2, .streams = streams};
    sl_put_u8(b, P_PERMS);
    sl_permissions_encode(b, &p);
}

static void seeds_prim_perms(void)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_ident_t stream = sl_ident_name("s"), number = sl_ident_number(42);
    sl_consumer_t group = {SL_CONSUMER_GROUP, sl_ident_number(3)};
    sl_partitioning_t by_id = {.kind = SL_PARTITIONING_PARTITION_ID, .partition_id = 1};
    sl_partitioning_t by_key = {.kind = SL_PARTITIONING_MESSAGES_KEY, .key = sl_span_str("key")};
    sl_partitioning_t balanced = {.kind = SL_PARTITIONING_BALANCED};

    sl_put_u8(&b, P_NAME);
    sl_name_encode(&b, sl_span_str("orders"));
    sl_put_u8(&b, P_STR8);
    sl_str8_encode(&b, sl_span_str(""));
    sl_put_u8(&b, P_STR32);
    sl_str32_encode(&b, sl_span_str("c-sdk"));
    sl_put_u8(&b, P_IDENT);
    sl_ident_encode(&b, &stream);
    sl_put_u8(&b, P_IDENT);
    sl_ident_encode(&b, &number);
    sl_put_u8(&b, P_CONSUMER);
    sl_consumer_encode(&b, &group);
    sl_put_u8(&b, P_OPT);
    sl_opt_partition_encode(&b, (sl_opt_partition_t){true, 1});
    sl_put_u8(&b, P_PARTITIONING);
    sl_partitioning_encode(&b, &by_id);
    sl_put_u8(&b, P_PARTITIONING);
    sl_partitioning_encode(&b, &by_key);
    sl_put_u8(&b, P_PARTITIONING);
    sl_partitioning_encode(&b, &balanced);
    sl_put_u8(&b, P_STRATEGY);
    sl_strategy_encode(&b, (sl_strategy_t){SL_STRATEGY_OFFSET, 10});
    sl_put_u8(&b, P_ACK);
    sl_put_u8(&b, SL_ACK_QUORUM);
    put_permissions(&b);
    emit("fuzz_prim_perms", "all_primitives", no_prefix, &b);

    sl_permissions_t root = sl_permissions_root();
    sl_put_u8(&b, P_PERMS);
    sl_permissions_encode(&b, &root);
    emit("fuzz_prim_perms", "perms_root", no_prefix, &b);
    put_permissions(&b);
    emit("fuzz_prim_perms", "perms_grants", no_prefix, &b);
    sl_buf_free(&b);
}

/* --- fuzz_request / fuzz_reply: [row u16][body] ------------------------------ */

#ifdef SL_FUZZ_HAVE_COMMANDS
/* Writes [row selector][vector bytes from its offset `from` on] for the
 * row of a command code. */
static void emit_row(const char *target, uint32_t code, const char *vector, size_t from)
{
    const sl_command_t *row = sl_command_by_code(code);
    if (!row) {
        fprintf(stderr, "sl_fuzz_seeds: no row for command %u, seed %s skipped\n", code, vector);
        return;
    }
    uint8_t sel[2];
    sl_store_u16(sel, (uint16_t)(row - sl_commands));
    sl_buf_t b = vector_slice(vector, from, 0);
    char name[128];
    snprintf(name, sizeof(name), "%s_%s", row->stem, vector);
    emit(target, name, sl_span(sel, 2), &b);
    sl_buf_free(&b);
}

static void seeds_commands(void)
{
    /* Vector a is a bare header: PING has an empty body. */
    emit_row("fuzz_request", SL_CMD_PING, "a_ping_request.hex", SL_HEADER_SIZE);
    emit_row("fuzz_request", SL_CMD_LOGIN_REGISTER, "b_login_register_request.hex", SL_HEADER_SIZE);
    emit_row("fuzz_request", SL_CMD_SEND_MESSAGES, "c_send_messages_body.hex", 0);
    emit_row("fuzz_reply", SL_CMD_POLL_MESSAGES, "e_poll_reply_body_sliced.hex", 0);
    uint8_t sel[2];
    sl_buf_t b;
    sl_buf_init(&b, 0);
    /* An empty body for every row, so that each codec is reached at once. */
    for (size_t i = 0; i < sl_commands_count; i++) {
        char name[64];
        snprintf(name, sizeof(name), "empty_%s", sl_commands[i].stem);
        sl_store_u16(sel, (uint16_t)i);
        emit("fuzz_request", name, sl_span(sel, 2), &b);
        emit("fuzz_reply", name, sl_span(sel, 2), &b);
    }
    sl_buf_free(&b);
}
#endif

/* --- fuzz_batch: [expected_count u32][record] -------------------------------- */

static void seeds_batch(void)
{
    uint8_t count[4];
    sl_store_u32(count, 2);
    /* Vector c's batch record starts after the 20-byte metadata section. */
    sl_buf_t b = vector_slice("c_send_messages_body.hex", 20, 0);
    emit("fuzz_batch", "batch_c", sl_span(count, 4), &b);
    sl_buf_free(&b);
    b = vector_slice("d_stored_batch.hex", 0, 0);
    emit("fuzz_batch", "batch_d", sl_span(count, 4), &b);
    /* A rejected result section: {count 1, index 0, code 3}. */
    sl_result_put_error(&b, 3);
    emit("fuzz_batch", "result_error", no_prefix, &b);
    sl_buf_free(&b);
}

/* --- fuzz_toml: the sample configuration ------------------------------------ */

static void seeds_toml(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/../../config/sluiced.toml", vectors_dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        die("open", path);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint8_t chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sl_put_bytes(&b, chunk, n);
    fclose(f);
    emit("fuzz_toml", "sample_config", no_prefix, &b);
    sl_buf_free(&b);
    /* A roster: [[arrays]], a table of an element, inline tables. */
    static const char roster[] =
        "[cluster]\nenabled = true\n[[cluster.nodes]]\nname = \"a\"\n"
        "ports = { tcp = 8090, tcp_replica = 9090 }\n[[cluster.nodes]]\nname = 'b'\n"
        "[cluster.nodes.ports]\ntcp = 8091\n[other]\nx = {}\n";
    sl_buf_init(&b, 0);
    sl_put_bytes(&b, roster, sizeof(roster) - 1);
    emit("fuzz_toml", "roster", no_prefix, &b);
    sl_buf_free(&b);
}

/* --- fuzz_rest: paths, JSON bodies and tokens of the HTTP API ---------------- */

/* [mode][route - 1][query length][query][body] for the build mode. */
static void rest_build_seed(const char *name, sl_rest_route_t route, const char *query,
                            const char *body)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_u8(&b, 1);
    sl_put_u8(&b, (uint8_t)(route - 1));
    sl_put_u8(&b, (uint8_t)strlen(query));
    sl_put_bytes(&b, query, strlen(query));
    sl_put_bytes(&b, body, strlen(body));
    emit("fuzz_rest", name, no_prefix, &b);
    sl_buf_free(&b);
}

static void seeds_rest(void)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    const char *path = "\x00\x01/streams/1/topics/orders/consumer-offsets/worker?partition_id=0";
    sl_put_bytes(&b, path, strlen(path));
    emit("fuzz_rest", "route", no_prefix, &b);
    rest_build_seed(
        "send", SL_ROUTE_SEND, "ack=none",
        "{\"partitioning\":{\"kind\":\"messages_key\",\"value\":\"a2V5\"},"
        "\"messages\":[{\"id\":\"5d4c3b2a-0000-4000-8000-000000000001\","
        "\"payload\":\"aGVsbG8=\",\"user_headers\":[{\"key\":{\"kind\":\"string\","
        "\"value\":\"a2V5\"},\"value\":{\"kind\":\"uint64\",\"value\":\"KgAAAAAAAAA=\"}}]}]}");
    rest_build_seed("create_topic", SL_ROUTE_TOPIC_CREATE, "",
                    "{\"name\":\"t\",\"partitions_count\":2,\"compression_algorithm\":\"gzip\","
                    "\"message_expiry\":18446744073709551615,\"max_topic_size\":0,"
                    "\"options\":{\"segment_size\":\"128 MiB\"}}");
    rest_build_seed("create_user", SL_ROUTE_USER_CREATE, "",
                    "{\"username\":\"alice\",\"password\":\"secret\",\"status\":\"active\","
                    "\"permissions\":{\"global\":{\"manage_servers\":false,\"read_servers\":true,"
                    "\"manage_users\":false,\"read_users\":true,\"manage_streams\":false,"
                    "\"read_streams\":true,\"manage_topics\":false,\"read_topics\":true,"
                    "\"poll_messages\":true,\"send_messages\":true},\"streams\":{\"3\":{"
                    "\"manage_stream\":false,\"read_stream\":true,\"manage_topics\":false,"
                    "\"read_topics\":true,\"poll_messages\":true,\"send_messages\":false,"
                    "\"topics\":{\"1\":{\"manage_topic\":false,\"read_topic\":true,"
                    "\"poll_messages\":true,\"send_messages\":true}}}}}}");
    rest_build_seed("poll", SL_ROUTE_POLL, "consumer_id=worker&partition_id=1&kind=n&count=5", "");
    rest_build_seed("store_offset", SL_ROUTE_OFFSET_STORE, "",
                    "{\"consumer_id\":\"w\",\"partition_id\":null,\"offset\":3}");
    const char *login = "\x04\x00{\"username\":\"iggy\",\"password\":\"iggy\"}";
    sl_put_bytes(&b, login, strlen(login));
    emit("fuzz_rest", "login", no_prefix, &b);
    const char *jwt = "\x03eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIwIn0.c2ln";
    sl_put_bytes(&b, jwt, strlen(jwt));
    emit("fuzz_rest", "jwt", no_prefix, &b);
    sl_buf_free(&b);
}

/* --- fuzz_ws: [mode][schedule][bytes] ------------------------------------------ */

/* One masked client frame (RFC 6455 5.2), key 11 22 33 44. */
static void ws_seed_frame(sl_buf_t *b, uint8_t first, const uint8_t *p, size_t n)
{
    static const uint8_t key[4] = {0x11, 0x22, 0x33, 0x44};
    sl_put_u8(b, first);
    if (n < 126) {
        sl_put_u8(b, (uint8_t)(0x80 | n));
    } else {
        sl_put_u8(b, 0x80 | 126);
        sl_put_u8(b, (uint8_t)(n >> 8));
        sl_put_u8(b, (uint8_t)n);
    }
    sl_put_bytes(b, key, 4);
    for (size_t i = 0; i < n; i++)
        sl_put_u8(b, p[i] ^ key[i % 4]);
}

static void seeds_ws(void)
{
    /* A PING request (vector a's header) as one message; then fragmented
     * with a ping inside; then a Close. Mode 8: after the upgrade. */
    uint8_t frame[SL_HEADER_SIZE] = {0};
    sl_store_u32(frame + SL_HDR_OFF_SIZE, SL_HEADER_SIZE);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_u8(&b, 8);
    sl_put_u8(&b, 7);
    ws_seed_frame(&b, 0x82, frame, sizeof(frame));
    emit("fuzz_ws", "one_message", no_prefix, &b);
    sl_put_u8(&b, 8);
    sl_put_u8(&b, 200);
    ws_seed_frame(&b, 0x02, frame, 20);
    ws_seed_frame(&b, 0x89, (const uint8_t *)"hi", 2);
    ws_seed_frame(&b, 0x80, frame + 20, sizeof(frame) - 20);
    ws_seed_frame(&b, 0x88, (const uint8_t *)"\x03\xe8", 2);
    emit("fuzz_ws", "fragments_ping_close", no_prefix, &b);
    /* Mode 0: the upgrade request comes with the bytes; mode 4: alone. */
    static const char req[] = "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n";
    for (uint8_t mode = 0; mode <= 4; mode += 4) {
        sl_put_u8(&b, mode);
        sl_put_u8(&b, 3);
        sl_put_bytes(&b, req, sizeof(req) - 1);
        if (mode == 0)
            ws_seed_frame(&b, 0x82, frame, sizeof(frame));
        emit("fuzz_ws", mode ? "upgrade_alone" : "upgrade_and_message", no_prefix, &b);
    }
    sl_buf_free(&b);
}

/* --- fuzz_meta_snapshot: a small state's image without its trailer --------- */

/* Applies one metadata entry of root (user 0) with the body in b (then
 * emptied); false when apply refused it or its result is not success. */
static bool seed_apply(sl_meta_t *m, uint64_t *op, uint8_t operation, sl_buf_t *b)
{
    sl_meta_entry_t e = {.op = *op,
                         .timestamp = 1700000000000000ull + *op,
                         .operation = operation,
                         .body = sl_buf_span(b)};
    (*op)++;
    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    uint32_t result = 1;
    sl_span_t rest;
    bool ok = sl_meta_apply(m, &e, &reply) == 0 &&
              sl_result_split(sl_buf_span(&reply), &result, &rest) == 0 && result == 0;
    sl_buf_free(&reply);
    sl_buf_reset(b);
    return ok;
}

static void seeds_meta_snapshot(void)
{
    sl_meta_t *m;
    if (sl_meta_create(64, sl_span_str("0.1.0"), &m) != 0 ||
        sl_meta_bootstrap_root(
            m, sl_span_str("iggy"),
            sl_span_str("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo"), 1) != 0)
        die("meta", "state");
    sl_buf_t b;
    sl_buf_init(&b, 0);
    if (sl_meta_encode(m, &b) != 0)
        die("meta", "encode");
    b.len -= 8; /* the target appends the trailer itself */
    emit("fuzz_meta_snapshot", "root_only", no_prefix, &b);
    /* Streams, topics with partitions, purge generations and a group: the
     * parts of the image the root-only seed has none of. */
    uint64_t op = sl_meta_last_op(m) + 1;
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_create_stream_request_t cs = {.name = sl_span_str("orders")};
    sl_create_topic_request_t ct = {
        .stream_id = sl_ident_number(0), .partitions_count = 3, .name = sl_span_str("events")};
    sl_purge_topic_request_t pt = {.stream_id = sl_ident_number(0), .topic_id = sl_ident_number(0)};
    sl_create_consumer_group_request_t cg = {
        .stream = sl_ident_number(0), .topic = sl_ident_number(0), .name = sl_span_str("g")};
    if (sl_create_stream_request_encode(&body, &cs) != 0 ||
        !seed_apply(m, &op, SL_OP_CREATE_STREAM, &body) ||
        sl_create_topic_request_encode(&body, &ct) != 0 ||
        !seed_apply(m, &op, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, &body) ||
        sl_purge_topic_request_encode(&body, &pt) != 0 ||
        !seed_apply(m, &op, SL_OP_PURGE_TOPIC, &body) ||
        sl_create_consumer_group_request_encode(&body, &cg) != 0 ||
        !seed_apply(m, &op, SL_OP_CREATE_CONSUMER_GROUP, &body))
        die("meta", "state with topics");
    sl_buf_reset(&b);
    if (sl_meta_encode(m, &b) != 0)
        die("meta", "encode");
    b.len -= 8;
    emit("fuzz_meta_snapshot", "stream_topic_group", no_prefix, &b);
    sl_buf_free(&body);
    sl_buf_free(&b);
    sl_meta_destroy(m);
}

/* --- fuzz_meta_journal: journal.wal files ------------------------------------ */

/* Three chained entries (a login's Register, a CreateStream, a disconnect logout), as appends
 * write them: given as they are (mode 0) and to be resealed and relinked (mode 3), and the
 * same file cut inside its last entry (a torn tail). */
static void seeds_meta_journal(void)
{
    static const uint8_t operations[] = {SL_OP_REGISTER, SL_OP_CREATE_STREAM, SL_OP_LOGOUT};
    sl_buf_t file, body;
    sl_buf_init(&file, 0);
    sl_buf_init(&body, 0);
    sl_create_stream_request_t cs = {.name = sl_span_str("orders")};
    sl_u128_t parent = {0, 0};
    for (uint32_t i = 0; i < 3; i++) {
        sl_buf_reset(&body);
        if (operations[i] == SL_OP_CREATE_STREAM &&
            sl_create_stream_request_encode(&body, &cs) != 0)
            die("meta", "journal body");
        sl_meta_entry_t e = {.op = 1 + i,
                             .timestamp = 1700000000000000ull + i,
                             .client = {7, 0},
                             .request = i,
                             .operation = operations[i],
                             .body = sl_buf_span(&body)};
        uint8_t header[SL_META_HEADER_SIZE];
        parent = sl_meta_header_encode(header, &e, parent);
        sl_put_bytes(&file, header, sizeof(header));
        sl_put_bytes(&file, body.data, body.len);
    }
    size_t whole = file.len;
    static const uint8_t modes[] = {0, 3};
    sl_buf_t copy;
    sl_buf_init(&copy, 0);
    for (int k = 0; k < 2; k++) {
        sl_put_bytes(&copy, file.data, whole);
        emit("fuzz_meta_journal", k ? "three_entries_resealed" : "three_entries",
             sl_span(&modes[k], 1), &copy);
    }
    sl_put_bytes(&copy, file.data, whole - 3);
    emit("fuzz_meta_journal", "torn_tail", sl_span(&modes[0], 1), &copy);
    sl_buf_free(&copy);
    sl_buf_free(&file);
    sl_buf_free(&body);
}

/* --- fuzz_encryption: [mode u8][bytes] ------------------------------------------ */

/* Mode 1 (seal then open): payload lengths and bytes; mode 0: a plain
 * record, which is not sealed and must be refused. */
static void seeds_encryption(void)
{
    static const uint8_t one = 1, zero = 0;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    static const uint8_t payloads[] = {5, 'h', 'e', 'l', 'l', 'o', 0, 64, 'x', 3, 'a', 'b', 'c'};
    sl_put_bytes(&b, payloads, sizeof(payloads));
    emit("fuzz_encryption", "three_messages", sl_span(&one, 1), &b);
    sl_buf_reset(&b);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &b);
    sl_span_t rec;
    if (sl_batch_add(&bb, (sl_u128_t){1, 0}, 1, sl_span_str("plain"), (sl_span_t){NULL, 0}) ||
        sl_batch_finish(&bb, &rec))
        die("cannot build", "a plain record");
    emit("fuzz_encryption", "plain_record", sl_span(&zero, 1), &b);
    sl_buf_free(&b);
}

/* --- fuzz_vsr_frame: replica-plane frames, a manifest, a client table ------ */

/* Appends a frame (header + body) built by the project's encoder. */
static void put_frame(sl_buf_t *b, const sl_vsr_frame_t *f, sl_span_t body)
{
    uint8_t *h = sl_buf_extend(b, SL_HEADER_SIZE);
    if (h == NULL)
        die("vsr", "seed");
    sl_vsr_header_encode(h, f, body);
    sl_put_span(b, body);
}

static void seeds_vsr(void)
{
    static const uint8_t as_is[1] = {0}, resealed[1] = {1}, manifest[1] = {2}, table[1] = {3};
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_PREPARE;
    f.h.view = 3;
    f.u.prepare = (sl_vsr_prepare_t){.client = {7, 0},
                                     .op = 2,
                                     .commit = 1,
                                     .timestamp = 1000,
                                     .request = 1,
                                     .operation = SL_OP_CREATE_STREAM,
                                     .group = SL_VSR_GROUP_METADATA};
    sl_buf_t prep, b;
    sl_buf_init(&prep, 0);
    sl_buf_init(&b, 0);
    put_frame(&prep, &f, sl_span("\x06orders", 7));
    sl_put_span(&b, sl_buf_span(&prep));
    emit("fuzz_vsr_frame", "prepare", sl_span(as_is, 1), &b);
    /* A DoViewChange and a StartView carrying that prepare's header. */
    sl_span_t entry = sl_span(prep.data, SL_HEADER_SIZE);
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_DO_VIEW_CHANGE;
    f.h.view = 4;
    f.u.do_view_change = (sl_vsr_do_view_change_t){.op = 2,
                                                   .commit = 1,
                                                   .group = SL_VSR_GROUP_METADATA,
                                                   .log_view = 3,
                                                   .present_bitset = {1, 0}};
    put_frame(&b, &f, entry);
    emit("fuzz_vsr_frame", "do_view_change", sl_span(resealed, 1), &b);
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_START_VIEW;
    f.h.view = 4;
    f.u.start_view = (sl_vsr_start_view_t){.op = 2, .commit = 1, .group = SL_VSR_GROUP_METADATA};
    put_frame(&b, &f, entry);
    emit("fuzz_vsr_frame", "start_view", sl_span(resealed, 1), &b);
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_COMMIT;
    f.u.commit =
        (sl_vsr_commit_t){.timestamp_monotonic = 5, .commit = 2, .group = SL_VSR_GROUP_METADATA};
    put_frame(&b, &f, sl_span(NULL, 0));
    emit("fuzz_vsr_frame", "commit", sl_span(as_is, 1), &b);
    sl_vsr_artifact_t a[2] = {{0, 64, 100, 1}, {1, 64, 20, 2}};
    sl_vsr_manifest_encode(&b, a, 2);
    emit("fuzz_vsr_frame", "manifest", sl_span(manifest, 1), &b);
    sl_vsr_clients_t t;
    if (sl_vsr_clients_init(&t, 4, 64) != 0)
        die("vsr", "client table");
    sl_vsr_client_t *c = sl_vsr_clients_register(&t, (sl_u128_t){9, 9}, 3, 1);
    sl_vsr_clients_commit(&t, c, 2, (sl_u128_t){0, 0}, 5, 77, SL_OP_CREATE_STREAM,
                          sl_span("\0\0\0\0", 4));
    sl_vsr_clients_encode(&t, &b);
    b.len -= 8; /* the target appends the trailer itself */
    emit("fuzz_vsr_frame", "client_table", sl_span(table, 1), &b);
    sl_vsr_clients_free(&t);
    sl_buf_free(&prep);
    sl_buf_free(&b);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s VECTORS_DIR OUT_DIR\n", argv[0]);
        return 2;
    }
    vectors_dir = argv[1];
    out_dir = argv[2];
    make_dir(out_dir);
    seeds_header();
    seeds_tlv();
    seeds_prim_perms();
#ifdef SL_FUZZ_HAVE_COMMANDS
    seeds_commands();
#endif
    seeds_batch();
    seeds_rest();
    seeds_toml();
    seeds_meta_snapshot();
    seeds_meta_journal();
    seeds_ws();
    seeds_encryption();
    seeds_vsr();
    return 0;
}
