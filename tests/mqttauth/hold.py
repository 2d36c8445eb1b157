#!/usr/bin/env python3
"""hold.py PORT CLIENTID USER PASSWORD KEEPALIVE - an MQTT 3.1.1 client on
raw sockets that connects to 127.0.0.1:PORT with that keepalive (seconds),
prints "connected", then sends nothing at all (no PINGREQ) and waits until
the broker closes the connection: prints "closed N ms" (N since the
CONNACK) and exits 0. Exit 1 when the CONNECT is refused. Used by
plugin_test.sh for the presence of a connection the broker drops: a
keepalive expiry (a device that went silent), a takeover (the same
clientID connected again)."""
import sys
import time

from mqttraw import connect


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    port, cid, user, password, keepalive = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    sock = connect(port, cid, user, password, keepalive)
    if sock is None:
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
