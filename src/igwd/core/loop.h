/* loop.h - a thread of its own running one h2o event loop, and the one way
 * other threads hand it work.
 *
 * For state that must live on one thread and be reached from many (the
 * session engine: every session, leg and media event on one loop, commands
 * from every HTTP worker). Work is posted as a function and an argument and
 * runs on the loop's thread in posting order; the loop owns nothing else.
 *
 * Threads: igw_loop_post from any thread; igw_loop_evloop for hooks that
 * run on the loop; start and stop from the thread that owns the loop
 * object (not from the loop's own thread). */
#ifndef IGW_CORE_LOOP_H
#define IGW_CORE_LOOP_H

#include <stddef.h>

struct st_h2o_evloop_t;

typedef struct igw_loop igw_loop;

/* Starts the thread (named `name`, at most 15 bytes shown) and runs
 * init(arg, evloop) on it before the loop turns; start returns once init
 * has returned. init's non-zero return fails the start (the thread ends,
 * err says "<name>: initialisation failed"). NULL with err on failure. */
igw_loop *igw_loop_start(const char *name, int (*init)(void *arg, struct st_h2o_evloop_t *loop), void *arg,
                         char *err, size_t errlen);

/* Runs fn(arg) on the loop's thread, after the work posted before it.
 * 0, or -1 when memory runs out or the loop is stopping (fn never runs:
 * the caller keeps arg). */
int igw_loop_post(igw_loop *l, void (*fn)(void *arg), void *arg);

/* The event loop, for the loop's own thread (timers, sockets). */
struct st_h2o_evloop_t *igw_loop_evloop(igw_loop *l);

/* Refuses new posts, runs what was posted, then fini(arg) on the loop's
 * thread (fini may be NULL; it must close what it opened on the loop), turns
 * the loop until its sockets are closed, joins the thread and frees. NULL
 * is ignored. */
void igw_loop_stop(igw_loop *l, void (*fini)(void *arg), void *arg);

#endif
