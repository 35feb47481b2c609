/* Helpers shared by the robustness tests of tests/crash: numbered messages whose payload and id
 * are derived from their number (so any message read back can be checked byte for byte without
 * keeping copies), a poll of a whole partition that checks what it reads, a seeded random
 * generator, and small file surgery on segment files while sluiced is stopped. */
#ifndef SL_TEST_CRASH_UTIL_H
#define SL_TEST_CRASH_UTIL_H

#include <sluice/client.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"

/* --- randomness ------------------------------------------------------------------------- */

/* A seed from SLUICE_CRASH_SEED when set (to replay a failure), else from the clock; the test
 * prints it. */
uint64_t cu_seed(void);
/* xorshift64*: the next number of the sequence in *state (never 0). */
uint64_t cu_rand(uint64_t *state);
/* Uniform in [lo, hi]. */
uint64_t cu_rand_range(uint64_t *state, uint64_t lo, uint64_t hi);

/* --- numbered messages ------------------------------------------------------------------- */

/* Longest payload cu_payload writes. */
#define CU_PAYLOAD_MAX 320u

/* Message number n of a run tagged `tag`: id {n + 1, tag}; payload "<n:010>|" followed by
 * n-dependent filler (0..299 bytes). Returns the payload length. */
size_t cu_payload(uint64_t n, uint8_t out[CU_PAYLOAD_MAX]);
sl_msg_id_t cu_id(uint64_t n, uint64_t tag);

/* Sends messages first .. first + count - 1 as one batch to a partition. Returns what
 * sl_client_send_messages returned; out is written on success. */
int cu_send(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition, uint64_t tag,
            uint64_t first, uint32_t count, sl_send_result_t *out);
/* cu_send that must succeed at base offset `expect_offset`. */
void cu_send_ok(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition, uint64_t tag,
                uint64_t first, uint32_t count, uint64_t expect_offset);

/* Stops the server with SIGTERM; it must exit with status 0 (its log is shown otherwise). */
void cu_stop_clean(th_server_t *srv);

/* Connects to the server and logs in as iggy/iggy (the harness's default root). */
sl_client_t *cu_connect(const th_server_t *srv);

/* The number of a polled message that is a well-formed numbered message of run `tag` (payload
 * and id byte for byte, no headers); false otherwise. Asserts nothing, so threads may use it. */
bool cu_message_number(const sl_polled_message_t *m, uint64_t tag, uint64_t *n);

/* Starts sluiced on the harness's data directory and config (as th_start would) without
 * waiting for it to listen, for kills during start-up; reap it with waitpid. */
pid_t cu_spawn(const th_server_t *srv);

/* VmRSS of a process in KiB from /proc/<pid>/status, 0 when it cannot be read. */
uint64_t cu_rss_kib(pid_t pid);

/* Polls the whole partition from offset 0 and checks every message: offsets contiguous from
 * 0, the current offset of each reply equal to the last offset, and each message a well-formed
 * numbered message of `tag` (payload and id byte for byte). numbers[o] gets the number of the
 * message at offset o (at most cap). Returns how many messages the partition holds. */
uint64_t cu_read_all(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition,
                     uint64_t tag, uint64_t *numbers, uint64_t cap);

/* --- the fault control file (server/test_faults.h) -------------------------------------- */

/* Makes an empty fault control file under $TMPDIR (its path in fault_file, cap bytes), names
 * it in SLUICE_FAULT_FILE (inherited by sluiced; a test process is the only one that sets it)
 * and starts sluiced (opt as th_start). False when the file cannot be made; exits 77 when
 * sluiced cannot start here (io_uring refused). */
bool cu_start_with_faults(th_server_t *srv, const th_options_t *opt, char *fault_file,
                          size_t cap);
/* Replaces the control file's content with line ("" disarms), atomically (rename): sluiced
 * may re-read it at any request. */
void cu_set_fault(const char *fault_file, const char *line);
/* cu_stop_clean, then removes the data directory and the control file. */
void cu_stop_with_faults(th_server_t *srv, const char *fault_file);

/* --- files (server stopped) ---------------------------------------------------------------- */

/* <data>/streams/<s>/topics/<t>/partitions/<p> of the harness's data directory. */
void cu_partition_dir(const th_server_t *srv, uint32_t stream_id, uint32_t topic_id,
                      uint32_t partition, char *out, size_t cap);
/* Start offsets of the segments in a partition directory, ascending; returns the count. */
size_t cu_segments(const char *dir, uint64_t *starts, size_t cap);
/* "<dir>/<start:020><ext>". */
void cu_segment_path(const char *dir, uint64_t start, const char *ext, char *out, size_t cap);

uint64_t cu_file_size(const char *path);
void cu_truncate(const char *path, uint64_t size);
/* Reads the whole file (malloc'd, *len its size). */
uint8_t *cu_read_file(const char *path, size_t *len);
void cu_write_at(const char *path, uint64_t off, const void *p, size_t n);
/* XORs n bytes at off with 0xA5. */
void cu_garble(const char *path, uint64_t off, size_t n);

/* One batch record of a .log as the test sees it. */
typedef struct cu_batch {
    uint64_t position;
    uint64_t length;
    uint64_t base_offset;
    uint32_t count;
} cu_batch_t;

/* Walks the records of a .log by their batch_length fields; returns how many were whole. */
size_t cu_log_batches(const char *path, cu_batch_t *out, size_t cap);

#endif
