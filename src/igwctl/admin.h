/* admin.h - igwctl's admin commands on PostgreSQL (enterprises, users,
 * products, devices, gateways, cameras, grants) and login tokens. */
#ifndef IGW_CTL_ADMIN_H
#define IGW_CTL_ADMIN_H

/* Runs `igwctl NOUN VERB [--opt value]...` (argv[0] is NOUN; VERB absent for
 * `grant`). Prints one JSON object on stdout and returns 0, or prints
 * {"error":"..."} on stderr and returns 1. Returns -1 (nothing printed)
 * when NOUN is not an admin command. */
int igw_admin_main(int argc, char **argv);

/* The admin part of `igwctl help`. */
extern const char igw_admin_usage[];

#endif
