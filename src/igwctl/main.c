/* main.c - igwctl, the igw admin CLI. Subcommands print JSON. */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "check.h"

static void usage(FILE *f)
{
    fputs("usage: igwctl COMMAND [ARGS]\n"
          "\n"
          "commands:\n"
          "  check ROUTE_PATH < body   decode a request body strictly; prints the canonical\n"
          "                            request (exit 0) or {code,reason,path} (exit 1);\n"
          "                            exit 2 for an unknown route\n"
          "\n"
          "admin commands (PostgreSQL; JSON on stdout):\n",
          f);
    fputs(igw_admin_usage, f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "check") == 0)
        return igw_check_main(argc - 2, argv + 2);
    int rc = igw_admin_main(argc - 1, argv + 1);
    if (rc >= 0)
        return rc;
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "igwctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
