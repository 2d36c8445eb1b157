/* recordings_sql.c - igw-recordings-sql: prints the statement
 * src/igwd/catalog/recordings.c prepares for /recordings/query, then its
 * parameter count, for make bench-recordings's SQL reference. The file is
 * compiled in whole, so the reference runs the very text igwd runs: the two
 * cannot drift (a copy of the SQL beside the benchmark could). */
#include "catalog/recordings.c"

int main(void)
{
    if (printf("%s\n%d\n", st_query.sql, st_query.nparams) < 0 || fflush(stdout) != 0)
        return 1;
    return 0;
}
