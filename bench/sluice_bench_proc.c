/* sluice-bench process plumbing: starting and stopping sluiced in a fresh
 * temporary directory, reading a process's memory from /proc, and leaving
 * nothing behind when the bench dies half way. */
#define _GNU_SOURCE /* accept4, memrchr */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sluice_bench.h"

enum {
    CHILDREN_MAX = 8,
    START_POLLS = 1000, /* x 20 ms: Argon2 and recovery run before listening */
    STOP_POLLS = 500,   /* x 20 ms, then SIGKILL */
    SMAPS_GROUPS = 256,
};

static pid_t children[CHILDREN_MAX];
/* The directories of the sluiced running now (a figure may run several),
 * removed by sb_die. */
static char temp_dirs[CHILDREN_MAX][256];
static char work_dir[256]; /* another one (sb_temp_track), removed by sb_die too */
static char log_path[320]; /* sluiced's log, shown by sb_die */

void sb_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

uint16_t sb_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        sb_die("cannot find a free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

void sb_child_track(pid_t pid)
{
    for (int i = 0; i < CHILDREN_MAX; i++) {
        if (children[i] == 0) {
            children[i] = pid;
            return;
        }
    }
}

void sb_child_untrack(pid_t pid)
{
    for (int i = 0; i < CHILDREN_MAX; i++)
        if (children[i] == pid)
            children[i] = 0;
}

/* Async-signal-safe (fork, execve, waitpid), so the signal handler may use it. */
static void remove_tree(const char *dir)
{
    if (!dir[0])
        return;
    pid_t pid = fork();
    if (pid == 0) {
        char *const argv[] = {"rm", "-rf", "--", (char *)dir, NULL};
        char *const envp[] = {NULL};
        execve("/bin/rm", argv, envp);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void kill_children(void)
{
    for (int i = 0; i < CHILDREN_MAX; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    }
}

/* Ctrl-C and friends: leave no server running and no directory behind. */
static void on_signal(int sig)
{
    kill_children();
    for (int i = 0; i < CHILDREN_MAX; i++)
        remove_tree(temp_dirs[i]);
    remove_tree(work_dir);
    _exit(128 + sig);
}

void sb_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The last lines of sluiced's log, which usually say why it failed. */
static void print_log_tail(const char *path)
{
    char text[4096];
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    if (!f)
        return;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    long from = size > (long)sizeof(text) - 1 ? size - (long)sizeof(text) + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    fprintf(stderr, "--- end of %s ---\n%s--- (the directory is removed now)\n", path, text);
}

void sb_die(const char *fmt, ...)
{
    /* Actor threads may fail together: the first one reports and exits,
     * the others wait for that exit rather than report twice. */
    static atomic_flag dying = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&dying))
        for (;;)
            pause();
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    kill_children();
    print_log_tail(log_path);
    for (int i = 0; i < CHILDREN_MAX; i++)
        remove_tree(temp_dirs[i]);
    remove_tree(work_dir);
    exit(1);
}

void sb_temp_track(const char *dir)
{
    snprintf(work_dir, sizeof(work_dir), "%s", dir ? dir : "");
}

void sb_temp_remove(const char *dir)
{
    remove_tree(dir);
    if (strcmp(dir, work_dir) == 0)
        work_dir[0] = '\0';
}

/* --- sluiced ------------------------------------------------------------------- */

static void temp_dir_track(const char *dir)
{
    for (int i = 0; i < CHILDREN_MAX; i++) {
        if (temp_dirs[i][0] == '\0') {
            snprintf(temp_dirs[i], sizeof(temp_dirs[i]), "%s", dir);
            return;
        }
    }
}

static void temp_dir_untrack(const char *dir)
{
    for (int i = 0; i < CHILDREN_MAX; i++)
        if (strcmp(temp_dirs[i], dir) == 0)
            temp_dirs[i][0] = '\0';
}

static void write_config(const sb_sluiced_t *s, const char *extra)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/sluiced.toml", s->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        sb_die("cannot write %s: %s", path, strerror(errno));
    fprintf(f, "[tcp]\naddress = \"127.0.0.1:0\"\n\n[system]\npath = \"%s\"\n", s->data);
    /* HTTP and WebSocket are on by default; the benchmark's servers take
     * any free ports, so several can run at once. */
    fprintf(f, "\n[http]\naddress = \"127.0.0.1:0\"\n");
    fprintf(f, "\n[websocket]\naddress = \"127.0.0.1:0\"\n");
    if (extra != NULL)
        fprintf(f, "\n%s", extra);
    fclose(f);
}

static pid_t spawn(const sb_sluiced_t *s, const char *binary, const char *user,
                   const char *password, int replica_id)
{
    char id[16];
    snprintf(id, sizeof(id), "%d", replica_id);
    char config[400];
    snprintf(config, sizeof(config), "%s/sluiced.toml", s->dir);
    pid_t pid = fork();
    if (pid < 0)
        sb_die("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* a bench killed outright stops it too */
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        setenv("IGGY_ROOT_USERNAME", user, 1);
        setenv("IGGY_ROOT_PASSWORD", password, 1);
        if (replica_id >= 0)
            execl(binary, "sluiced", "--config", config, "--replica-id", id, "--format-cluster",
                  (char *)NULL);
        else
            execl(binary, "sluiced", "--config", config, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* sluiced logs "listening on 127.0.0.1:PORT" once it accepts. */
static uint16_t logged_port(const char *path)
{
    char text[16384];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *key = "listening on 127.0.0.1:";
    const char *p = strstr(text, key);
    return p ? (uint16_t)atoi(p + strlen(key)) : 0;
}

void sb_sluiced_start(sb_sluiced_t *s, const char *binary, const char *parent_dir, const char *user,
                      const char *password)
{
    sb_sluiced_start_with(s, binary, parent_dir, user, password, NULL, -1);
}

void sb_sluiced_start_with(sb_sluiced_t *s, const char *binary, const char *parent_dir,
                           const char *user, const char *password, const char *extra_config,
                           int replica_id)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "%s/sluice-bench-XXXXXX", parent_dir);
    if (!mkdtemp(s->dir))
        sb_die("mkdtemp %s: %s", s->dir, strerror(errno));
    temp_dir_track(s->dir);
    snprintf(s->data, sizeof(s->data), "%s/data", s->dir);
    snprintf(s->log, sizeof(s->log), "%s/sluiced.log", s->dir);
    snprintf(log_path, sizeof(log_path), "%s", s->log);
    write_config(s, extra_config);
    s->pid = spawn(s, binary, user, password, replica_id);
    sb_child_track(s->pid);
    for (int i = 0; i < START_POLLS; i++) {
        s->port = logged_port(s->log);
        if (s->port)
            return;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            sb_child_untrack(s->pid);
            sb_die("%s exited (status %d) before listening; see %s", binary, status, s->log);
        }
        sb_sleep_ms(20);
    }
    sb_die("%s did not listen within 20 s; see %s", binary, s->log);
}

void sb_sluiced_stop(sb_sluiced_t *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int status, i;
        for (i = 0; i < STOP_POLLS; i++) {
            if (waitpid(s->pid, &status, WNOHANG) == s->pid)
                break;
            sb_sleep_ms(20);
        }
        if (i == STOP_POLLS) {
            fprintf(stderr, "sluice-bench: sluiced ignored SIGTERM for 10 s; killed\n");
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
        sb_child_untrack(s->pid);
        s->pid = 0;
    }
    remove_tree(s->dir);
    temp_dir_untrack(s->dir);
    if (strcmp(log_path, s->log) == 0)
        log_path[0] = '\0';
}

/* --- memory ---------------------------------------------------------------------- */

static long status_kb(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

bool sb_memory_read(pid_t pid, sb_memory_t *out)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    out->rss_kb = status_kb(text, "VmRSS:");
    out->anon_kb = status_kb(text, "RssAnon:");
    out->file_kb = status_kb(text, "RssFile:");
    out->hwm_kb = status_kb(text, "VmHWM:");
    out->size_kb = status_kb(text, "VmSize:");
    return out->rss_kb >= 0;
}

uint64_t sb_cpu_ns(pid_t pid)
{
    char path[64];
    unsigned long long ns = 0;
    snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &ns) != 1)
        ns = 0;
    fclose(f);
    return ns;
}

uint64_t sb_process_cpu_ns(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')'); /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return 0;
    return (utime + stime) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static bool comm_is(pid_t pid, const char *name)
{
    char path[64], comm[64] = {0};
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(comm, sizeof(comm), f) != NULL;
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return ok && strcmp(comm, name) == 0;
}

bool sb_memory_of_sleep(sb_memory_t *out)
{
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    sb_child_track(pid);
    bool ok = false;
    for (int i = 0; i < 100 && !ok; i++) { /* exec done within 2 s */
        sb_sleep_ms(20);
        ok = comm_is(pid, "sleep");
    }
    sb_sleep_ms(200); /* let the dynamic loader finish */
    ok = ok && sb_memory_read(pid, out);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    sb_child_untrack(pid);
    return ok;
}

typedef struct smaps_group {
    char name[96];
    long rss_kb;
    long size_kb;
} smaps_group_t;

/* The group a mapping line ("addr perms offset dev inode [path]") falls in:
 * the path's last component, or [anon] for an unnamed mapping. */
static void mapping_name(const char *line, char *name, size_t cap)
{
    const char *p = line;
    for (int field = 0; field < 5 && *p; field++) {
        p += strcspn(p, " ");
        p += strspn(p, " ");
    }
    size_t len = strcspn(p, "\n");
    const char *slash = memrchr(p, '/', len);
    if (len == 0) {
        p = "[anon]";
        len = strlen(p);
    } else if (slash) {
        len -= (size_t)(slash + 1 - p);
        p = slash + 1;
    }
    len = len < cap - 1 ? len : cap - 1;
    memcpy(name, p, len);
    name[len] = '\0';
}

/* Mapping lines start with the start address in lower-case hex; the field
 * lines under them ("Rss:", "VmFlags:") start with a capital letter. */
static bool is_mapping_line(const char *line)
{
    char c = line[0];
    return ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) && line[strcspn(line, " ")] == ' ' &&
           memchr(line, '-', strcspn(line, " ")) != NULL;
}

static smaps_group_t *group_of(smaps_group_t *groups, int *count, const char *name)
{
    for (int i = 0; i < *count; i++)
        if (strcmp(groups[i].name, name) == 0)
            return &groups[i];
    if (*count == SMAPS_GROUPS)
        return NULL;
    smaps_group_t *g = &groups[(*count)++];
    *g = (smaps_group_t){.rss_kb = 0};
    snprintf(g->name, sizeof(g->name), "%s", name);
    return g;
}

static int by_rss_desc(const void *a, const void *b)
{
    const smaps_group_t *x = a, *y = b;
    return (y->rss_kb > x->rss_kb) - (y->rss_kb < x->rss_kb);
}

void sb_smaps_print(pid_t pid, int top, const char *prefix)
{
    static smaps_group_t groups[SMAPS_GROUPS];
    int count = 0;
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    smaps_group_t *g = NULL;
    for (int lines = 0; lines < 1000000 && fgets(line, sizeof(line), f); lines++) {
        long kb;
        if (sscanf(line, "Rss: %ld kB", &kb) == 1 && g)
            g->rss_kb += kb;
        else if (sscanf(line, "Size: %ld kB", &kb) == 1 && g)
            g->size_kb += kb;
        else if (is_mapping_line(line)) {
            char name[96];
            mapping_name(line, name, sizeof(name));
            g = group_of(groups, &count, name);
        }
    }
    fclose(f);
    qsort(groups, (size_t)count, sizeof(groups[0]), by_rss_desc);
    for (int i = 0; i < count && i < top; i++)
        printf("%s%-28s %7ld kB resident of %8ld kB mapped\n", prefix, groups[i].name,
               groups[i].rss_kb, groups[i].size_kb);
}
