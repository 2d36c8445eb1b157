#!/usr/bin/env python3
"""ping.py PORT USER PASSWORD SECONDS - an MQTT 3.1.1 client on raw sockets
that connects to 127.0.0.1:PORT, then sends PINGREQ every 100 ms for
SECONDS and waits for each PINGRESP (5 s at most). Prints
"pings N max_ms M" and exits 0 when every ping was answered, 1 otherwise
(with the reason on stderr). Used by plugin_test.sh to show that the broker
keeps answering while the auth plugin's database is frozen."""
import socket
import sys
import time

from mqttraw import connect, read_exact


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    port, user, password, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    # keepalive 60: the pings below are the client's own, every 100 ms.
    sock = connect(port, "igwd-ping", user, password, 60)
    if sock is None:
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
