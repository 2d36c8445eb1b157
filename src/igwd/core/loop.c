/* loop.c - see loop.h. */
#include "core/loop.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "lock.h"

typedef struct post {
    h2o_multithread_message_t super;
    void (*fn)(void *arg);
    void *arg;
} post;

struct igw_loop {
    char name[16];
    pthread_t thread;
    h2o_evloop_t *loop;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    pthread_mutex_t mu; /* stopping, and the start handshake */
    pthread_cond_t cv;
    bool stopping;      /* no more posts */
    bool started;       /* init returned (status says how) */
    int status;
    bool done;          /* the stop message ran: leave the loop */
    post stop;          /* the last message */
    void (*fini)(void *arg);
    void *fini_arg;
    int (*init)(void *arg, h2o_evloop_t *loop);
    void *init_arg;
};

static void on_messages(h2o_multithread_receiver_t *r, h2o_linklist_t *messages)
{
    igw_loop *l = H2O_STRUCT_FROM_MEMBER(igw_loop, receiver, r);
    while (!h2o_linklist_is_empty(messages)) {
        post *p = H2O_STRUCT_FROM_MEMBER(post, super.link, messages->next);
        h2o_linklist_unlink(&p->super.link);
        if (p == &l->stop) {
            if (l->fini)
                l->fini(l->fini_arg);
            l->done = true;
            continue;
        }
        p->fn(p->arg);
        free(p);
    }
}

/* The loop, its queue and every socket on them are made, run and freed on
 * this thread: h2o 2.2 binds a socket's input buffer to the creating
 * thread's buffer prototype (thread-local), whose recycling list is not
 * shared safely with another thread, nor usable after that thread ended. */
static void *loop_main(void *arg)
{
    igw_loop *l = arg;
    l->loop = h2o_evloop_create();
    l->queue = h2o_multithread_create_queue(l->loop);
    h2o_multithread_register_receiver(l->queue, &l->receiver, on_messages);
    int rc = l->init ? l->init(l->init_arg, l->loop) : 0;
    igw_lock(&l->mu);
    l->started = true;
    l->status = rc;
    pthread_cond_signal(&l->cv);
    igw_unlock(&l->mu);
    if (rc == 0)
        while (!l->done)
            h2o_evloop_run(l->loop, INT32_MAX);
    h2o_multithread_unregister_receiver(l->queue, &l->receiver);
    h2o_multithread_destroy_queue(l->queue);
    /* Closed sockets are freed by the loop's next turns. */
    for (int i = 0; i < 4; i++)
        h2o_evloop_run(l->loop, 0);
    h2o_evloop_destroy(l->loop);
    return NULL;
}

igw_loop *igw_loop_start(const char *name, int (*init)(void *arg, struct st_h2o_evloop_t *loop), void *arg,
                         char *err, size_t errlen)
{
    igw_loop *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(l->name, sizeof l->name, "%s", name);
    l->init = init;
    l->init_arg = arg;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        snprintf(err, errlen, "%s: cannot make a mutex", name);
        return NULL;
    }
    if (pthread_cond_init(&l->cv, NULL) != 0) {
        pthread_mutex_destroy(&l->mu);
        free(l);
        snprintf(err, errlen, "%s: cannot make a condition variable", name);
        return NULL;
    }
    int rc = pthread_create(&l->thread, NULL, loop_main, l);
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot start a thread: %s", name, strerror(rc));
        goto fail;
    }
    igw_lock(&l->mu);
    while (!l->started)
        pthread_cond_wait(&l->cv, &l->mu);
    int status = l->status;
    igw_unlock(&l->mu);
    if (status != 0) {
        pthread_join(l->thread, NULL);
        snprintf(err, errlen, "%s: initialisation failed", name);
        goto fail;
    }
    return l;
fail:
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
    return NULL;
}

int igw_loop_post(igw_loop *l, void (*fn)(void *arg), void *arg)
{
    post *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->fn = fn;
    p->arg = arg;
    /* Under the lock, so that nothing posted can follow the stop message. */
    igw_lock(&l->mu);
    bool refused = l->stopping;
    if (!refused)
        h2o_multithread_send_message(&l->receiver, &p->super);
    igw_unlock(&l->mu);
    if (refused) {
        free(p);
        return -1;
    }
    return 0;
}

struct st_h2o_evloop_t *igw_loop_evloop(igw_loop *l)
{
    return l->loop;
}

void igw_loop_stop(igw_loop *l, void (*fini)(void *arg), void *arg)
{
    if (!l)
        return;
    igw_lock(&l->mu);
    l->stopping = true;
    l->fini = fini;
    l->fini_arg = arg;
    h2o_multithread_send_message(&l->receiver, &l->stop.super);
    igw_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
