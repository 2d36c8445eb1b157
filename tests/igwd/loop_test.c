/* loop_test.c - core/loop: work posted from several threads runs on the
 * loop's thread, each poster's in its order; init runs first on that
 * thread and its failure fails the start; stop runs what was posted, then
 * fini, and refuses later posts; a timer on the loop fires. Built with
 * ThreadSanitizer too (make test-loop). */
#include <h2o.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/loop.h"

#include "../check.h"

#define POSTERS 4
#define PER_POSTER 2000

typedef struct state {
    pthread_t loop_thread;
    int last[POSTERS]; /* the last sequence number seen per poster (loop thread only) */
    int out_of_order;
    int wrong_thread;
    long ran;
    bool fini_ran;
    long ran_at_fini;
    bool timer_fired;
    igw_loop *self;
    struct st_h2o_evloop_t *loop;
    int post_in_fini; /* igw_loop_post's answer once stopping */
    h2o_timeout_t t;
    h2o_timeout_entry_t e;
} state;

typedef struct item {
    state *s;
    int poster, seq;
} item;

static state S;
static item items[POSTERS][PER_POSTER];

static int on_init(void *arg, struct st_h2o_evloop_t *loop)
{
    state *s = arg;
    s->loop_thread = pthread_self();
    s->loop = loop;
    for (int p = 0; p < POSTERS; p++)
        s->last[p] = -1;
    h2o_timeout_init(loop, &s->t, 10);
    return 0;
}

static int on_init_fails(void *arg, struct st_h2o_evloop_t *loop)
{
    (void)arg, (void)loop;
    return -1;
}

static void run_item(void *arg)
{
    item *it = arg;
    state *s = it->s;
    if (!pthread_equal(pthread_self(), s->loop_thread))
        s->wrong_thread++;
    if (it->seq != s->last[it->poster] + 1)
        s->out_of_order++;
    s->last[it->poster] = it->seq;
    s->ran++;
}

typedef struct poster_arg {
    igw_loop *l;
    int poster;
    int refused;
} poster_arg;

static void *poster_main(void *arg)
{
    poster_arg *pa = arg;
    for (int i = 0; i < PER_POSTER; i++) {
        items[pa->poster][i] = (item){&S, pa->poster, i};
        if (igw_loop_post(pa->l, run_item, &items[pa->poster][i]) != 0)
            pa->refused++;
    }
    return NULL;
}

static void on_timer(h2o_timeout_entry_t *e)
{
    state *s = H2O_STRUCT_FROM_MEMBER(state, e, e);
    s->timer_fired = true;
}

static void arm_timer(void *arg)
{
    state *s = arg;
    s->e.cb = on_timer;
    h2o_timeout_link(s->loop, &s->t, &s->e);
}

static void never(void *arg)
{
    (void)arg;
}

static void on_fini(void *arg)
{
    state *s = arg;
    s->fini_ran = true;
    s->ran_at_fini = s->ran;
    s->post_in_fini = igw_loop_post(s->self, never, NULL);
    if (h2o_timeout_is_linked(&s->e))
        h2o_timeout_unlink(&s->e);
    h2o_timeout_dispose(s->loop, &s->t);
}

int main(void)
{
    char err[128];
    /* init's failure fails the start, with the loop's name. */
    igw_loop *bad = igw_loop_start("bad", on_init_fails, NULL, err, sizeof err);
    CHECK(bad == NULL && strcmp(err, "bad: initialisation failed") == 0, "err: %s", err);

    igw_loop *l = igw_loop_start("test", on_init, &S, err, sizeof err);
    CHECK(l != NULL, "start: %s", err);
    S.self = l;
    CHECK(!pthread_equal(S.loop_thread, pthread_self()), "init ran on the loop's own thread");
    CHECK(igw_loop_post(l, arm_timer, &S) == 0);

    pthread_t th[POSTERS];
    poster_arg pa[POSTERS];
    for (int p = 0; p < POSTERS; p++) {
        pa[p] = (poster_arg){l, p, 0};
        CHECK(pthread_create(&th[p], NULL, poster_main, &pa[p]) == 0);
    }
    int refused = 0;
    for (int p = 0; p < POSTERS; p++) {
        pthread_join(th[p], NULL);
        refused += pa[p].refused;
    }
    CHECK(refused == 0, "%d posts refused while running", refused);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* the 10 ms timer */

    igw_loop_stop(l, on_fini, &S);
    CHECK(S.fini_ran, "fini ran");
    CHECK(S.ran == POSTERS * PER_POSTER && S.ran_at_fini == S.ran, "ran %ld, %ld before fini", S.ran, S.ran_at_fini);
    CHECK(S.out_of_order == 0, "%d posts out of their poster's order", S.out_of_order);
    CHECK(S.wrong_thread == 0, "%d posts ran on another thread", S.wrong_thread);
    CHECK(S.timer_fired, "a timer on the loop fired");
    CHECK(S.post_in_fini == -1, "a stopping loop refuses posts");

    /* No init, no fini. */
    igw_loop *l2 = igw_loop_start("test2", NULL, NULL, err, sizeof err);
    CHECK(l2 != NULL, "start without init: %s", err);
    igw_loop_stop(l2, NULL, NULL);
    return check_summary("loop_test");
}
