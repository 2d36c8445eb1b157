"""vcam_mqtt.py DIR PORT HOST VCAM - igw-vcam as an MQTT device, against a
platform played here: a plain Mosquitto (anonymous, config in DIR, on PORT),
a raw MQTT client (tests/mqttauth/mqttraw.py) that invites, answers and
controls legs, and igw-media-host (HOST, the real media core) answering the
camera's offers and counting what arrives. Run by vcam_mqtt.sh; prints
"vcam mqtt: N checks passed" or exits 1.
The protocol: docs/device-protocol.md, "Media (handle media)"."""
import json
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mqttauth"))
import mqttraw  # noqa: E402

DIR, PORT, HOST, VCAM = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
P, D = "vcamprod", "vcam-dev-1"
SECRET = "MDEyMzQ1Njc4OWFiY2RlZmdoaWo="
UP_S, UP_C = f"$media/up/session/{P}/{D}", f"$media/up/capability/{P}/{D}"
DOWN_S, DOWN_C = f"$media/down/session/{P}/{D}", f"$media/down/capability/{P}/{D}"
UP_R, DOWN_R = f"$media/up/recording/{P}/{D}", f"$media/down/recording/{P}/{D}"
VIDEO = {"trackId": "video-1", "kind": "video", "codec": "H264"}
MIC = {"trackId": "mic", "kind": "audio", "codec": "opus"}
SPEAKER = {"trackId": "speaker", "kind": "audio", "codec": "opus"}

checks = failures = 0


def check(ok, what):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr, flush=True)
    return bool(ok)


def log(msg):
    print(f"vcam_mqtt: {msg}", file=sys.stderr, flush=True)


# ---- the broker ----
class Broker:
    def __init__(self):
        self.conf = os.path.join(DIR, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(DIR, "mosquitto.log"), "a"))
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not listen on {PORT}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


# ---- the platform's MQTT client: QoS 1 both ways ----
class Client:
    def __init__(self, cid):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        body = mqttraw.utf8("MQTT") + bytes([4, 0x02]) + struct.pack("!H", 0) + mqttraw.utf8(cid)
        self.sock.sendall(bytes([0x10]) + mqttraw.remaining_length(len(body)) + body)
        if mqttraw.read_exact(self.sock, 4) != b"\x20\x02\x00\x00":
            raise RuntimeError("CONNECT refused")
        self.sock.settimeout(None)
        self.lock = threading.Lock()
        self.mid = 0
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, first, body):
        with self.lock:
            self.sock.sendall(bytes([first]) + mqttraw.remaining_length(len(body)) + body)

    def _next_mid(self):
        self.mid = self.mid % 65535 + 1
        return self.mid

    def subscribe(self, topic):
        self._send(0x82, struct.pack("!H", self._next_mid()) + mqttraw.utf8(topic) + bytes([1]))

    def publish(self, topic, payload):
        if not isinstance(payload, (bytes, bytearray)):
            payload = json.dumps(payload).encode()
        self._send(0x32, mqttraw.utf8(topic) + struct.pack("!H", self._next_mid()) + payload)

    def _read(self):
        try:
            while True:
                head = mqttraw.read_exact(self.sock, 1)[0]
                n, mult = 0, 1
                while True:
                    b = mqttraw.read_exact(self.sock, 1)[0]
                    n += (b & 0x7F) * mult
                    mult *= 128
                    if not b & 0x80:
                        break
                body = mqttraw.read_exact(self.sock, n) if n else b""
                if head >> 4 != 3:
                    continue  # PUBACK, SUBACK
                qos = (head >> 1) & 3
                tl = struct.unpack("!H", body[:2])[0]
                topic = body[2:2 + tl].decode()
                off = 2 + tl
                if qos:
                    self._send(0x40, body[off:off + 2])
                    off += 2
                self.q.put((topic, body[off:]))
        except (OSError, ConnectionError, IndexError, struct.error):
            self.q.put(None)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Platform:
    """What the camera published, read in order; mediaState is answered."""

    def __init__(self):
        self.inbox = []
        self.client = None
        self.connect()

    def connect(self):
        deadline = time.time() + 5
        while True:
            try:
                self.client = Client("platform-test")
                break
            except (OSError, RuntimeError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.client.subscribe("$media/up/#")
        time.sleep(0.2)  # the SUBACK: nothing published before is lost

    def pump(self, timeout):
        try:
            item = self.client.q.get(timeout=max(0.01, timeout))
        except queue.Empty:
            return
        if item is None:
            time.sleep(min(timeout, 0.1))
            return
        topic, raw = item
        try:
            msg = json.loads(raw)
        except ValueError:
            msg = {"_raw": raw}
        if topic == UP_S and msg.get("method") == "mediaState":
            self.client.publish(DOWN_S, {"code": 200, "method": "mediaStateReply", "msgToken": msg.get("msgToken")})
        self.inbox.append((topic, msg))

    def wait(self, pred, timeout, consume=True):
        deadline = time.time() + timeout
        while True:
            for i, (t, m) in enumerate(self.inbox):
                if pred(t, m):
                    if consume:
                        del self.inbox[i]
                    return m
            left = deadline - time.time()
            if left <= 0:
                return None
            self.pump(left)

    def session(self, method, leg=None, timeout=10, **kw):
        return self.wait(lambda t, m: t == UP_S and m.get("method") == method and
                         (leg is None or m.get("sessionId") == leg), timeout, **kw)

    def drain(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            self.pump(end - time.time())

    def send(self, msg, topic=DOWN_S):
        self.client.publish(topic, msg)


# ---- the media core ----
class MediaHost:
    def __init__(self):
        self.proc = subprocess.Popen([HOST, "--address", "127.0.0.1", "--consent-ms", "3000"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.replies = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            m = json.loads(line)
            if m.get("type") == "event":
                self.events.append(m)
            else:
                self.replies.put(m)

    def call(self, req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self.replies.get(timeout=10)

    def stats(self, pid):
        return self.call({"op": "stats", "id": pid})

    def event(self, pid, name, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(e["id"] == pid and e["event"] == name for e in list(self.events)):
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait(10)


class Camera:
    def __init__(self, args, name):
        self.errpath = os.path.join(DIR, f"{name}.err")
        self.proc = subprocess.Popen([VCAM, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.errpath, "w"))

    def stderr(self):
        with open(self.errpath) as f:
            return f.read()


def invite(plat, leg, rev, tracks, camera="cam-1", token=None):
    token = token or f"inv-{leg}-{rev}"
    plat.send({"method": "invite", "msgToken": token, "sessionId": leg,
               "params": {"cameraId": camera, "mediaRevision": rev, "tracks": tracks}})
    return token


def answer(plat, host, offer, leg, rev):
    """The platform's side of an offer: the media core answers, the reply goes down."""
    sdp = offer["params"]["webrtc"]["sdp"]
    r = host.call({"op": "source", "id": leg, "rev": rev, "sdp": sdp})
    if not check(r.get("ok"), f"{leg}: the media core answered the camera's offer ({r.get('error')})"):
        return False
    plat.send({"code": 200, "method": "mediaOfferReply", "msgToken": offer["msgToken"],
               "data": {"sessionId": leg, "mediaRevision": rev, "webrtc": {"iceMode": "lite", "sdp": r["sdp"]}}})
    return True


def sections(sdp, kind):
    """The m-sections of kind in sdp, each as its list of lines."""
    return [sec.splitlines() for sec in sdp.replace("\r\n", "\n").split("\nm=")[1:] if sec.startswith(kind + " ")]


def direction(sdp, kind):
    """The direction attributes of every kind section, e.g. ["a=sendrecv"]."""
    return [[ln for ln in sec if ln in ("a=sendrecv", "a=sendonly", "a=recvonly", "a=inactive")]
            for sec in sections(sdp, kind)]


def rtp_in(host, leg):
    r = host.stats(leg)
    return r.get("rtp_in", -1) if r.get("ok") else -1


def grows(host, leg, within):
    base = rtp_in(host, leg)
    deadline = time.time() + within
    while time.time() < deadline:
        if rtp_in(host, leg) > base:
            return True
        time.sleep(0.05)
    return False


def stalls(host, leg, settle=0.5, over=1.0):
    time.sleep(settle)  # what was in flight
    a = rtp_in(host, leg)
    time.sleep(over)
    b = rtp_in(host, leg)
    return a == b, (a, b)


def track(plat, leg, track_id, op, token, rev=1):
    plat.send({"method": "trackControl", "msgToken": token, "sessionId": leg,
               "params": {"trackId": track_id, "operation": op, "mediaRevision": rev}})
    return plat.wait(lambda t, m: t == UP_S and m.get("method") == "trackControlReply" and m.get("msgToken") == token, 5)


def main():
    broker = Broker()
    broker.start()
    plat = Platform()
    host = MediaHost()
    cams = []
    try:
        run(broker, plat, host, cams)
        run_recordings(broker, plat, host, cams)
    finally:
        for c in cams:
            if c.proc.poll() is None:
                c.proc.kill()
        check(host.close() == 0, "igw-media-host exits cleanly under sanitizers")
        plat.client.close()
        broker.stop()


def run(broker, plat, host, cams):
    # ---- bad command lines: exit 2 with a message ----
    for args in (["--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", D],
                 ["--product", P],
                 ["--mqtt", "nowhere", "--product", P, "--device", D, "--secret", SECRET],
                 ["--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", "a/b", "--secret", SECRET],
                 ["--device-file", os.path.join(DIR, "missing.json")],
                 ["--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", D, "--secret", SECRET, "--speaker"]):
        r = subprocess.run([VCAM, *args], capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and "vcam: error: " in r.stderr, f"exit 2 with a message for {' '.join(args)} ({r.returncode})")

    cam = Camera(["--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", D, "--secret", SECRET], "cam")
    cams.append(cam)

    # ---- capability on connect ----
    cap = plat.wait(lambda t, m: t == UP_C, 15)
    check(cap is not None, "a capability report arrives after the camera connects")
    cap = cap or {}
    prm = cap.get("params", {})
    check(cap.get("method") == "report" and isinstance(cap.get("msgToken"), str) and cap["msgToken"],
          f"capability: method report with a msgToken ({cap})")
    check(prm.get("cameras") == [{"cameraId": "cam-1", "video": ["H264"], "audio": ["opus"]}],
          f"capability: cameras cam-1, H264, opus ({prm.get('cameras')})")
    check(prm.get("microphone") is True and prm.get("speaker") is True and prm.get("maxUpstreams") == 1 and
          prm.get("confirmPolicy") == "auto", f"capability: microphone, speaker, maxUpstreams, confirmPolicy ({prm})")
    # Unanswered, it comes again (after 1 s); answered, it stops.
    again = plat.wait(lambda t, m: t == UP_C, 3)
    check(again is not None and again.get("msgToken") != cap.get("msgToken") and again.get("params") == prm,
          f"capability: unanswered, sent again with a fresh msgToken ({again})")
    cap = again or cap
    # A reply to no report of the camera's answers nothing: it goes on (2 s later).
    plat.send({"code": 200, "method": "reportReply", "msgToken": "unknown"}, DOWN_C)
    third = plat.wait(lambda t, m: t == UP_C, 3.5)
    check(third is not None and third.get("msgToken") not in (cap.get("msgToken"), "unknown"),
          f"capability: a reportReply with a foreign token does not end the resends ({third})")
    cap = third or cap
    plat.send({"code": 200, "method": "reportReply", "msgToken": cap.get("msgToken")}, DOWN_C)
    check(plat.wait(lambda t, m: t == UP_C, 5) is None, "capability: once answered, not sent again (the next was 4 s on)")

    # ---- invite (video only) -> mediaOffer -> answer -> media ----
    invite(plat, "L1", 1, [VIDEO])
    off = plat.session("mediaOffer", "L1", 15)
    check(off is not None, "invite L1 -> mediaOffer for L1")
    off = off or {"params": {"webrtc": {"sdp": ""}}, "msgToken": ""}
    sdp = off["params"]["webrtc"].get("sdp", "")
    check(off["params"].get("mediaRevision") == 1 and off["params"]["webrtc"].get("iceMode") == "full",
          f"mediaOffer: mediaRevision 1, iceMode full ({off.get('params', {}).get('mediaRevision')})")
    check("m=video " in sdp and "m=audio " not in sdp and "a=candidate:" in sdp,
          "mediaOffer: video only, as asked, candidates inside")
    check(isinstance(off.get("msgToken"), str) and off["msgToken"] != cap.get("msgToken"), "mediaOffer: a fresh msgToken")
    if answer(plat, host, off, "L1", 1):
        check(host.event("L1", "first-packet", 10), "L1: media reaches the media core")
        check(rtp_in(host, "L1") > 0, "L1: RTP packets counted")
    st = plat.wait(lambda t, m: t == UP_S and m.get("method") == "mediaState" and m.get("sessionId") == "L1" and
                   m.get("params", {}).get("state") == "connected", 10)
    check(st is not None and st["params"].get("mediaRevision") == 1, "L1: mediaState connected reported")

    # ---- trackControl ----
    r = track(plat, "L1", "video-1", "pause", "tc1")
    check(r and r.get("code") == 200 and r.get("sessionId") == "L1", f"pause video-1: trackControlReply 200 ({r})")
    ok, ab = stalls(host, "L1")
    check(ok, f"paused: no RTP for a second ({ab})")
    k0 = host.stats("L1").get("keyframes_in", 0)
    r = track(plat, "L1", "video-1", "resume", "tc2")
    check(r and r.get("code") == 200, f"resume video-1: trackControlReply 200 ({r})")
    check(grows(host, "L1", 1.0), "resumed: RTP again within 1 s")
    time.sleep(0.5)
    check(host.stats("L1").get("keyframes_in", 0) > k0, "resumed with a keyframe")
    r = track(plat, "L1", "nope", "pause", "tc3")
    check(r and r.get("code") == 100404, f"unknown track: 100404 ({r})")
    r = track(plat, "L9", "video-1", "pause", "tc4")
    check(r and r.get("code") == 100404, f"unknown leg: 100404 ({r})")
    r = track(plat, "L1", "video-1", "mute", "tc5")
    check(r and r.get("code") == 100400, f"another operation: 100400 ({r})")
    r = track(plat, "L1", "video-1", "pause", "tc6", rev=7)
    check(r and r.get("code") == 100404, f"another mediaRevision: 100404 ({r})")
    check(grows(host, "L1", 1.0), "refused trackControls paused nothing")

    # ---- malformed and oversized: dropped, the camera answers after ----
    for bad in (b"{not json", b"", b"[1,2,3]", b'{"method":"trackControl","msgToken":"x","msgToken":"y"}',
                b"{" * 200, json.dumps({"method": "invite", "msgToken": "big", "sessionId": "L5",
                                        "params": {"cameraId": "cam-1", "mediaRevision": 1,
                                                   "tracks": [VIDEO], "pad": "x" * 70000}}).encode(),
                json.dumps({"method": "invite", "msgToken": "m1", "sessionId": "L5",
                            "params": {"cameraId": "cam-1", "mediaRevision": 0, "tracks": [VIDEO]}}).encode(),
                json.dumps({"method": "invite", "msgToken": "m2", "sessionId": "x" * 200,
                            "params": {"cameraId": "cam-1", "mediaRevision": 1, "tracks": [VIDEO]}}).encode(),
                json.dumps({"method": "invite", "msgToken": "m3", "sessionId": "L5",
                            "params": {"cameraId": "cam-1", "mediaRevision": 1, "tracks": [VIDEO] * 5}}).encode(),
                json.dumps({"method": "hello", "msgToken": "h1", "sessionId": "L1"}).encode()):
        plat.send(bad)
    r = track(plat, "L1", "video-1", "resume", "tc7")
    check(r and r.get("code") == 200, f"after malformed messages the camera still answers ({r})")
    err = cam.stderr()
    check("malformed message" in err and "dropped a message of" in err and 'unknown method "hello"' in err,
          "malformed, oversized and unknown messages were logged as dropped")
    check(plat.session("mediaOffer", "L5", 0.5) is None and plat.session("bye", "L5", 0.1) is None,
          "no offer and no bye for the malformed invites")
    check(cam.proc.poll() is None and grows(host, "L1", 1.0), "L1 streams on")

    # ---- a second invite (video + mic) replaces the first ----
    invite(plat, "L2", 1, [VIDEO, MIC])
    off2 = plat.session("mediaOffer", "L2", 15)
    check(off2 is not None, "invite L2 -> mediaOffer for L2")
    off2 = off2 or {"params": {"webrtc": {"sdp": ""}}, "msgToken": ""}
    sdp2 = off2["params"]["webrtc"].get("sdp", "")
    check("m=video " in sdp2 and "m=audio " in sdp2 and "opus/48000" in sdp2.lower(),
          "with mic: an Opus audio track is offered beside video")
    check(direction(sdp2, "audio") == [["a=sendonly"]] and direction(sdp2, "video") == [["a=sendonly"]],
          f"mic without speaker: audio and video sendonly ({direction(sdp2, 'audio')}, {direction(sdp2, 'video')})")
    ok, ab = stalls(host, "L1", settle=0.3)
    check(ok, f"L1's peer is gone: its RTP stopped ({ab})")
    if answer(plat, host, off2, "L2", 1):
        check(host.event("L2", "first-packet", 10), "L2: media reaches the media core")
    st = plat.wait(lambda t, m: t == UP_S and m.get("method") == "mediaState" and m.get("sessionId") == "L2" and
                   m.get("params", {}).get("state") == "connected", 10)
    check(st is not None, "L2: mediaState connected reported")
    r = track(plat, "L2", "mic", "pause", "tc8")
    check(r and r.get("code") == 200, f"pause mic: 200 ({r})")
    r = track(plat, "L1", "video-1", "pause", "tc9")
    check(r and r.get("code") == 100404, f"the replaced leg L1 is unknown now ({r})")

    # ---- a reply for another leg/revision ends the leg ----
    # (checked below with L4; first bye)
    plat.send({"method": "bye", "msgToken": "b1", "sessionId": "L2", "params": {"reason": "userHangup"}})
    r = plat.wait(lambda t, m: t == UP_S and m.get("method") == "byeReply" and m.get("msgToken") == "b1", 5)
    check(r and r.get("code") == 200 and r.get("sessionId") == "L2", f"bye L2 -> byeReply 200 ({r})")
    ok, ab = stalls(host, "L2", settle=0.3)
    check(ok, f"after bye: L2's media stopped ({ab})")
    plat.send({"method": "bye", "msgToken": "b2", "sessionId": "L2", "params": {"reason": "userHangup"}})
    r = plat.wait(lambda t, m: t == UP_S and m.get("method") == "byeReply" and m.get("msgToken") == "b2", 5)
    check(r and r.get("code") == 200, f"bye again (no active leg): byeReply 200 ({r})")

    # ---- talk: the speaker track (what the platform sends, the camera plays) ----
    invite(plat, "T1", 1, [VIDEO, MIC, SPEAKER])
    offt = plat.session("mediaOffer", "T1", 15)
    check(offt is not None, "invite T1 (video + mic + speaker) -> mediaOffer")
    offt = offt or {"params": {"webrtc": {"sdp": ""}}, "msgToken": ""}
    sdpt = offt["params"]["webrtc"].get("sdp", "")
    check(direction(sdpt, "audio") == [["a=sendrecv"]] and direction(sdpt, "video") == [["a=sendonly"]],
          f"mic + speaker: one audio m-line, a=sendrecv; video sendonly ({direction(sdpt, 'audio')})")
    check(any("opus/48000/2" in ln.lower() for sec in sections(sdpt, "audio") for ln in sec), "mic + speaker: Opus")
    if answer(plat, host, offt, "T1", 1):
        check(host.event("T1", "first-packet", 10), "T1: the camera's media reaches the media core")
    st = plat.wait(lambda t, m: t == UP_S and m.get("method") == "mediaState" and m.get("sessionId") == "T1" and
                   m.get("params", {}).get("state") == "connected", 10)
    check(st is not None, "T1: mediaState connected reported")
    r = track(plat, "T1", "speaker", "pause", "tc20")
    check(r and r.get("code") == 200, f"pause speaker: 200 ({r})")
    r = track(plat, "T1", "speaker", "resume", "tc21")
    check(r and r.get("code") == 200, f"resume speaker: 200 ({r})")
    invite(plat, "T2", 1, [VIDEO, SPEAKER])
    offt2 = plat.session("mediaOffer", "T2", 15)
    sdpt2 = (offt2 or {"params": {"webrtc": {}}})["params"]["webrtc"].get("sdp", "")
    check(offt2 is not None and direction(sdpt2, "audio") == [["a=recvonly"]] and
          direction(sdpt2, "video") == [["a=sendonly"]] and
          any("opus/48000/2" in ln.lower() for sec in sections(sdpt2, "audio") for ln in sec),
          f"invite T2 (video + speaker, no mic): the Opus audio m-line is a=recvonly ({direction(sdpt2, 'audio')})")
    invite(plat, "T3", 1, [SPEAKER])
    offt3 = plat.session("mediaOffer", "T3", 15)
    sdpt3 = (offt3 or {"params": {"webrtc": {}}})["params"]["webrtc"].get("sdp", "")
    check(offt3 is not None and direction(sdpt3, "audio") == [["a=recvonly"]] and not sections(sdpt3, "video"),
          f"invite T3 (speaker alone): one recvonly audio m-line, no video ({direction(sdpt3, 'audio')})")
    plat.send({"method": "bye", "msgToken": "b3", "sessionId": "T3", "params": {"reason": "userHangup"}})
    r = plat.wait(lambda t, m: t == UP_S and m.get("method") == "byeReply" and m.get("msgToken") == "b3", 5)
    check(r and r.get("code") == 200, f"bye T3 -> byeReply 200 ({r})")
    for leg, tracks, why in (("T4", [VIDEO, MIC, dict(MIC, trackId="mic-2")], "two sending audio tracks"),
                             ("T5", [VIDEO, SPEAKER, SPEAKER], "two speaker tracks")):
        invite(plat, leg, 1, tracks)
        b = plat.session("bye", leg, 5)
        check(b and b.get("params", {}).get("reason") == "cameraDeclined", f"{why}: bye cameraDeclined ({b})")
        check(plat.session("mediaOffer", leg, 0.5) is None and why in cam.stderr(), f"{why}: no offer, logged why")

    # ---- declined invites ----
    invite(plat, "L3", 1, [VIDEO], camera="cam-9")
    b = plat.session("bye", "L3", 5)
    check(b and b.get("params", {}).get("reason") == "cameraDeclined", f"unknown cameraId: bye cameraDeclined ({b})")
    invite(plat, "L3b", 1, [{"trackId": "v", "kind": "video", "codec": "VP8"}])
    b = plat.session("bye", "L3b", 5)
    check(b and b.get("params", {}).get("reason") == "cameraDeclined", f"unknown codec: bye cameraDeclined ({b})")
    check(plat.session("mediaOffer", None, 0.5) is None, "no offer for a declined invite")

    # ---- an answer for another revision ends the leg ----
    invite(plat, "L4", 2, [VIDEO])
    off4 = plat.session("mediaOffer", "L4", 15)
    check(off4 is not None and off4["params"].get("mediaRevision") == 2, "invite L4 revision 2 -> mediaOffer revision 2")
    if off4:
        plat.send({"code": 200, "method": "mediaOfferReply", "msgToken": off4["msgToken"],
                   "data": {"sessionId": "L4", "mediaRevision": 1, "webrtc": {"iceMode": "lite", "sdp": "v=0"}}})
        r = track(plat, "L4", "video-1", "pause", "tc10", rev=2)
        check(r and r.get("code") == 100404, f"an answer for another revision ended the leg ({r})")
    invite(plat, "L6", 1, [VIDEO])
    off6 = plat.session("mediaOffer", "L6", 15)
    if check(off6 is not None, "invite L6 -> mediaOffer"):
        plat.send({"code": 100500, "method": "mediaOfferReply", "msgToken": off6["msgToken"], "msg": "no"})
        r = track(plat, "L6", "video-1", "pause", "tc11")
        check(r and r.get("code") == 100404, f"a refused offer ended the leg ({r})")

    # ---- the broker restarts: the camera reconnects and reports again ----
    broker.stop()
    plat.client.close()
    time.sleep(0.5)
    broker.start()
    t0 = time.time()
    plat.connect()
    cap2 = plat.wait(lambda t, m: t == UP_C, 10 - (time.time() - t0))
    check(cap2 is not None and cap2.get("msgToken") != cap.get("msgToken") and
          cap2.get("params", {}).get("cameras", [{}])[0].get("cameraId") == "cam-1",
          f"after a broker restart the camera reports its capability again within 10 s ({time.time() - t0:.1f} s)")
    if cap2:  # answered: the camera stops sending it
        plat.send({"code": 200, "method": "reportReply", "msgToken": cap2.get("msgToken")}, DOWN_C)

    # ---- after the restart: a leg works; SIGTERM says bye and exits 0 ----
    invite(plat, "L7", 1, [VIDEO])
    off7 = plat.session("mediaOffer", "L7", 15)
    check(off7 is not None, "after the restart: invite L7 -> mediaOffer (re-subscribed)")
    if off7 and answer(plat, host, off7, "L7", 1):
        check(host.event("L7", "first-packet", 10), "L7: media reaches the media core")
    cam.proc.send_signal(signal.SIGTERM)
    try:
        code = cam.proc.wait(10)
    except subprocess.TimeoutExpired:
        code = "hung"
    check(code == 0, f"SIGTERM: exit 0 ({code})")
    b = plat.session("bye", "L7", 5)
    check(b and b.get("params", {}).get("reason") == "cameraShutdown", f"SIGTERM: bye for the active leg ({b})")
    check("connection lost" in cam.stderr(), "the camera logged the lost connection")

    # ---- --device-file and --no-mic ----
    devfile = os.path.join(DIR, "demo.json")
    with open(devfile, "w") as f:
        json.dump({"baseUrl": "http://x", "device": {"productID": P, "deviceName": D, "secret": SECRET,
                                                     "model": {"properties": [{"a": [1, {"b": None}]}]}},
                   "mqtt": {"host": "127.0.0.1", "port": PORT}, "camera": {"cameraId": "cam-7"}}, f)
    cam2 = Camera(["--device-file", devfile, "--no-mic", "--no-speaker"], "cam2")
    cams.append(cam2)
    cap3 = plat.wait(lambda t, m: t == UP_C, 15)
    p3 = (cap3 or {}).get("params", {})
    check(p3.get("microphone") is False and p3.get("cameras", [{}])[0].get("cameraId") == "cam-7",
          f"--device-file --no-mic: camera cam-7 from the file, microphone false ({p3})")
    if cap3:
        plat.send({"code": 200, "method": "reportReply", "msgToken": cap3.get("msgToken")}, DOWN_C)
    invite(plat, "L8", 1, [VIDEO, MIC], camera="cam-7")
    b = plat.session("bye", "L8", 5)
    check(b and b.get("params", {}).get("reason") == "cameraDeclined", f"--no-mic: a mic track is declined ({b})")
    check(plat.session("mediaOffer", "L8", 0.5) is None, "--no-mic: no offer for it")
    check(p3.get("speaker") is False, f"--no-speaker: capability speaker false ({p3})")
    invite(plat, "L9", 1, [VIDEO, SPEAKER], camera="cam-7")
    b = plat.session("bye", "L9", 5)
    check(b and b.get("params", {}).get("reason") == "cameraDeclined", f"--no-speaker: a speaker track is declined ({b})")
    check(plat.session("mediaOffer", "L9", 0.5) is None and "no speaker (--no-speaker)" in cam2.stderr(),
          "--no-speaker: no offer for it, logged why")
    cam2.proc.send_signal(signal.SIGINT)
    try:
        code = cam2.proc.wait(10)
    except subprocess.TimeoutExpired:
        code = "hung"
    check(code == 0, f"SIGINT without a leg: exit 0 ({code})")


# ---- recordings (issue 17): --record-dir, the catalog report, playback legs ----
VIDEO_1 = {"trackId": "video-1", "kind": "video", "codec": "H264"}
AUDIO_1 = {"trackId": "audio-1", "kind": "audio", "codec": "opus"}


def report(plat, timeout):
    """The next recording report the camera sent."""
    return plat.wait(lambda t, m: t == UP_R, timeout)


def report_reply(plat, rep, code=200, msg=None):
    body = {"code": code, "method": "reportReply", "msgToken": rep["msgToken"]}
    if code == 200:
        body["data"] = {"stored": len(rep["params"].get("recordings", [])),
                        "removed": len(rep["params"].get("removed", [])), "stale": 0}
    else:
        body["msg"] = msg or "impossible entry"
    plat.send(body, DOWN_R)


def playback(plat, leg, op, token, rev=1, pos=None):
    prm = {"operation": op, "mediaRevision": rev}
    if pos is not None:
        prm["positionMs"] = pos
    plat.send({"method": "playbackControl", "msgToken": token, "sessionId": leg, "params": prm})
    return plat.wait(lambda t, m: t == UP_S and m.get("method") == "playbackControlReply" and
                     m.get("msgToken") == token, 10)


def invite_rec(plat, leg, rec_id, version=1, tracks=None, rev=1):
    plat.send({"method": "invite", "msgToken": f"inv-{leg}-{rev}", "sessionId": leg,
               "params": {"cameraId": "cam-1", "mediaRevision": rev, "tracks": tracks or [VIDEO_1, AUDIO_1],
                          "recording": {"recordingId": rec_id, "recordingVersion": version}}})


def freshest(plat, timeout):
    """The newest recording reported so far (all pending reports answered),
    else the next one: retention (6 s) may have taken older ones."""
    plat.drain(0.2)
    best = None
    while True:
        rep = plat.wait(lambda t, m: t == UP_R, 0)
        if not rep:
            break
        report_reply(plat, rep)
        for e in rep["params"].get("recordings", []):
            if not best or e["startTimeMs"] > best["startTimeMs"]:
                best = e
    if best and best["endTimeMs"] / 1000 > time.time() - 3:
        return best
    rep = plat.wait(lambda t, m: t == UP_R and m["params"].get("recordings"), timeout)
    if not rep:
        return None
    report_reply(plat, rep)
    return rep["params"]["recordings"][-1]


def silence_after(host, leg, t0, limit=2.0):
    """Seconds from t0 until rtp_in stopped changing (then stable for 250 ms)."""
    last, last_change = rtp_in(host, leg), t0
    while time.time() - last_change < 0.25 and time.time() - t0 < limit:
        time.sleep(0.01)
        n = rtp_in(host, leg)
        if n != last:
            last, last_change = n, time.time()
    return last_change - t0


def run_recordings(broker, plat, host, cams):
    recdir = os.path.join(DIR, "rec")
    os.makedirs(recdir, exist_ok=True)
    # What an earlier run left: an old recording (retention removes it at
    # start and reports it), a segment cut short (no sidecar: deleted), and
    # another camera's file (left alone).
    now = int(time.time() * 1000)
    old = f"rec-cam-1-{now - 600000}"
    with open(os.path.join(recdir, old + ".mkv"), "wb") as f:
        f.write(b"\x1a\x45\xdf\xa3")
    with open(os.path.join(recdir, old + ".json"), "w") as f:
        json.dump({"recordingId": old, "startTimeMs": now - 600000, "endTimeMs": now - 598000, "durationMs": 2000,
                   "recordingVersion": 1, "audio": True}, f)
    cut = os.path.join(recdir, f"rec-cam-1-{now - 1000}.mkv")
    other = os.path.join(recdir, f"rec-cam-2-{now - 600000}.mkv")
    for path in (cut, other):
        with open(path, "wb") as f:
            f.write(b"\x1a\x45\xdf\xa3")

    r = subprocess.run([VCAM, "--record-dir", recdir], capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "need --mqtt" in r.stderr, f"--record-dir without a device: exit 2 ({r.returncode})")
    r = subprocess.run([VCAM, "--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", D, "--secret", SECRET,
                        "--record-dir", recdir, "--camera-id", "a/b"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "vcam: error: " in r.stderr, f"--record-dir with a camera id unfit for files: exit 2 ({r.returncode})")

    while plat.wait(lambda t, m: t == UP_C, 0):  # earlier cameras' reports: not this one's
        pass
    cam = Camera(["--mqtt", f"127.0.0.1:{PORT}", "--product", P, "--device", D, "--secret", SECRET,
                  "--record-dir", recdir, "--segment-ms", "2000", "--retain-s", "6"], "cam3")
    cams.append(cam)
    cap = plat.wait(lambda t, m: t == UP_C, 15)
    check(cap and cap["params"].get("maxUpstreams") == 4, f"recording: capability maxUpstreams 4 ({(cap or {}).get('params')})")
    plat.send({"code": 200, "method": "reportReply", "msgToken": (cap or {}).get("msgToken")}, DOWN_C)
    check(not os.path.exists(cut) and os.path.exists(other),
          "at start: a segment without its sidecar is deleted, another camera's file is left alone")
    check(not os.path.exists(os.path.join(recdir, old + ".mkv")) and
          not os.path.exists(os.path.join(recdir, old + ".json")), "at start: the expired recording's files are gone")
    first = report(plat, 5)
    check(first and first.get("method") == "report" and first["params"].get("removed") == [old] and
          "recordings" not in first["params"],
          f"on connecting: the removal made at start is reported ({first})")
    if first:
        report_reply(plat, first, 100400, "impossible entry")  # not retried, even after a reconnection

    # ---- closed segments are reported at once, well-formed ----
    seen, removed, unanswered_removal, resent_removal = {}, [], None, False
    refused_rec = None
    deadline = time.time() + 20
    while time.time() < deadline and (len(seen) < 3 or not removed or not resent_removal):
        rep = report(plat, max(0.1, deadline - time.time()))
        if not rep:
            break
        prm = rep.get("params", {})
        for e in prm.get("recordings", []):
            seen[e["recordingId"]] = e  # again when the whole catalog goes again
        if prm.get("removed"):
            removed += prm["removed"]
            if unanswered_removal is None:
                unanswered_removal = prm["removed"]  # never answered: sent again while connected and after
                continue
            if set(unanswered_removal) <= set(prm["removed"]):
                resent_removal = True
                continue
        if refused_rec is None and prm.get("recordings"):
            refused_rec = rep
            report_reply(plat, rep, 100400)
        else:
            report_reply(plat, rep)
    check(len(seen) >= 3, f"closed segments reported ({len(seen)})")
    check(resent_removal, f"an unanswered report goes again while connected, the whole catalog with it ({unanswered_removal})")
    ok = True
    for rid, e in seen.items():
        ok &= check(e.get("cameraId") == "cam-1" and rid == f"rec-cam-1-{e.get('startTimeMs')}" and len(rid) <= 64 and
                    e["endTimeMs"] > e["startTimeMs"] and 0 < e["durationMs"] <= e["endTimeMs"] - e["startTimeMs"] and
                    abs(e["durationMs"] - 2000) <= 300 and e.get("available") is True and e.get("videoCodec") == "H264" and
                    e.get("audioCodec") == "opus" and e.get("recordingVersion") == 1,
                    f"a well-formed entry: {e}")
    starts = sorted(e["startTimeMs"] for e in seen.values())
    check(all(b - a >= 1900 for a, b in zip(starts, starts[1:])) and abs(starts[-1] / 1000 - time.time()) < 10,
          f"segments follow each other, on the wall clock ({starts})")
    sizes = [os.path.getsize(os.path.join(recdir, rid + ".mkv")) for rid in seen if rid not in removed]
    check(sizes and all(s > 10000 for s in sizes), f"the kept recordings' files exist ({sizes} bytes)")
    log(f"segment sizes (2 s, 320x240@15 H264 + Opus): {sizes} bytes")
    check(removed and set(removed) <= set(seen) and min(seen, key=lambda i: seen[i]["startTimeMs"]) in removed,
          f"retention (6 s): the oldest is reported removed ({removed})")
    check(all(not os.path.exists(os.path.join(recdir, rid + ".mkv")) and
              not os.path.exists(os.path.join(recdir, rid + ".json")) for rid in removed),
          "retention: the removed recordings' files are gone")
    time.sleep(0.3)
    err = cam.stderr()
    check("refused: code 100400" in err and first and f"recording report {first['msgToken']} refused" in err,
          "a 100400 reply is logged")
    check(refused_rec is not None and err.count(refused_rec["msgToken"] + " sent") == 1 and
          "code 200" in err, "a refused report is not retried; 200 replies logged")

    # ---- a reconnection resends the list and the unacknowledged removals ----
    broker.stop()
    plat.client.close()
    time.sleep(0.5)
    broker.start()
    plat.connect()
    cap = plat.wait(lambda t, m: t == UP_C, 15)
    check(cap is not None, "recording camera reconnected")
    kept = {e.split(".")[0] for e in os.listdir(recdir) if e.startswith("rec-cam-1-") and e.endswith(".json")}
    listed, again = set(), []
    deadline = time.time() + 5
    while time.time() < deadline:
        rep = report(plat, max(0.1, deadline - time.time()))
        if not rep:
            break
        report_reply(plat, rep)
        listed |= {e["recordingId"] for e in rep["params"].get("recordings", [])}
        again += rep["params"].get("removed", [])
        if kept <= listed and again:
            break
    check(kept and kept <= listed, f"after a reconnection the whole list is sent again ({sorted(kept - listed)} missing)")
    check(unanswered_removal and set(unanswered_removal) <= set(again) and old not in again,
          f"...with the removals not acknowledged, not the refused one ({again}, {unanswered_removal})")

    # ---- playback ----
    newest = freshest(plat, 5)
    check(newest, "a fresh recording for playback")
    newest = newest or {"recordingId": "none", "durationMs": 2000}
    rid = newest["recordingId"]

    invite_rec(plat, "R0", "rec-cam-1-1")
    b = plat.session("bye", "R0", 5)
    check(b and b["params"].get("reason") == "recordingUnavailable", f"unknown recording: bye recordingUnavailable ({b})")
    invite_rec(plat, "R00", rid, version=2)
    b = plat.session("bye", "R00", 5)
    check(b and b["params"].get("reason") == "recordingChanged", f"another recordingVersion: bye recordingChanged ({b})")
    check(plat.session("mediaOffer", None, 0.3) is None, "no offer for those")

    invite_rec(plat, "R1", rid)
    off = plat.session("mediaOffer", "R1", 15)
    check(off is not None, "playback invite -> mediaOffer (the recording loaded)")
    off = off or {"params": {"webrtc": {"sdp": ""}}, "msgToken": ""}
    sdp = off["params"]["webrtc"].get("sdp", "")
    check(direction(sdp, "video") == [["a=sendonly"]] and direction(sdp, "audio") == [["a=sendonly"]] and
          any("h264/90000" in ln.lower() for sec in sections(sdp, "video") for ln in sec) and
          any("opus/48000" in ln.lower() for sec in sections(sdp, "audio") for ln in sec) and
          "a=group:BUNDLE" in sdp and "a=candidate:" in sdp,
          f"playback offer: sendonly H264 + Opus, bundled, complete ({direction(sdp, 'video')} {direction(sdp, 'audio')})")
    if answer(plat, host, off, "R1", 1):
        check(host.event("R1", "dtls-connected", 10), "R1: ICE and DTLS connect while loaded")
        time.sleep(1.0)
        n0 = rtp_in(host, "R1")
        check(n0 == 0 and not host.event("R1", "first-packet", 0.1), f"R1: no RTP packet before play ({n0})")
        log(f"packets before play: {n0}")
        r = playback(plat, "R1", "play", "pb1")
        check(r and r.get("code") == 200 and r.get("sessionId") == "R1" and r.get("data", {}).get("state") == "playing" and
              0 <= r["data"].get("positionMs", -1) <= 300, f"play: playbackControlReply 200 playing near 0 ({r})")
        check(host.event("R1", "first-packet", 3) and grows(host, "R1", 1.0), "play: RTP arrives")
        time.sleep(0.3)
        # The request goes, the counter is watched at once, the reply read after.
        t0 = time.time()
        plat.send({"method": "playbackControl", "msgToken": "pb2", "sessionId": "R1",
                   "params": {"operation": "pause", "mediaRevision": 1}})
        t_silent = silence_after(host, "R1", t0)
        r = plat.wait(lambda t, m: t == UP_S and m.get("method") == "playbackControlReply" and
                      m.get("msgToken") == "pb2", 10)
        check(r and r.get("code") == 200 and r["data"].get("state") == "paused", f"pause: reply paused ({r})")
        check(t_silent <= 0.3, f"pause: packets stop within 300 ms ({t_silent * 1000:.0f} ms)")
        log(f"pause to silence: {t_silent * 1000:.0f} ms after the request (the counter polled every ~10 ms)")
        ok, ab = stalls(host, "R1", settle=0.1, over=0.7)
        check(ok, f"paused: no RTP ({ab})")
        r = playback(plat, "R1", "seek", "pb3", pos=1000)
        pos = (r or {}).get("data", {}).get("positionMs", -1)
        check(r and r.get("code") == 200 and r["data"].get("state") == "paused" and abs(pos - 1000) < 1000,
              f"seek 1000 while paused: reply near 1000 (within the key interval), still paused ({r})")
        log(f"seek 1000 landed at {pos} ms")
        ok, ab = stalls(host, "R1", settle=0.1, over=0.5)
        check(ok, f"seek kept the pause: no RTP ({ab})")
        r = playback(plat, "R1", "seek", "pb4", pos=newest["durationMs"] + 1)
        check(r and r.get("code") == 100400 and r.get("msg"), f"seek beyond the duration: 100400 ({r})")
        r = playback(plat, "R1", "rewind", "pb5")
        check(r and r.get("code") == 100400 and r.get("msg"), f"another operation: 100400 ({r})")
        r = playback(plat, "R1", "play", "pb6", rev=9)
        check(r and r.get("code") == 100404, f"another mediaRevision: 100404 ({r})")
        r = playback(plat, "R9", "play", "pb7")
        check(r and r.get("code") == 100404, f"unknown leg: 100404 ({r})")
        r = playback(plat, "R1", "play", "pb8")
        check(r and r.get("code") == 200 and r["data"].get("state") == "playing", f"play again: 200 playing ({r})")
        check(grows(host, "R1", 1.0), "playing again: RTP arrives")
        b = plat.session("bye", "R1", 5)
        check(b and b["params"].get("reason") == "recordingEnded", f"played to its end: bye recordingEnded ({b})")
        ok, ab = stalls(host, "R1", settle=0.3, over=0.5)
        check(ok, f"after the end: no RTP ({ab})")
        r = playback(plat, "R1", "play", "pb9")
        check(r and r.get("code") == 100404, f"the ended leg is unknown ({r})")

    # ---- a live leg and a playback leg at once ----
    fresh = freshest(plat, 5)
    if check(fresh, "another fresh recording"):
        rid = fresh["recordingId"]
    invite(plat, "L10", 1, [VIDEO, MIC])
    offl = plat.session("mediaOffer", "L10", 15)
    invite_rec(plat, "R2", rid, tracks=[VIDEO_1])
    offp = plat.session("mediaOffer", "R2", 15)
    check(offl is not None and offp is not None, "a live and a playback invite: both offered")
    offp_sdp = (offp or {"params": {"webrtc": {}}})["params"]["webrtc"].get("sdp", "")
    check(sections(offp_sdp, "video") and not sections(offp_sdp, "audio"), "playback without audio-1: video only")
    if offl and offp and answer(plat, host, offl, "L10", 1) and answer(plat, host, offp, "R2", 1):
        check(host.event("L10", "first-packet", 10), "L10: live media beside a playback leg")
        check(host.event("R2", "dtls-connected", 10) and rtp_in(host, "R2") == 0, "R2: connected, silent before play")
        r = playback(plat, "R2", "play", "pb10")
        check(r and r.get("code") == 200 and host.event("R2", "first-packet", 3), f"R2: plays beside the live leg ({r})")
        check(grows(host, "L10", 1.0), "L10 streams on while R2 plays")
        r = track(plat, "L10", "video-1", "pause", "tc30")
        check(r and r.get("code") == 200, f"trackControl on the live leg beside a playback leg ({r})")
        plat.send({"method": "bye", "msgToken": "b10", "sessionId": "R2", "params": {"reason": "userHangup"}})
        r = plat.wait(lambda t, m: t == UP_S and m.get("method") == "byeReply" and m.get("msgToken") == "b10", 5)
        check(r and r.get("code") == 200, f"bye R2: byeReply ({r})")
        check(stalls(host, "R2", settle=0.3, over=0.5)[0], "after bye: R2 silent")
        r = track(plat, "L10", "video-1", "resume", "tc31")
        check(r and r.get("code") == 200 and grows(host, "L10", 1.0), "the live leg goes on after the playback leg's bye")

    cam.proc.send_signal(signal.SIGTERM)
    try:
        code = cam.proc.wait(10)
    except subprocess.TimeoutExpired:
        code = "hung"
    check(code == 0, f"recording camera: SIGTERM exit 0 ({code})")
    b = plat.session("bye", "L10", 5)
    check(b and b["params"].get("reason") == "cameraShutdown", f"SIGTERM: bye for the live leg ({b})")
    err = cam.stderr()
    check("ERROR: AddressSanitizer" not in err and "runtime error" not in err, "no sanitizer report")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any surprise is a failure with its trace
        import traceback
        traceback.print_exc()
        check(False, f"unexpected: {e!r}")
    if failures:
        print(f"vcam mqtt: {checks} checks, {failures} failures")
        sys.exit(1)
    print(f"vcam mqtt: {checks} checks passed")
