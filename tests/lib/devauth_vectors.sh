#!/bin/sh
# vectors.sh - recomputes the known-answer vectors of devauth_test.c with the
# openssl CLI (independently of devauth.c). Prints C initialisers to paste
# into kat[] and KAT_BASIC. Needs openssl, base64 and od (coreutils).
set -eu

hmac() { # alg secret_b64 msg
    printf %s "$3" | openssl dgst -"$1" -mac HMAC \
        -macopt hexkey:"$(printf %s "$2" | base64 -d | od -An -v -tx1 | tr -d ' \n')" | sed 's/.*= //'
}

one() { # secret_b64 username
    printf '    {"%s",\n     "%s",\n     "%s;hmacsha256",\n     "%s;hmacsha1"},\n' \
        "$1" "$2" "$(hmac sha256 "$1" "$2")" "$(hmac sha1 "$1" "$2")"
}

one "MDEyMzQ1Njc4OWFiY2RlZmdoaWo=" "254pwnKQsvK&dev01;12010126;abc12;2000000000"
one "q83vASNFZ4mrze8BI0VniavN7wE=" "ProductA&camera-7;12010126;Zz9Aa;1767225600"
one "//////////////////////////8=" "P&D;12010126;00000;9007199254740991"
one "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" "x.y_z-1&n@m!e*~;12010126;QWERT;1"
one "VI04Eh4N8VgM29U/dnu9cQ==" "$(printf 'p%.0s' $(seq 64))&$(printf 'd%.0s' $(seq 64));12010126;a1B2c;4102444800"

# The Authorization value of the first vector's sha256 credential.
u="254pwnKQsvK&dev01;12010126;abc12;2000000000"
p="$(hmac sha256 "MDEyMzQ1Njc4OWFiY2RlZmdoaWo=" "$u");hmacsha256"
printf '    /* basic */ "Basic %s"\n' "$(printf '%s:%s' "$u" "$p" | base64 -w0)"
