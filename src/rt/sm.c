/* sm.c - see sm.h. */
#include "sm.h"

#include <string.h>

igw_sm_result igw_sm_fire(const igw_sm *m, int state, int trigger, uint32_t guards)
{
    igw_sm_result r = {false, state, m->illegal, "trigger not allowed in this state"};
    if (state < 0 || state >= m->nstates || trigger < 0 || trigger >= m->ntriggers) {
        r.reason = "unknown state or trigger";
        return r;
    }
    for (uint16_t i = 0; i < m->nrows; i++) {
        const igw_sm_row *row = &m->rows[i];
        if (row->from != state || row->trigger != trigger)
            continue;
        if (row->to == IGW_SM_REFUSE) {
            r.err = row->err;
            r.reason = row->reason;
            return r;
        }
        if (row->guard != IGW_SM_NO_GUARD && !(guards & (UINT32_C(1) << row->guard))) {
            r.reason = "a guard of this transition does not hold";
            continue;
        }
        r.ok = true;
        r.next = row->to;
        r.reason = NULL;
        return r;
    }
    return r;
}

static int find(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int igw_sm_state(const igw_sm *m, const char *name)
{
    return find(m->states, m->nstates, name);
}

int igw_sm_trigger(const igw_sm *m, const char *name)
{
    return find(m->triggers, m->ntriggers, name);
}

int igw_sm_guard(const igw_sm *m, const char *name)
{
    return m->guards ? find(m->guards, m->nguards, name) : -1;
}
