/* processor.c - see processor.h. */
#define _GNU_SOURCE
#include "session/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "core/log.h"
#include "procline.h"

extern char **environ;

struct live_proc {
    live_proc *next;          /* the engine's processes, running and dying */
    igw_engine *e;
    pid_t pid;
    int in_fd;                /* its stdin (ours to write), -1 once closed */
    h2o_socket_t *out;        /* its stdout, read on the loop; NULL once closed */
    const live_proc_ops *ops;
    void *ctx;                /* NULL once stopped: no more callbacks */
    int64_t kill_ms;          /* stopping: SIGKILL then (monotonic); 0 while running */
    bool exited;              /* reaped */
};

static void close_out(live_proc *p)
{
    if (p->out) {
        h2o_socket_read_stop(p->out);
        h2o_socket_close(p->out);
        p->out = NULL;
    }
}

static void close_in(live_proc *p)
{
    if (p->in_fd >= 0) {
        close(p->in_fd);
        p->in_fd = -1;
    }
}

/* From running to stopping: nothing more reaches the caller. */
static void stopping(live_proc *p)
{
    p->ctx = NULL;
    close_in(p);
    close_out(p);
    if (!p->exited && p->kill_ms == 0) {
        kill(p->pid, SIGTERM);
        p->kill_ms = igw_clock_ms() + LIVE_PROC_KILL_MS;
    }
}

static void gone(live_proc *p, const char *why)
{
    void *ctx = p->ctx;
    stopping(p);
    if (ctx)
        p->ops->gone(ctx, p, why);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    live_proc *p = sock->data;
    if (err) {
        gone(p, "its output closed (exited or crashed)");
        return;
    }
    h2o_buffer_t *in = sock->input;
    for (;;) {
        char *nl = in->size ? memchr(in->bytes, '\n', in->size) : NULL;
        if (!nl)
            break;
        size_t len = (size_t)(nl - in->bytes);
        if (p->ctx && len <= IGW_PROCLINE_MAX)
            p->ops->line(p->ctx, p, in->bytes, len);
        h2o_buffer_consume(&sock->input, len + 1);
        if (!p->ctx || !p->out) /* stopped or gone from inside the line */
            return;
        in = sock->input;
    }
    if (in->size > IGW_PROCLINE_MAX)
        gone(p, "a line longer than the protocol allows");
}

live_proc *live_proc_start(igw_engine *e, char *const argv[], const live_proc_ops *ops, void *ctx, char *err,
                           size_t errlen)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1); /* none of igwd's sockets */
    /* igwd blocks SIGTERM and SIGINT in every thread (main.c takes them by
     * sigwait) and ignores SIGPIPE: the child starts with neither, or it
     * could not be stopped gently. */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &deflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(rc));
        goto fail;
    }
    close(to[0]);
    close(from[1]);
    live_proc *p = calloc(1, sizeof *p);
    if (!p) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(to[1]);
        close(from[0]);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    (void)fcntl(to[1], F_SETFL, O_NONBLOCK);
    (void)fcntl(from[0], F_SETFL, O_NONBLOCK);
    *p = (live_proc){.e = e, .pid = pid, .in_fd = to[1], .ops = ops, .ctx = ctx};
    p->out = h2o_evloop_socket_create(e->evloop, from[0], 0);
    p->out->data = p;
    h2o_socket_read_start(p->out, on_read);
    p->next = e->procs;
    e->procs = p;
    return p;
fail:
    for (int i = 0; i < 2; i++) {
        if (to[i] >= 0)
            close(to[i]);
        if (from[i] >= 0)
            close(from[i]);
    }
    return NULL;
}

int live_proc_send(live_proc *p, const char *line, size_t len)
{
    if (!p->ctx || p->in_fd < 0)
        return -1;
    char buf[IGW_PROCLINE_MAX + 1];
    if (len > IGW_PROCLINE_MAX) {
        stopping(p);
        return -1;
    }
    memcpy(buf, line, len);
    buf[len] = '\n';
    ssize_t n = write(p->in_fd, buf, len + 1);
    if (n != (ssize_t)(len + 1)) {
        /* Full (it does not read: stalled) or broken (gone): either way it is over. */
        igw_log(IGW_LOG_WARN, NULL, "session: processor %d stalled or gone (%s): stopped", (int)p->pid,
                n < 0 ? strerror(errno) : "a partial line");
        stopping(p);
        return -1;
    }
    return 0;
}

void live_proc_stop(live_proc *p)
{
    stopping(p);
}

pid_t live_proc_pid(const live_proc *p)
{
    return p->pid;
}

void live_proc_tick(igw_engine *e)
{
    int64_t now = igw_clock_ms();
    for (live_proc **pp = &e->procs; *pp;) {
        live_proc *p = *pp;
        if (!p->exited) {
            int st;
            pid_t r = waitpid(p->pid, &st, WNOHANG);
            if (r == p->pid) {
                p->exited = true;
                if (p->ctx) /* it died while running: its stdout's EOF may not be read yet */
                    gone(p, WIFSIGNALED(st) ? "it was killed" : "it exited");
            } else if (p->kill_ms && now >= p->kill_ms) {
                kill(p->pid, SIGKILL);
                p->kill_ms = now + LIVE_PROC_KILL_MS;
            }
        }
        if (p->exited && !p->ctx) {
            close_in(p);
            close_out(p);
            *pp = p->next;
            free(p);
            continue;
        }
        pp = &p->next;
    }
}

void live_proc_stop_all(igw_engine *e)
{
    while (e->procs) {
        live_proc *p = e->procs;
        e->procs = p->next;
        p->ctx = NULL;
        close_in(p);
        close_out(p);
        if (!p->exited) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, NULL, 0);
        }
        free(p);
    }
}
