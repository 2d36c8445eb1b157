/* lock.h - mutex lock and unlock whose failure cannot be ignored.
 *
 * A default mutex fails to lock or unlock only when it is not one (memory
 * overwritten, already destroyed, unlocked by a thread that does not hold
 * it). Going on would run the critical section unguarded and corrupt what
 * it protects, so the process stops with the reason instead. */
#ifndef IGW_LOCK_H
#define IGW_LOCK_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fatal failure of a pthread call: message on stderr, then abort(). */
static inline void igw_lock_fatal(const char *what, int e)
{
    fprintf(stderr, "igw: %s: %s\n", what, strerror(e));
    abort();
}

/* pthread_mutex_lock, aborting on failure. */
static inline void igw_lock(pthread_mutex_t *mu)
{
    int e = pthread_mutex_lock(mu);
    if (e != 0)
        igw_lock_fatal("pthread_mutex_lock", e);
}

/* pthread_mutex_unlock, aborting on failure. */
static inline void igw_unlock(pthread_mutex_t *mu)
{
    int e = pthread_mutex_unlock(mu);
    if (e != 0)
        igw_lock_fatal("pthread_mutex_unlock", e);
}

#endif
