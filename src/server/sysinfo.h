/* Process and host figures for the GetStats reply (commands.md 10): CPU,
 * memory, times, disk I/O, threads, host and OS names, and the disk space of
 * the data directory, read from /proc, /etc/os-release, uname and statvfs.
 * The metadata counts (streams, topics, messages, clients...) are the
 * server's to fill. */
#ifndef SL_SERVER_SYSINFO_H
#define SL_SERVER_SYSINFO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "wire/cmd_system.h"

#define SL_SYSINFO_PATH_CAPACITY 4096u
#define SL_SYSINFO_TEXT_CAPACITY 256u

/* One per caller that wants its own CPU deltas (the reference keeps one per
 * shard). Plain data; not shared between threads. */
typedef struct sl_sysinfo {
    char data_dir[SL_SYSINFO_PATH_CAPACITY];
    char server_version[SL_SYSINFO_TEXT_CAPACITY];
    uint32_t server_semver;
    char hostname[SL_SYSINFO_TEXT_CAPACITY];
    char os_name[SL_SYSINFO_TEXT_CAPACITY];
    char os_version[SL_SYSINFO_TEXT_CAPACITY];
    char kernel_version[SL_SYSINFO_TEXT_CAPACITY];
    uint64_t start_time_s; /* process start, seconds since the epoch */
    long ticks_per_second; /* sysconf(_SC_CLK_TCK) */
    long page_size;
    long cores; /* online CPUs: the process CPU % is at most 100 x cores */
    /* CPU baselines of the previous call. */
    bool have_process_baseline;
    uint64_t process_ticks;
    uint64_t process_wall_ns; /* CLOCK_MONOTONIC */
    float process_cpu;        /* returned when no time has passed */
    uint64_t host_total_ticks;
    uint64_t host_idle_ticks;
    float host_cpu;
} sl_sysinfo_t;

/* Records what does not change while the process runs (OS, kernel, start
 * time, version) and the host CPU baseline. data_dir is the directory whose
 * volume is reported (system.path); version is the server's version string,
 * e.g. "0.1.0". Returns 0, or -SL_ERR_INVALID_CONFIGURATION when either text
 * does not fit its capacity. Nothing to free on failure. */
SL_WUR int sl_sysinfo_init(sl_sysinfo_t *si, const char *data_dir, const char *version);

/* Sets every process and host field of out and leaves the metadata counts,
 * cache metrics and clients_count untouched. Figures that cannot be read are
 * 0 and names fall back to "unknown_hostname", "unknown_os_name",
 * "unknown_os_version", "unknown_kernel_version". cpu_usage is the process
 * CPU % since the previous fill on this object (100 = one core busy; 0 on
 * the first call); total_cpu_usage is the host CPU % (0..100) since the
 * previous fill (or init). The string spans point into si and stay valid
 * until the next fill or destroy. */
void sl_sysinfo_fill(sl_sysinfo_t *si, sl_get_stats_reply_t *out);

void sl_sysinfo_destroy(sl_sysinfo_t *si);

/* "major.minor.patch" (any "-suffix" or "+build" ignored) as the decimal
 * number major ++ 3-digit minor ++ 3-digit patch: "0.9.0" -> 9000,
 * "1.2.3" -> 1002003. 0 when the text is not of that form, a minor or patch
 * exceeds 999, or the number does not fit a u32. */
uint32_t sl_sysinfo_semver(const char *version);

#endif
