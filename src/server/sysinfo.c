/* Process and host figures for GetStats (server/sysinfo.h). Everything comes
 * from small files under /proc and /etc, read whole into stack buffers; a
 * file that cannot be read leaves its fields 0 rather than failing the call. */
#include "server/sysinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/bytes.h"
#include "base/io.h"

#define US_PER_SECOND 1000000ull
/* Larger than /proc/self/status and /proc/meminfo on any machine seen. */
#define PROC_TEXT_CAPACITY 8192u

/* The number after "key" at the start of a line ("MemTotal:   123 kB"). */
static bool find_u64(const char *text, const char *key, uint64_t *out)
{
    size_t key_len = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, key, key_len) == 0) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(line + key_len, &end, 10);
            if (errno != 0 || end == line + key_len)
                return false;
            *out = v;
            return true;
        }
    }
    return false;
}

/* Copies src (len bytes) into dst, cut at a UTF-8 boundary to fit; falls
 * back to `fallback` when src is empty or not UTF-8. */
static void copy_text(char *dst, size_t cap, const char *src, size_t len, const char *fallback)
{
    if (len >= cap) {
        len = cap - 1;
        while (len > 0 && ((uint8_t)src[len] & 0xC0u) == 0x80u)
            len--;
    }
    if (len == 0 || !sl_utf8_valid((const uint8_t *)src, len)) {
        snprintf(dst, cap, "%s", fallback);
        return;
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t sl_sysinfo_semver(const char *version)
{
    uint64_t part[3] = {0, 0, 0};
    const char *p = version;
    for (int i = 0; i < 3; i++) {
        if (p == NULL || *p < '0' || *p > '9')
            return 0;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno != 0 || v > UINT32_MAX)
            return 0;
        part[i] = v;
        char want = i < 2 ? '.' : '\0';
        if (i == 2 && (*end == '-' || *end == '+'))
            want = *end;
        if (*end != want)
            return 0;
        p = end + 1;
    }
    if (part[1] > 999 || part[2] > 999)
        return 0;
    uint64_t n = part[0] * 1000000ull + part[1] * 1000ull + part[2];
    return n > UINT32_MAX ? 0 : (uint32_t)n;
}

/* The whitespace-separated fields of /proc/<pid>/stat after "(comm)", which
 * may itself hold spaces and parentheses: field 3 (state) is index 0. */
static int stat_fields_after_comm(char *text, char **fields, int max)
{
    char *p = strrchr(text, ')');
    if (p == NULL)
        return 0;
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " \n", &save); tok && n < max;
         tok = strtok_r(NULL, " \n", &save))
        fields[n++] = tok;
    return n;
}

/* utime + stime (fields 14, 15) and starttime (22) of this process, in ticks. */
static bool read_self_stat(uint64_t *cpu_ticks, uint64_t *start_ticks)
{
    char text[PROC_TEXT_CAPACITY];
    if (sl_io_read_text("/proc/self/stat", text, sizeof(text)) <= 0)
        return false;
    char *fields[20];
    if (stat_fields_after_comm(text, fields, 20) < 20)
        return false;
    uint64_t utime = strtoull(fields[14 - 3], NULL, 10);
    uint64_t stime = strtoull(fields[15 - 3], NULL, 10);
    *cpu_ticks = utime + stime;
    *start_ticks = strtoull(fields[22 - 3], NULL, 10);
    return true;
}

/* Host CPU time from the "cpu" line of /proc/stat: all ticks, idle ticks
 * (idle + iowait). guest and guest_nice are already inside user and nice.
 * The line comes first, so a partial read of a long file is enough. */
static bool read_host_cpu(uint64_t *total, uint64_t *idle)
{
    char text[PROC_TEXT_CAPACITY];
    if (sl_io_read_text("/proc/stat", text, sizeof(text)) <= 0)
        return false;
    unsigned long long v[8] = {0};
    if (sscanf(text, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) < 4)
        return false;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *idle = v[3] + v[4];
    return true;
}

/* The value of KEY=value in os-release text, unquoted ('...' or "..." with
 * backslash escapes). False when the key is missing. */
static bool os_release_value(const char *text, const char *key, char *out, size_t cap)
{
    size_t key_len = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, key, key_len) != 0 || line[key_len] != '=')
            continue;
        const char *p = line + key_len + 1;
        char quote = (*p == '"' || *p == '\'') ? *p++ : '\0';
        size_t n = 0;
        for (; *p && *p != '\n' && *p != quote && n + 1 < cap; p++) {
            if (*p == '\\' && quote == '"' && p[1] && p[1] != '\n')
                p++;
            out[n++] = *p;
        }
        out[n] = '\0';
        return true;
    }
    return false;
}

/* NAME and VERSION_ID of /etc/os-release (or /usr/lib/os-release), with
 * PRETTY_NAME and VERSION as second choices. */
static void read_os_release(sl_sysinfo_t *si)
{
    char text[PROC_TEXT_CAPACITY];
    char value[SL_SYSINFO_TEXT_CAPACITY];
    if (sl_io_read_text("/etc/os-release", text, sizeof(text)) <= 0 &&
        sl_io_read_text("/usr/lib/os-release", text, sizeof(text)) <= 0)
        text[0] = '\0';
    if (!os_release_value(text, "NAME", value, sizeof(value)) &&
        !os_release_value(text, "PRETTY_NAME", value, sizeof(value)))
        value[0] = '\0';
    copy_text(si->os_name, sizeof(si->os_name), value, strlen(value), "unknown_os_name");
    if (!os_release_value(text, "VERSION_ID", value, sizeof(value)) &&
        !os_release_value(text, "VERSION", value, sizeof(value)))
        value[0] = '\0';
    copy_text(si->os_version, sizeof(si->os_version), value, strlen(value), "unknown_os_version");
}

/* Wall-clock start of this process in whole seconds: its age from
 * /proc/uptime minus the start tick of /proc/self/stat, taken off now. */
static uint64_t process_start_s(long ticks_per_second)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char text[128];
    uint64_t cpu_ticks, start_ticks;
    double uptime;
    if (ticks_per_second <= 0 || !read_self_stat(&cpu_ticks, &start_ticks) ||
        sl_io_read_text("/proc/uptime", text, sizeof(text)) <= 0 ||
        sscanf(text, "%lf", &uptime) != 1)
        return (uint64_t)now.tv_sec;
    double age = uptime - (double)start_ticks / (double)ticks_per_second;
    double start = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - (age > 0 ? age : 0);
    return start > 0 ? (uint64_t)start : (uint64_t)now.tv_sec;
}

int sl_sysinfo_init(sl_sysinfo_t *si, const char *data_dir, const char *version)
{
    memset(si, 0, sizeof(*si));
    if (data_dir == NULL)
        data_dir = ".";
    if (version == NULL)
        version = "";
    if (strlen(data_dir) >= sizeof(si->data_dir) || strlen(version) >= sizeof(si->server_version) ||
        !sl_utf8_valid((const uint8_t *)version, strlen(version)))
        return -SL_ERR_INVALID_CONFIGURATION;
    snprintf(si->data_dir, sizeof(si->data_dir), "%s", data_dir);
    snprintf(si->server_version, sizeof(si->server_version), "%s", version);
    si->server_semver = sl_sysinfo_semver(version);
    si->ticks_per_second = sysconf(_SC_CLK_TCK);
    si->page_size = sysconf(_SC_PAGESIZE);
    si->cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (si->cores < 1)
        si->cores = 1;
    si->start_time_s = process_start_s(si->ticks_per_second);
    read_os_release(si);
    struct utsname u;
    if (uname(&u) == 0)
        copy_text(si->kernel_version, sizeof(si->kernel_version), u.release, strlen(u.release),
                  "unknown_kernel_version");
    else
        copy_text(si->kernel_version, sizeof(si->kernel_version), "", 0, "unknown_kernel_version");
    if (!read_host_cpu(&si->host_total_ticks, &si->host_idle_ticks))
        si->host_total_ticks = si->host_idle_ticks = 0;
    return 0;
}

void sl_sysinfo_destroy(sl_sysinfo_t *si)
{
    memset(si, 0, sizeof(*si));
}

/* Process CPU % since the previous call, 100 per busy core (like top). */
static float process_cpu(sl_sysinfo_t *si)
{
    uint64_t ticks, start_ticks;
    uint64_t now = monotonic_ns();
    if (si->ticks_per_second <= 0 || !read_self_stat(&ticks, &start_ticks))
        return 0.0f;
    if (!si->have_process_baseline) {
        si->have_process_baseline = true;
        si->process_ticks = ticks;
        si->process_wall_ns = now;
        return si->process_cpu = 0.0f;
    }
    /* Ticks are 10 ms wide: calls closer than that repeat the last figure. */
    uint64_t wall_ns = now - si->process_wall_ns;
    if (wall_ns < 10000000ull || ticks < si->process_ticks)
        return si->process_cpu;
    double busy_s = (double)(ticks - si->process_ticks) / (double)si->ticks_per_second;
    double pct = busy_s * 1e9 / (double)wall_ns * 100.0;
    double max = 100.0 * (double)si->cores;
    si->process_cpu = (float)(pct > max ? max : pct);
    si->process_ticks = ticks;
    si->process_wall_ns = now;
    return si->process_cpu;
}

/* Host CPU % (0..100) since the previous call, from /proc/stat. */
static float host_cpu(sl_sysinfo_t *si)
{
    uint64_t total, idle;
    if (!read_host_cpu(&total, &idle))
        return 0.0f;
    if (total <= si->host_total_ticks) {
        /* No tick passed (or the counters went back): keep the last figure. */
        if (total < si->host_total_ticks) {
            si->host_total_ticks = total;
            si->host_idle_ticks = idle;
        }
        return si->host_cpu;
    }
    uint64_t dt = total - si->host_total_ticks;
    /* iowait may step backwards on some kernels: never let idle exceed dt. */
    uint64_t didle = idle > si->host_idle_ticks ? idle - si->host_idle_ticks : 0;
    if (didle > dt)
        didle = dt;
    si->host_cpu = (float)((double)(dt - didle) * 100.0 / (double)dt);
    si->host_total_ticks = total;
    si->host_idle_ticks = idle;
    return si->host_cpu;
}

static void fill_memory(const sl_sysinfo_t *si, sl_get_stats_reply_t *out)
{
    char text[PROC_TEXT_CAPACITY];
    unsigned long long size_pages, resident_pages;
    out->memory_usage = 0;
    if (sl_io_read_text("/proc/self/statm", text, sizeof(text)) > 0 &&
        sscanf(text, "%llu %llu", &size_pages, &resident_pages) == 2 && si->page_size > 0)
        out->memory_usage = resident_pages * (uint64_t)si->page_size;
    uint64_t total_kib = 0, available_kib = 0;
    if (sl_io_read_text("/proc/meminfo", text, sizeof(text)) > 0) {
        if (!find_u64(text, "MemTotal:", &total_kib))
            total_kib = 0;
        /* Kernels before 3.14 lack MemAvailable; MemFree understates it. */
        if (!find_u64(text, "MemAvailable:", &available_kib) &&
            !find_u64(text, "MemFree:", &available_kib))
            available_kib = 0;
    }
    out->total_memory = total_kib * 1024u;
    out->available_memory = available_kib * 1024u;
}

/* Disk I/O counters and the thread count. /proc/self/io needs ptrace
 * rights over oneself, which some sandboxes withhold: then both are 0. */
static void fill_io_threads(sl_get_stats_reply_t *out)
{
    char text[PROC_TEXT_CAPACITY];
    uint64_t v;
    out->read_bytes = out->written_bytes = 0;
    if (sl_io_read_text("/proc/self/io", text, sizeof(text)) > 0) {
        out->read_bytes = find_u64(text, "read_bytes:", &v) ? v : 0;
        out->written_bytes = find_u64(text, "write_bytes:", &v) ? v : 0;
    }
    out->threads_count = 0;
    if (sl_io_read_text("/proc/self/status", text, sizeof(text)) > 0 &&
        find_u64(text, "Threads:", &v))
        out->threads_count = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* statvfs of the data directory, or of its nearest existing ancestor while
 * the directory has not been created yet. Each step drops one component. */
static bool statvfs_nearest(const char *dir, struct statvfs *st)
{
    char path[SL_SYSINFO_PATH_CAPACITY];
    snprintf(path, sizeof(path), "%s", dir[0] ? dir : ".");
    for (size_t step = 0; step < sizeof(path); step++) {
        if (statvfs(path, st) == 0)
            return true;
        if (errno != ENOENT && errno != ENOTDIR)
            return false;
        char *slash = strrchr(path, '/');
        if (slash == NULL) {
            if (strcmp(path, ".") == 0)
                return false;
            snprintf(path, sizeof(path), ".");
        } else if (slash == path) {
            if (path[1] == '\0')
                return false;
            path[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
    return false;
}

static void fill_disk(const sl_sysinfo_t *si, sl_get_stats_reply_t *out)
{
    struct statvfs st;
    out->free_disk_space = out->total_disk_space = 0;
    if (!statvfs_nearest(si->data_dir, &st))
        return;
    /* Free space as an unprivileged writer sees it (f_bavail), like df. */
    out->free_disk_space = (uint64_t)st.f_bavail * st.f_frsize;
    out->total_disk_space = (uint64_t)st.f_blocks * st.f_frsize;
}

void sl_sysinfo_fill(sl_sysinfo_t *si, sl_get_stats_reply_t *out)
{
    out->process_id = (uint32_t)getpid();
    out->cpu_usage = process_cpu(si);
    out->total_cpu_usage = host_cpu(si);
    fill_memory(si, out);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t now_s = (uint64_t)now.tv_sec;
    out->start_time_us = si->start_time_s * US_PER_SECOND;
    out->run_time_us = (now_s > si->start_time_s ? now_s - si->start_time_s : 0) * US_PER_SECOND;
    fill_io_threads(out);
    fill_disk(si, out);
    /* The host name can change while we run: read it each time. */
    char host[SL_SYSINFO_TEXT_CAPACITY];
    if (gethostname(host, sizeof(host)) != 0)
        host[0] = '\0';
    host[sizeof(host) - 1] = '\0';
    copy_text(si->hostname, sizeof(si->hostname), host, strlen(host), "unknown_hostname");
    out->hostname = sl_span_str(si->hostname);
    out->os_name = sl_span_str(si->os_name);
    out->os_version = sl_span_str(si->os_version);
    out->kernel_version = sl_span_str(si->kernel_version);
    out->server_version = sl_span_str(si->server_version);
    out->server_semver = si->server_semver;
}
