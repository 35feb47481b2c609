/* Test-only I/O fault injection into the real sluiced process, so integration tests can make
 * segment writes fail (ENOSPC, EIO, short writes) the way a full or failing disk would.
 *
 * Off unless the environment variable SLUICE_FAULT_FILE names a control file when sluiced
 * starts; nothing else turns it on, and a warning is logged when it is set. While on, the
 * server re-reads that file before every request frame and on every tick. Its first line is
 * one fault plan for src/base/io.h (sl_io_fault_t):
 *
 *     <error> <call> [<path-substring>] [after=<n>] [count=<n>] [short=<bytes>] [delay=<ms>]
 *
 * error: enospc, eio, edquot, erofs or a positive errno number, or "slow" (fail nothing; needs
 * delay); call: an sl_io_call_name() ("pwritev", "pwrite", "fdatasync", ...), "writes", "syncs"
 * or "any"; the path substring limits the plan to matching files (".log", ".index"); after,
 * count and short are the plan's fields of the same names, and delay its delay_ms (at most
 * 60000): each faulted call sleeps that long first. So "slow syncs delay=200" is a slow disk
 * (every fdatasync, fsync and directory fsync takes 200 ms more, then succeeds), and
 * "slow fdatasync journal delay=500 count=3" slows three journal syncs only. A missing, empty or
 * unreadable file clears the plan. A plan is (re)armed, with its counters reset, only when the
 * file's text changes. Every change is logged ("test faults: armed ..." / "test faults: cleared").
 * The line "hold workers" arms no plan but holds the worker pool (server/work_pool.h): jobs queue
 * and none starts until the line changes, so a test can see requests answered while background work
 * is pending, or kill the server with it pending. "hold telemetry" holds the OpenTelemetry exporter
 * the same way. Runs on the loop thread. */
#ifndef SL_SERVER_TEST_FAULTS_H
#define SL_SERVER_TEST_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

/* The line "delay creates <ms>" arms no plan: each partition's first segment, created off
 * the loop (server/segment_create.h), is created that many milliseconds late (at most 60000),
 * so a test can delete, purge or read a partition while its files are in flight. While a plan
 * is armed, first segments are created on the loop thread as without the creator, so the plan
 * sees those calls. */
uint32_t sl_test_faults_create_delay_ms(void);
/* True while an sl_io fault plan is armed. */
bool sl_test_faults_plan_armed(void);

/* Reads SLUICE_FAULT_FILE; true when fault injection is on for this process. */
bool sl_test_faults_init(void);
/* Applies the control file's current text (no-op when off or unchanged). */
void sl_test_faults_poll(void);
/* True while the control file says "hold workers". */
bool sl_test_faults_hold_workers(void);
/* True while it says "hold telemetry": the OpenTelemetry exporter sends
 * nothing, so its queues fill (server/otel.h). */
bool sl_test_faults_hold_telemetry(void);

#endif
