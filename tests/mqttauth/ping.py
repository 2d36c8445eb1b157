#!/usr/bin/env python3
"""ping.py PORT USER PASSWORD SECONDS - an MQTT 3.1.1 client on raw sockets
that connects to 127.0.0.1:PORT, then sends PINGREQ every 100 ms for
SECONDS and waits for each PINGRESP (5 s at most). Prints
"pings N max_ms M" and exits 0 when every ping was answered, 1 otherwise
(with the reason on stderr). Used by plugin_test.sh to show that the broker
keeps answering while the auth plugin's database is frozen."""
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


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return buf


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    port, user, password, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    # CONNECT: protocol MQTT level 4, username + password + clean session, keepalive 60.
    var = utf8("MQTT") + bytes([4, 0xC2]) + struct.pack("!H", 60)
    payload = utf8("igwd-ping") + utf8(user) + utf8(password)
    body = var + payload
    sock.sendall(bytes([0x10]) + remaining_length(len(body)) + body)
    if read_exact(sock, 4) != b"\x20\x02\x00\x00":
        print("ping.py: CONNECT not accepted", file=sys.stderr)
        return 1
    n, worst = 0, 0.0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            t0 = time.monotonic()
            sock.sendall(b"\xc0\x00")
            if read_exact(sock, 2) != b"\xd0\x00":
                print("ping.py: not a PINGRESP", file=sys.stderr)
                return 1
            worst = max(worst, time.monotonic() - t0)
            n += 1
            time.sleep(0.1)
    except (socket.timeout, OSError) as e:
        print(f"ping.py: ping {n + 1} unanswered: {e}", file=sys.stderr)
        print(f"pings {n} max_ms {int(worst * 1000)}")
        return 1
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.close()
    print(f"pings {n} max_ms {int(worst * 1000)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
