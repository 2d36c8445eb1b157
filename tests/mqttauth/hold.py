#!/usr/bin/env python3
"""hold.py PORT CLIENTID USER PASSWORD KEEPALIVE - an MQTT 3.1.1 client on
raw sockets that connects to 127.0.0.1:PORT with that keepalive (seconds),
prints "connected", then sends nothing at all (no PINGREQ) and waits until
the broker closes the connection: prints "closed N ms" (N since the
CONNACK) and exits 0. Exit 1 when the CONNECT is refused. Used by
plugin_test.sh for the presence of a connection the broker drops: a
keepalive expiry (a device that went silent), a takeover (the same
clientID connected again)."""
import socket
import struct
import sys
import time


def utf8(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def remaining_length(n):
    out = bytearray()
    while True:
        byte = n % 128
        n //= 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    port, cid, user, password, keepalive = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    # CONNECT: protocol MQTT level 4, username + password + clean session.
    var = utf8("MQTT") + bytes([4, 0xC2]) + struct.pack("!H", keepalive)
    body = var + utf8(cid) + utf8(user) + utf8(password)
    sock.sendall(bytes([0x10]) + remaining_length(len(body)) + body)
    ack = b""
    while len(ack) < 4:
        chunk = sock.recv(4 - len(ack))
        if not chunk:
            break
        ack += chunk
    if ack != b"\x20\x02\x00\x00":
        print("hold.py: CONNECT not accepted", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    print("connected", flush=True)
    sock.settimeout(None)
    try:
        while sock.recv(4096):
            pass
    except OSError:
        pass
    print(f"closed {int((time.monotonic() - t0) * 1000)} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
