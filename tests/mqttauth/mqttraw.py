"""mqttraw.py - the MQTT 3.1.1 pieces the raw-socket test clients share
(ping.py, hold.py): a CONNECT with username and password, and exact reads."""
import socket
import struct


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


def connect(port, cid, user, password, keepalive):
    """A connection to 127.0.0.1:port (5 s timeout) after a CONNECT
    (protocol level 4, username + password + clean session); None when the
    CONNACK is not "accepted" or the broker closes first."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    var = utf8("MQTT") + bytes([4, 0xC2]) + struct.pack("!H", keepalive)
    body = var + utf8(cid) + utf8(user) + utf8(password)
    sock.sendall(bytes([0x10]) + remaining_length(len(body)) + body)
    try:
        ack = read_exact(sock, 4)
    except ConnectionError:
        ack = b""
    if ack != b"\x20\x02\x00\x00":
        sock.close()
        return None
    return sock
