/* purpose.h - what a purpose's file sees: the hooks it defines (hooks.h)
 * and the engine's files it may call. A purpose of interaction.open is its
 * row in the schema (generated/igwd/purposes.h) and its hooks. The
 * engine walks igw_purposes and calls a row's hooks; it names no purpose
 * and includes none of them. A purpose's file (purposes/<name>.c) defines
 * the hooks object its row names and may call the engine's files below it
 * (session.h, op.h, leg.h). Every hook runs on the engine's loop; a NULL
 * hook does nothing (a purpose's row says what it needs).
 *
 * Adding a purpose: a value of Purpose and its row in schema/commands.igw,
 * and one file here defining the hooks object. */
#ifndef IGW_SESSION_PURPOSE_H
#define IGW_SESSION_PURPOSE_H

#include "session/commands.h"
#include "session/decide.h"
#include "session/hooks.h"
#include "session/leg.h"
#include "session/live.h"
#include "session/op.h"
#include "session/session.h"

#endif
