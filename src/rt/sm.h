/* sm.h - the walker of the generated state machines (generated/machines.c
 * holds only their tables): states, triggers and guards by index, one row
 * per allowed or explicitly refused transition.
 *
 * Pure functions over constant tables: any thread. Error classes are igw_err
 * values (generated/api.h) carried as int, so the runtime needs no
 * generated header. */
#ifndef IGW_SM_H
#define IGW_SM_H

#include <stdbool.h>
#include <stdint.h>

#define IGW_SM_NO_GUARD (-1) /* igw_sm_row.guard: unconditional */
#define IGW_SM_REFUSE (-1)   /* igw_sm_row.to: a refusing row */

/* One row: in state `from`, trigger `trigger` moves to `to` when guard
 * `guard` holds; a refusing row (to = IGW_SM_REFUSE) refuses with `err`
 * and `reason`. */
typedef struct igw_sm_row {
    int16_t from, trigger, guard, to;
    int err; /* igw_err */
    const char *reason;
} igw_sm_row;

typedef struct igw_sm {
    const char *name;
    const char *const *states; /* [0] = "none", the state before creation */
    const char *const *triggers;
    const char *const *guards; /* NULL when it has none */
    const bool *terminal;
    uint16_t nstates, ntriggers, nguards, nrows;
    const igw_sm_row *rows;
    int illegal; /* igw_err of a trigger no row allows */
} igw_sm;

/* Outcome of firing a trigger. */
typedef struct igw_sm_result {
    bool ok;
    int next; /* next state (the current one when refused) */
    int err;  /* igw_err, when refused */
    const char *reason;
} igw_sm_result;

/* Fires `trigger` in `state` with the guards whose bits are set in
 * `guards` holding: the first row that matches and whose guard holds
 * wins; a matching refusing row refuses with its class; otherwise the
 * machine's illegal class. */
igw_sm_result igw_sm_fire(const igw_sm *m, int state, int trigger, uint32_t guards);

/* Index of a state/trigger/guard name, or -1. */
int igw_sm_state(const igw_sm *m, const char *name);
int igw_sm_trigger(const igw_sm *m, const char *name);
int igw_sm_guard(const igw_sm *m, const char *name);

#endif
