/* check.h - the `check` subcommand of igwctl. */
#ifndef IGW_CTL_CHECK_H
#define IGW_CTL_CHECK_H

/* Runs `igwctl check ROUTE_PATH` on stdin: 0 valid (canonical JSON on
 * stdout), 1 refused ({"code","reason","path"} on stdout), 2 unknown route
 * or usage/I/O error. argv holds the arguments after "check". */
int igw_check_main(int argc, char **argv);

#endif
