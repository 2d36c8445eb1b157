/* sign.c - test helper: prints a device's MQTT username and password
 * (src/lib/devauth.h), one per line.
 *   sign PRODUCT DEVICE SECRET_B64 EXPIRY */
#include <stdio.h>
#include <stdlib.h>

#include "devauth.h"

int main(int argc, char **argv)
{
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    char *end;
    long long expiry;
    if (argc != 5) {
        fprintf(stderr, "usage: sign PRODUCT DEVICE SECRET_B64 EXPIRY\n");
        return 2;
    }
    expiry = strtoll(argv[4], &end, 10);
    if (*argv[4] == 0 || *end != 0 ||
        igw_devauth_sign(argv[1], argv[2], argv[3], expiry, 0, user, sizeof user, pass,
                         sizeof pass) != 0) {
        fprintf(stderr, "sign: bad input\n");
        return 1;
    }
    printf("%s\n%s\n", user, pass);
    return 0;
}
