/*
 * await.c - uplinks sent again with backoff until answered (await.h).
 */
#include "await.h"

#include <string.h>

void igw_vcam_await_init(igw_vcam_await *a, igw_vcam_await_mode mode, void (*resend)(void *user, unsigned after_ms),
                         void *user)
{
    memset(a, 0, sizeof *a);
    a->mode = mode;
    a->resend = resend;
    a->user = user;
    a->delay_ms = IGW_VCAM_AWAIT_FIRST_MS;
}

static gboolean on_timer(gpointer data)
{
    igw_vcam_await *a = data;
    unsigned waited = a->delay_ms;

    a->timer = 0;
    if (!igw_vcam_await_pending(a))
        return G_SOURCE_REMOVE;
    a->delay_ms = a->delay_ms * 2 > IGW_VCAM_AWAIT_MAX_MS ? IGW_VCAM_AWAIT_MAX_MS : a->delay_ms * 2;
    if (a->mode == IGW_VCAM_AWAIT_ALL) { /* what goes now stands for them all */
        a->ntokens = 0;
        a->overflow = 0;
    }
    a->resend(a->user, waited); /* its igw_vcam_await_sent arms the next, at the doubled delay */
    return G_SOURCE_REMOVE;
}

void igw_vcam_await_sent(igw_vcam_await *a, const char *token)
{
    if (a->ntokens == IGW_VCAM_AWAIT_TOKENS) {
        if (a->mode == IGW_VCAM_AWAIT_ALL)
            a->overflow = 1;
        else { /* the oldest goes: any of the newer answers as well */
            memmove(a->tokens[0], a->tokens[1], (IGW_VCAM_AWAIT_TOKENS - 1) * sizeof a->tokens[0]);
            a->ntokens--;
        }
    }
    if (a->ntokens < IGW_VCAM_AWAIT_TOKENS)
        g_strlcpy(a->tokens[a->ntokens++], token, sizeof a->tokens[0]);
    if (!a->timer)
        a->timer = g_timeout_add(a->delay_ms, on_timer, a);
}

int igw_vcam_await_answered(igw_vcam_await *a, const char *token)
{
    unsigned i;

    for (i = 0; i < a->ntokens && strcmp(a->tokens[i], token) != 0; i++)
        ;
    if (i == a->ntokens)
        return 0;
    if (a->mode == IGW_VCAM_AWAIT_ANY)
        a->ntokens = 0;
    else {
        memmove(a->tokens[i], a->tokens[i + 1], (a->ntokens - i - 1) * sizeof a->tokens[0]);
        a->ntokens--;
    }
    if (!igw_vcam_await_pending(a))
        igw_vcam_await_reset(a);
    return 1;
}

int igw_vcam_await_pending(const igw_vcam_await *a)
{
    return a->ntokens > 0 || a->overflow;
}

void igw_vcam_await_reset(igw_vcam_await *a)
{
    if (a->timer)
        g_source_remove(a->timer);
    a->timer = 0;
    a->ntokens = 0;
    a->overflow = 0;
    a->delay_ms = IGW_VCAM_AWAIT_FIRST_MS;
}
