#!/usr/bin/env python3
"""refusing_broker.py PORT SECONDS - an MQTT "broker" that accepts the
first CONNECT, drops that connection 0.3 s later, and refuses every later
one (not authorized, in the client's protocol: 3.1.1 or 5): a lost connection followed by refusals,
which is no client-id takeover (tests/ops/run_test.sh). Prints the number
of connections it saw when SECONDS are up."""
import socket
import sys
import time


def read_packet(c):
    """One MQTT packet (fixed header, remaining length, body) or None at EOF."""
    h = c.recv(1)
    if not h:
        return None
    n, mul = 0, 1
    for _ in range(4):
        b = c.recv(1)
        if not b:
            return None
        n += (b[0] & 0x7F) * mul
        mul *= 128
        if not b[0] & 0x80:
            break
    body = b''
    while len(body) < n:
        chunk = c.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return h[0] >> 4, body


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', port))
    srv.listen(4)
    end = time.monotonic() + seconds
    seen = 0
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        srv.settimeout(left)
        try:
            c, _ = srv.accept()
        except socket.timeout:
            break
        with c:
            c.settimeout(2)
            try:
                p = read_packet(c)
            except OSError:
                continue
            if not p or p[0] != 1:  # not a CONNECT
                continue
            seen += 1
            if len(p[1]) > 6 and p[1][6] == 5:  # MQTT 5: reason, no properties
                c.sendall(bytes([0x20, 3, 0, 0x00 if seen == 1 else 0x87, 0]))
            else:  # 3.1.1: return code 5, not authorized
                c.sendall(bytes([0x20, 2, 0, 0x00 if seen == 1 else 0x05]))
            if seen == 1:
                time.sleep(0.3)
    print(seen, flush=True)


if __name__ == '__main__':
    main()
