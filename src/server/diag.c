/* GetSnapshot archives (server/diag.h): each section is collected as text
 * into its own bounded buffer, then libzip writes them into an in-memory
 * source that is read back into the caller's buffer. No temporary files. */
#include "server/diag.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "base/io.h"
#include "base/limits.h"
#include "base/log.h"

/* libzip 1.7 predates Zstandard support and has no name for its method
 * number (APPNOTE 4.4.5: 93). */
#ifndef ZIP_CM_ZSTD
#define ZIP_CM_ZSTD 93
#endif

/* A section may overshoot SL_DIAG_SECTION_MAX by one line before the
 * builder notices; the slack keeps that line from failing the buffer. */
#define SECTION_SLACK (2u * SL_DIAG_PROC_FILE_MAX)

static atomic_bool snapshot_busy;

bool sl_diag_guard_acquire(void)
{
    bool expected = false;
    return atomic_compare_exchange_strong(&snapshot_busy, &expected, true);
}

void sl_diag_guard_release(void)
{
    atomic_store(&snapshot_busy, false);
}

static const struct {
    uint8_t code;
    int32_t method;
    const char *name;
} compressions[] = {
    {SL_SNAPSHOT_STORED, ZIP_CM_STORE, "Stored"},
    {SL_SNAPSHOT_DEFLATED, ZIP_CM_DEFLATE, "Deflated"},
    {SL_SNAPSHOT_BZIP2, ZIP_CM_BZIP2, "Bzip2"},
    {SL_SNAPSHOT_ZSTD, ZIP_CM_ZSTD, "Zstd"},
    {SL_SNAPSHOT_LZMA, ZIP_CM_LZMA, "Lzma"},
    {SL_SNAPSHOT_XZ, ZIP_CM_XZ, "Xz"},
};

static const struct {
    uint8_t code;
    const char *entry;
} snapshot_types[] = {
    {SL_SNAPSHOT_FILESYSTEM_OVERVIEW, "filesystem_overview.txt"},
    {SL_SNAPSHOT_PROCESS_LIST, "process_list.txt"},
    {SL_SNAPSHOT_RESOURCE_USAGE, "resource_usage.txt"},
    {SL_SNAPSHOT_TEST, "test.txt"},
    {SL_SNAPSHOT_SERVER_LOGS, "server_logs.txt"},
    {SL_SNAPSHOT_SERVER_CONFIG, "server_config.txt"},
};

/* What All stands for, in this order (commands.md 11). */
static const uint8_t all_types[] = {SL_SNAPSHOT_FILESYSTEM_OVERVIEW, SL_SNAPSHOT_PROCESS_LIST,
                                    SL_SNAPSHOT_RESOURCE_USAGE, SL_SNAPSHOT_SERVER_LOGS,
                                    SL_SNAPSHOT_SERVER_CONFIG};

static int zip_method(uint8_t compression)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(compressions); i++)
        if (compressions[i].code == compression)
            return compressions[i].method;
    return -1;
}

const char *sl_diag_compression_name(uint8_t compression)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(compressions); i++)
        if (compressions[i].code == compression)
            return compressions[i].name;
    return NULL;
}

bool sl_diag_compression_supported(uint8_t compression)
{
    int method = zip_method(compression);
    return method >= 0 && zip_compression_method_supported(method, 1);
}

const char *sl_diag_entry_name(uint8_t type)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(snapshot_types); i++)
        if (snapshot_types[i].code == type)
            return snapshot_types[i].entry;
    return NULL;
}

/* --- text helpers --------------------------------------------------------- */

static void put_fmt(sl_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(sl_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *p = (char *)sl_buf_extend(b, (size_t)n + 1);
    if (p == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len--; /* the terminator vsnprintf needed is not part of the text */
}

static bool section_full(const sl_buf_t *b)
{
    return b->len >= SL_DIAG_SECTION_MAX;
}

/* "== title (path) ==" followed by the file's text, or why it is missing. */
static void put_file(sl_buf_t *b, const char *title, const char *path, char *scratch)
{
    put_fmt(b, "== %s (%s) ==\n", title, path);
    long n = sl_io_read_text(path, scratch, SL_DIAG_PROC_FILE_MAX);
    if (n < 0) {
        put_fmt(b, "unavailable: %s\n\n", strerror((int)-n));
        return;
    }
    sl_put_bytes(b, scratch, (size_t)n);
    put_fmt(b, "%s\n", n > 0 && scratch[n - 1] != '\n' ? "\n" : "");
}

static void format_time(time_t t, char *out, size_t cap)
{
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, cap, "%lld", (long long)t);
}

/* --- FilesystemOverview --------------------------------------------------- */

typedef struct walk_dir {
    char *path;
    unsigned depth;
} walk_dir_t;

static char entry_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return 'd';
    if (S_ISREG(mode))
        return 'f';
    if (S_ISLNK(mode))
        return 'l';
    return 'o';
}

/* Lists one directory; pushes its subdirectories while depth and room allow.
 * Returns the entries listed. */
static unsigned walk_one(sl_buf_t *b, const walk_dir_t *dir, walk_dir_t *stack, size_t *top,
                         unsigned budget, bool *truncated)
{
    DIR *d = opendir(dir->path);
    if (d == NULL) {
        put_fmt(b, "%s: cannot open: %s\n", dir->path, strerror(errno));
        return 0;
    }
    unsigned listed = 0;
    struct dirent *de;
    char child[4096];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (listed >= budget || section_full(b)) {
            *truncated = true;
            break;
        }
        struct stat st;
        int n = snprintf(child, sizeof(child), "%s/%s", dir->path, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(child) || lstat(child, &st) != 0) {
            put_fmt(b, "%s/%s: cannot stat\n", dir->path, de->d_name);
            continue;
        }
        char when[32];
        format_time(st.st_mtime, when, sizeof(when));
        put_fmt(b, "%c %12lld %s %s\n", entry_kind(st.st_mode), (long long)st.st_size, when, child);
        listed++;
        /* Each pushed directory was listed first, so the stack never holds
         * more than SL_DIAG_FS_ENTRIES_MAX paths. lstat: links not followed. */
        if (S_ISDIR(st.st_mode) && dir->depth + 1 < SL_DIAG_FS_DEPTH_MAX) {
            char *copy = strdup(child);
            sl_assert(*top <= SL_DIAG_FS_ENTRIES_MAX);
            if (copy != NULL)
                stack[(*top)++] = (walk_dir_t){copy, dir->depth + 1};
        } else if (S_ISDIR(st.st_mode)) {
            *truncated = true;
        }
    }
    closedir(d);
    return listed;
}

/* The data directory tree, depth first with an explicit stack (never
 * recursion): kind (d f l o), size, mtime (UTC) and path per line. */
static void section_filesystem(const char *root, sl_buf_t *b)
{
    put_fmt(b, "Filesystem overview of %s (at most %u entries, %u levels)\n", root,
            SL_DIAG_FS_ENTRIES_MAX, SL_DIAG_FS_DEPTH_MAX);
    put_fmt(b, "kind         size mtime                path\n");
    walk_dir_t *stack = calloc(SL_DIAG_FS_ENTRIES_MAX + 1, sizeof(*stack));
    char *root_copy = strdup(root);
    if (stack == NULL || root_copy == NULL) {
        put_fmt(b, "out of memory\n");
        free(stack);
        free(root_copy);
        return;
    }
    size_t top = 0;
    stack[top++] = (walk_dir_t){root_copy, 0};
    unsigned listed = 0;
    bool truncated = false;
    while (top > 0) {
        walk_dir_t dir = stack[--top];
        if (listed < SL_DIAG_FS_ENTRIES_MAX && !section_full(b))
            listed += walk_one(b, &dir, stack, &top, SL_DIAG_FS_ENTRIES_MAX - listed, &truncated);
        else
            truncated = true;
        free(dir.path);
    }
    free(stack);
    put_fmt(b, "%u entries%s\n", listed, truncated ? " (truncated)" : "");
}

/* --- ProcessList ---------------------------------------------------------- */

/* One /proc/<pid> as a line: pid, ppid, state, RSS, threads and name. A
 * process that exits meanwhile is skipped.
 *
 * No command lines: arguments are where people put secrets (`sluice -p
 * PASSWORD`, `mysql -pX`, `curl -u user:pass`), and a snapshot goes to any
 * user with read_servers and often to a support ticket. The name is the
 * kernel's (comm: the executable's file name, at most 15 bytes), which
 * tells the processes apart without anything typed after the program.
 * docs/security.md, "Diagnostic snapshots". */
static bool put_process(sl_buf_t *b, long pid, long page_kib, char *scratch)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (sl_io_read_text(path, scratch, SL_DIAG_PROC_FILE_MAX) <= 0)
        return false;
    char *open_paren = strchr(scratch, '(');
    char *close_paren = strrchr(scratch, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren)
        return false;
    *close_paren = '\0';
    char *name = open_paren + 1;
    /* A process may name itself anything: no control bytes into the text. */
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    /* After "(comm)": state ppid ... num_threads is the 18th, rss the 22nd. */
    char state = '?';
    long long ppid = 0, threads = 0, rss_pages = 0;
    if (sscanf(close_paren + 1,
               " %c %lld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld %*s "
               "%*s %*s %lld",
               &state, &ppid, &threads, &rss_pages) != 4)
        return false;
    put_fmt(b, "%7ld %7lld %c %10lld %7lld %s\n", pid, ppid, state, rss_pages * page_kib, threads,
            name);
    return true;
}

/* The pid a /proc entry names, or -1 for the entries that are not processes. */
static long proc_pid(const char *name)
{
    if (*name == '\0' || strlen(name) > 10)
        return -1;
    long pid = 0;
    for (; *name; name++) {
        if (*name < '0' || *name > '9')
            return -1;
        pid = pid * 10 + (*name - '0');
    }
    return pid;
}

static void section_processes(sl_buf_t *b, char *scratch)
{
    long page_kib = sysconf(_SC_PAGESIZE) / 1024;
    DIR *d = opendir("/proc");
    if (d == NULL) {
        put_fmt(b, "/proc: cannot open: %s\n", strerror(errno));
        return;
    }
    put_fmt(b, "%7s %7s %c %10s %7s %s\n", "PID", "PPID", 'S', "RSS_KIB", "THREADS", "NAME");
    unsigned listed = 0;
    bool truncated = false;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long pid = proc_pid(de->d_name);
        if (pid < 0)
            continue;
        if (listed >= SL_DIAG_PROCESSES_MAX || section_full(b)) {
            truncated = true;
            break;
        }
        if (put_process(b, pid, page_kib, scratch))
            listed++;
    }
    closedir(d);
    put_fmt(b, "%u processes%s\n", listed, truncated ? " (truncated)" : "");
}

/* --- ResourceUsage -------------------------------------------------------- */

static void section_resources(sl_buf_t *b, char *scratch)
{
    put_file(b, "Load average", "/proc/loadavg", scratch);
    put_file(b, "Uptime and idle seconds", "/proc/uptime", scratch);
    put_file(b, "Memory", "/proc/meminfo", scratch);
    put_file(b, "This process", "/proc/self/status", scratch);
    put_file(b, "This process's I/O", "/proc/self/io", scratch);
    put_file(b, "This process's limits", "/proc/self/limits", scratch);
    struct rusage ru;
    put_fmt(b, "== getrusage(RUSAGE_SELF) ==\n");
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        put_fmt(b, "unavailable: %s\n", strerror(errno));
        return;
    }
    put_fmt(b,
            "user_cpu_s %lld.%06ld\nsystem_cpu_s %lld.%06ld\nmax_rss_kib %ld\n"
            "minor_faults %ld\nmajor_faults %ld\nvoluntary_switches %ld\n"
            "involuntary_switches %ld\n",
            (long long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec, (long long)ru.ru_stime.tv_sec,
            (long)ru.ru_stime.tv_usec, ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw,
            ru.ru_nivcsw);
}

/* --- collection ----------------------------------------------------------- */

typedef struct section {
    uint8_t type;
    sl_buf_t text;
} section_t;

static void collect(const sl_diag_input_t *in, section_t *s, char *scratch)
{
    sl_buf_t *b = &s->text;
    switch (s->type) {
    case SL_SNAPSHOT_FILESYSTEM_OVERVIEW:
        section_filesystem(in->data_dir ? in->data_dir : ".", b);
        break;
    case SL_SNAPSHOT_PROCESS_LIST:
        section_processes(b, scratch);
        break;
    case SL_SNAPSHOT_RESOURCE_USAGE:
        section_resources(b, scratch);
        break;
    case SL_SNAPSHOT_TEST:
        put_fmt(b, "test\n");
        break;
    case SL_SNAPSHOT_SERVER_LOGS: {
        uint8_t *p = sl_buf_extend(b, SL_LOG_RING_SIZE);
        if (p != NULL)
            b->len -= SL_LOG_RING_SIZE - sl_log_recent((char *)p, SL_LOG_RING_SIZE);
        break;
    }
    case SL_SNAPSHOT_SERVER_CONFIG:
        sl_put_span(b, in->config_text);
        break;
    default:
        sl_assert(!"type validated by expand_types");
    }
}

/* The types to collect, All expanded and repeats dropped, into out (room for
 * SL_ARRAY_LEN(snapshot_types)). Returns the count or -SL_ERR_INVALID_COMMAND. */
static int expand_types(const uint8_t *types, size_t count, uint8_t *out)
{
    for (size_t i = 0; i < count; i++) {
        if (types[i] == SL_SNAPSHOT_ALL && count > 1)
            return -SL_ERR_INVALID_COMMAND;
        if (types[i] != SL_SNAPSHOT_ALL && sl_diag_entry_name(types[i]) == NULL)
            return -SL_ERR_INVALID_COMMAND;
    }
    if (count == 1 && types[0] == SL_SNAPSHOT_ALL) {
        memcpy(out, all_types, sizeof(all_types));
        return (int)SL_ARRAY_LEN(all_types);
    }
    int n = 0;
    for (size_t i = 0; i < count; i++) {
        bool seen = false;
        for (int j = 0; j < n; j++)
            seen = seen || out[j] == types[i];
        if (!seen)
            out[n++] = types[i];
    }
    return n;
}

/* --- the archive ---------------------------------------------------------- */

static int zip_failed(const char *what, const char *why)
{
    sl_log_error("snapshot: %s failed: %s", what, why);
    return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
}

/* Adds every section to an archive opened on the buffer source. */
static int zip_add_sections(zip_t *za, const section_t *sections, int count, int method)
{
    for (int i = 0; i < count; i++) {
        const char *name = sl_diag_entry_name(sections[i].type);
        const sl_buf_t *text = &sections[i].text;
        zip_source_t *data = zip_source_buffer(za, text->data, text->len, 0);
        if (data == NULL)
            return zip_failed("zip_source_buffer", zip_strerror(za));
        zip_int64_t index = zip_file_add(za, name, data, ZIP_FL_ENC_UTF_8);
        if (index < 0) {
            zip_source_free(data);
            return zip_failed("zip_file_add", zip_strerror(za));
        }
        if (zip_set_file_compression(za, (zip_uint64_t)index, method, 0) != 0)
            return zip_failed("zip_set_file_compression", zip_strerror(za));
    }
    return 0;
}

/* Whether out can take n more bytes under its maximum. Checked before
 * writing so that a refused archive leaves out untouched and usable. */
static bool fits(const sl_buf_t *out, uint64_t n)
{
    return sl_buf_ok(out) && n <= out->max - out->len;
}

/* Copies the finished archive out of the buffer source, refusing one whose
 * frame (256-byte header + archive) would exceed frame_limit. */
static int zip_read_back(zip_source_t *src, uint64_t frame_limit, sl_buf_t *out)
{
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_source_stat(src, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        return zip_failed("zip_source_stat", zip_error_strerror(zip_source_error(src)));
    if (st.size > frame_limit || SL_HEADER_SIZE > frame_limit - st.size) {
        sl_log_error("snapshot: archive of %llu bytes exceeds the %llu-byte frame limit",
                     (unsigned long long)st.size, (unsigned long long)frame_limit);
        return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
    }
    if (zip_source_open(src) != 0)
        return zip_failed("zip_source_open", zip_error_strerror(zip_source_error(src)));
    if (!fits(out, st.size))
        return zip_failed("reply buffer", "the archive does not fit");
    size_t before = out->len;
    uint8_t *p = sl_buf_extend(out, (size_t)st.size);
    zip_uint64_t got = 0;
    while (p != NULL && got < st.size) {
        zip_int64_t n = zip_source_read(src, p + got, st.size - got);
        if (n <= 0)
            break;
        got += (zip_uint64_t)n;
    }
    zip_source_close(src);
    if (p == NULL)
        return zip_failed("reply buffer", "out of memory");
    if (got != st.size) {
        out->len = before;
        return zip_failed("zip_source_read", "short read of the archive");
    }
    return 0;
}

/* An archive without entries is its end-of-central-directory record alone
 * (APPNOTE 4.3.16): libzip would rather delete such an archive than write it. */
static int empty_zip(uint64_t frame_limit, sl_buf_t *out)
{
    static const uint8_t eocd[22] = {'P', 'K', 5, 6};
    if (frame_limit < SL_HEADER_SIZE + sizeof(eocd)) {
        sl_log_error("snapshot: an empty archive exceeds the %llu-byte frame limit",
                     (unsigned long long)frame_limit);
        return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
    }
    if (!fits(out, sizeof(eocd)))
        return zip_failed("reply buffer", "the archive does not fit");
    sl_put_bytes(out, eocd, sizeof(eocd));
    return sl_buf_ok(out) ? 0 : zip_failed("reply buffer", "out of memory");
}

/* The archive of the collected sections, written by libzip into a growing
 * memory source that outlives the archive handle (zip_source_keep). */
static int build_zip(const section_t *sections, int count, int method, uint64_t frame_limit,
                     sl_buf_t *out)
{
    if (count == 0)
        return empty_zip(frame_limit, out);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &error);
    if (src == NULL) {
        int rc = zip_failed("zip_source_buffer_create", zip_error_strerror(&error));
        zip_error_fini(&error);
        return rc;
    }
    zip_source_keep(src);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &error);
    if (za == NULL) {
        int rc = zip_failed("zip_open_from_source", zip_error_strerror(&error));
        zip_error_fini(&error);
        zip_source_free(src);
        return rc;
    }
    zip_error_fini(&error);
    int rc = zip_add_sections(za, sections, count, method);
    if (rc == 0 && zip_close(za) != 0)
        rc = zip_failed("zip_close", zip_strerror(za));
    if (rc != 0)
        zip_discard(za);
    else
        rc = zip_read_back(src, frame_limit, out);
    zip_source_free(src);
    return rc;
}

/* --- the command ---------------------------------------------------------- */

static int collect_and_zip(const sl_diag_input_t *in, const uint8_t *wanted, int count, int method,
                           sl_buf_t *out)
{
    section_t sections[SL_ARRAY_LEN(snapshot_types)];
    char *scratch = malloc(SL_DIAG_PROC_FILE_MAX);
    int rc = scratch ? 0 : zip_failed("collection", "out of memory");
    int built = 0;
    for (; rc == 0 && built < count; built++) {
        sections[built].type = wanted[built];
        sl_buf_init(&sections[built].text, SL_DIAG_SECTION_MAX + SECTION_SLACK);
        collect(in, &sections[built], scratch);
        if (!sl_buf_ok(&sections[built].text))
            rc = zip_failed(sl_diag_entry_name(wanted[built]), "section does not fit in memory");
    }
    if (rc == 0) {
        uint64_t limit = in->frame_limit ? in->frame_limit : SL_FRAME_MAX_DEFAULT;
        rc = build_zip(sections, count, method, limit, out);
    }
    for (int i = 0; i < built; i++)
        sl_buf_free(&sections[i].text);
    free(scratch);
    return rc;
}

int sl_diag_snapshot(const sl_diag_input_t *in, uint8_t compression, const uint8_t *types,
                     size_t types_count, sl_buf_t *zip_out)
{
    uint8_t wanted[SL_ARRAY_LEN(snapshot_types)];
    int method = zip_method(compression);
    if (method < 0)
        return -SL_ERR_INVALID_COMMAND;
    int count = expand_types(types, types_count, wanted);
    if (count < 0)
        return count;
    if (!zip_compression_method_supported(method, 1)) {
        sl_log_error("snapshot: compression %s (%u) is not supported by the installed libzip",
                     sl_diag_compression_name(compression), compression);
        return -SL_ERR_FEATURE_UNAVAILABLE;
    }
    if (!sl_diag_guard_acquire()) {
        sl_log_warn("snapshot: refused, another snapshot is being collected");
        return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
    }
    int rc = collect_and_zip(in, wanted, count, method, zip_out);
    sl_diag_guard_release();
    return rc;
}
