/* child.h - the processes of processors (docs/ai.md, "The processor
 * protocol"): a session's processor runs as a process of its own, spoken
 * to by lines of JSON on its stdin and heard on its stdout; its media is
 * plain RTP on loopback. A crash, a stall or a garbled line costs that
 * processor only: the engine's loop never waits on it (its stdout is read
 * when readable; a line to it that its pipe cannot take at once means it
 * stalled), and the media threads never see it.
 *
 * Everything here runs on the engine's loop. */
#ifndef IGW_SESSION_CHILD_H
#define IGW_SESSION_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/live.h"

typedef struct live_proc live_proc;

typedef struct live_proc_ops {
    /* One line of its stdout (without the newline; at most
     * IGW_PROCLINE_MAX bytes: a longer one ends the process). */
    void (*line)(void *ctx, live_proc *p, const char *line, size_t len);
    /* It is gone on its own (exited, crashed, its stdout closed, stalled,
     * garbled): why says which. p is freed right after: the caller drops
     * every pointer to it. Never called after live_proc_stop. */
    void (*gone)(void *ctx, live_proc *p, const char *why);
} live_proc_ops;

/* Starts argv[0] (a path) with argv, its stdin and stdout pipes of ours,
 * stderr igwd's, no other descriptor. NULL with err (spawn failed). */
live_proc *live_proc_start(igw_engine *e, char *const argv[], const live_proc_ops *ops, void *ctx, char *err,
                           size_t errlen);

/* Writes line and a newline to its stdin without waiting: -1 (and the
 * process is stopped, gone called later never) when the pipe cannot take
 * it all now: a processor that does not read is stalled. */
int live_proc_send(live_proc *p, const char *line, size_t len);

/* Ends it: stdin closed and SIGTERM now, SIGKILL after LIVE_PROC_KILL_MS if
 * it lingers, reaped by the tick. No callback after. */
#define LIVE_PROC_KILL_MS 1000
void live_proc_stop(live_proc *p);

/* Its process id (tests, logs). */
pid_t live_proc_pid(const live_proc *p);

/* Reaps ended processes, kills lingering ones (every engine tick). */
void live_proc_tick(igw_engine *e);

/* The engine stops: every process killed and reaped. */
void live_proc_stop_all(igw_engine *e);

#endif
