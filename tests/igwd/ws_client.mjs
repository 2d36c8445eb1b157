// ws_client.mjs - drives tests/igwd/ws_test.c with the npm `ws` client
// (installed by ws_test.sh; WS_MODULE_DIR is the directory holding its
// node_modules).
//
//   node ws_client.mjs suite HOST:PORT PING_MS CLOSE_MS   the checks
//   node ws_client.mjs victim URL [COMMAND]               a client that connects,
//       sends COMMAND, prints "ready" and idles (killed or stopped by the suite)
//
// Prints "ws_client: N checks, F failures"; exits 1 on any failure.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import crypto from 'node:crypto';

const require = createRequire(`${process.env.WS_MODULE_DIR || '.'}/ws-client.cjs`);
const WebSocket = require('ws');

const [, self, mode, ...args] = process.argv;

if (mode === 'victim') {
    const [url, command] = args;
    const ws = new WebSocket(url);
    ws.on('open', () => {
        if (command) ws.send(command);
        process.stdout.write('ready\n');
    });
    ws.on('error', () => {});
    ws.on('message', () => {});
    setInterval(() => {}, 1 << 30);
} else if (mode === 'suite') {
    await suite(...args);
} else {
    console.error('usage: ws_client.mjs suite HOST:PORT PING_MS CLOSE_MS | victim URL [COMMAND]');
    process.exit(2);
}

async function suite(hostport, pingArg, closeArg) {
    const [host, portStr] = hostport.split(':');
    const port = Number(portStr);
    const PING = Number(pingArg), CLOSE = Number(closeArg);
    const base = `ws://${hostport}`;
    let checks = 0, failures = 0;
    const check = (ok, what, detail) => {
        checks++;
        if (!ok) {
            failures++;
            console.error(`ws_client: FAIL: ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`);
        }
        return ok;
    };
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

    function request(path, { method = 'GET', headers = {} } = {}) {
        return new Promise((resolve, reject) => {
            const req = http.request({ host, port, path, method, headers, agent: false }, (res) => {
                let body = '';
                res.setEncoding('utf8');
                res.on('data', (c) => (body += c));
                res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
            });
            req.on('error', reject);
            req.end();
        });
    }
    const stats = async () => JSON.parse((await request('/stats')).body);
    async function waitFor(pred, ms, what) {
        const t0 = Date.now();
        for (;;) {
            const s = await stats();
            if (pred(s)) return { s, ms: Date.now() - t0 };
            if (Date.now() - t0 > ms) {
                check(false, `timed out: ${what}`, s);
                return { s, ms: Date.now() - t0 };
            }
            await sleep(20);
        }
    }
    // The server released everything of the previous step: no connection,
    // no socket, only the /stats request's own HTTP connection.
    async function settled(what) {
        const { s } = await waitFor((s) => s.open === 0 && s.sockets === 0 && s.conns === 1, 3000, `settled after ${what}`);
        check(s.opened === s.closed, `every connection closed once (${what})`, s);
    }
    const lastClose = (s) => s.log[s.log.length - 1];

    // Opens a WebSocket and records what happens to it.
    function open(path, protocols, options) {
        const ws = new WebSocket(base + path, protocols, options);
        const rec = { ws, msgs: [], pings: 0, pongs: 0, code: null, reason: null, error: null };
        rec.closed = new Promise((resolve) => {
            ws.on('close', (code, reason) => {
                rec.code = code;
                rec.reason = reason.toString();
                resolve(rec);
            });
        });
        ws.on('message', (data, isBinary) => rec.msgs.push(isBinary ? data : data.toString()));
        ws.on('ping', () => rec.pings++);
        ws.on('pong', () => rec.pongs++);
        ws.on('error', (e) => (rec.error = e));
        rec.opened = new Promise((resolve, reject) => {
            ws.once('open', () => resolve(rec));
            ws.once('error', reject);
            ws.once('unexpected-response', (req, res) => reject(new Error(`status ${res.statusCode}`)));
        });
        rec.next = async (n = 1, ms = 5000) => {
            const t0 = Date.now();
            while (rec.msgs.length < n && Date.now() - t0 < ms && rec.code === null) await sleep(2);
            return rec.msgs.length >= n;
        };
        return rec;
    }
    const withTimeout = (p, ms, what) => {
        let timer;
        const late = new Promise((resolve) => {
            timer = setTimeout(() => { check(false, `timed out: ${what}`); resolve(null); }, ms);
        });
        return Promise.race([p, late]).finally(() => clearTimeout(timer));
    };
    const t0 = Date.now();
    const timings = [];

    // -- handshake, echo, fragments, pings --------------------------------------------
    {
        const c = open('/ws/echo');
        await c.opened;
        check(c.ws.readyState === WebSocket.OPEN, 'handshake');
        c.ws.send('hello');
        await c.next(1);
        check(c.msgs[0] === 'hello', 'echo', c.msgs[0]);
        const uni = 'h\u00e9llo \u2713 \u{1F680}';
        c.ws.send(uni);
        await c.next(2);
        check(c.msgs[1] === uni, 'echo of multi-byte UTF-8', c.msgs[1]);
        c.ws.send('hel', { fin: false });
        c.ws.send('lo', { fin: true });
        await c.next(3);
        check(c.msgs[2] === 'hello', 'fragmented message reassembled', c.msgs[2]);
        const exact = 'a'.repeat(4096);
        c.ws.send(exact);
        await c.next(4);
        check(c.msgs[3] === exact, 'a 4096-byte message (the bound) is accepted');
        c.ws.send('');
        await c.next(5);
        check(c.msgs[4] === '', 'empty message echoed');
        c.ws.ping('p');
        const t = Date.now();
        while (c.pongs === 0 && Date.now() - t < 2000) await sleep(5);
        check(c.pongs === 1, 'ping answered with pong');
        const t2 = Date.now();
        while (c.pings === 0 && Date.now() - t2 < PING * 3) await sleep(10);
        check(c.pings >= 1, 'server pings', c.pings);
        c.ws.close(1000, 'done');
        await withTimeout(c.closed, 3000, 'client close');
        check(c.code === 1000, 'client close handshake', c.code);
        const { s } = await waitFor((s) => s.closed >= 1, 2000, 'close seen by the server');
        check(lastClose(s).code === 1000 && lastClose(s).why === 'peer closed', 'server on_close after peer close', lastClose(s));
        await settled('echo');
    }

    // -- subprotocol ---------------------------------------------------------------------
    {
        const c = open('/ws/echo', ['igw.v1']);
        await c.opened;
        check(c.ws.protocol === 'igw.v1', 'subprotocol answered', c.ws.protocol);
        c.ws.close();
        await withTimeout(c.closed, 3000, 'close');
        check(c.code === 1005, 'close without status', c.code);
        await settled('subprotocol');
    }

    // -- pushes: 1000 frames in order, at upgrade and on command -----------------------------
    const checkEvents = (msgs, n, what) => {
        let ok = msgs.length === n;
        for (let i = 0; ok && i < n; i++) {
            const m = JSON.parse(msgs[i]);
            ok = m.type === 'interaction.event' && m.deliveryId === `d${String(i).padStart(6, '0')}` &&
                m.event.seq === i && m.event.text === 'h\u00e9';
            if (!ok) check(false, `${what}: frame ${i}`, msgs[i]);
        }
        check(ok, `${what}: ${n} frames in order`, msgs.length);
    };
    {
        const c = open('/ws/push?n=1000');
        await c.opened;
        await c.next(1000);
        checkEvents(c.msgs, 1000, 'push at upgrade');
        c.msgs.length = 0;
        c.ws.send('push 1000');
        await c.next(1000);
        checkEvents(c.msgs, 1000, 'push on command');
        c.ws.close(1000);
        await withTimeout(c.closed, 3000, 'close');
        await settled('push');
    }
    {   // 50 connections at once, 100 frames each
        const cs = Array.from({ length: 50 }, () => open('/ws/push?n=100'));
        await Promise.all(cs.map((c) => c.opened));
        await Promise.all(cs.map((c) => c.next(100)));
        let ok = true;
        for (const c of cs) ok = ok && c.msgs.length === 100 && JSON.parse(c.msgs[99]).event.seq === 99;
        check(ok, '50 concurrent connections each got their 100 frames');
        cs.forEach((c) => c.ws.close(1000));
        await Promise.all(cs.map((c) => withTimeout(c.closed, 3000, 'close')));
        await settled('concurrent');
    }

    // -- big frames, the send-queue bound, graceful server close ------------------------------
    {
        const c = open('/ws/echo');
        await c.opened;
        c.ws.send(`big ${1 << 20}`);
        await c.next(1, 10000);
        check(typeof c.msgs[0] === 'string' && c.msgs[0].length === 1 << 20 && /^x+$/.test(c.msgs[0]),
            'a 1 MiB frame server to client', c.msgs[0] && c.msgs[0].length);
        c.ws.send(`big ${3 << 20}`); // beyond the 2 MiB queue bound
        await withTimeout(c.closed, 5000, 'close after a refused big frame');
        check(c.code === 1008 && c.reason === 'slow consumer', 'over the queue bound: close 1008', [c.code, c.reason]);
        check(c.msgs.length === 1, 'the refused frame was not sent', c.msgs.length);
        await settled('big');
    }
    {
        const c = open('/ws/echo');
        await c.opened;
        c.ws.send('flood');
        await withTimeout(c.closed, 10000, 'close after a flood');
        const s = await stats();
        check(s.flood === 31, 'flood: 31 frames of 64 KiB (+64 each) fill the 2 MiB queue', s.flood);
        check(c.msgs.length === s.flood && c.msgs.every((m) => m.length === 65536),
            'flood: every queued frame arrives before the close frame', c.msgs.length);
        check(c.code === 1008 && c.reason === 'slow consumer', 'flood: close 1008', [c.code, c.reason]);
        check(lastClose(s).code === 1008 && lastClose(s).why === 'slow consumer', 'flood: server on_close', lastClose(s));
        await settled('flood');
    }
    {
        const c = open('/ws/echo');
        await c.opened;
        c.ws.send('pushclose 100 4000');
        await withTimeout(c.closed, 5000, 'server close');
        checkEvents(c.msgs, 100, 'pushes before a server close');
        check(c.code === 4000 && c.reason === 'bye', 'server close code and reason', [c.code, c.reason]);
        const { s } = await waitFor((s) => s.open === 0, 2000, 'server close done');
        check(lastClose(s).code === 4000 && lastClose(s).why === 'closed', 'server on_close after its close', lastClose(s));
        await settled('server close');
    }

    // -- refused client frames ------------------------------------------------------------------
    const refused = async (what, send, code, why) => {
        const c = open('/ws/echo');
        await c.opened;
        send(c.ws);
        await withTimeout(c.closed, 5000, what);
        check(c.code === code, `${what}: close ${code}`, c.code);
        const { s } = await waitFor((s) => s.open === 0, 3000, `${what} closed`);
        check(lastClose(s).code === code && lastClose(s).why === why, `${what}: server on_close`, lastClose(s));
        await settled(what);
    };
    await refused('binary frame', (ws) => ws.send(Buffer.from([1, 2, 3])), 1003, 'binary message');
    await refused('4097-byte message', (ws) => ws.send('b'.repeat(4097)), 1009, 'message too big');
    await refused('1 MiB message', (ws) => ws.send('b'.repeat(1 << 20)), 1009, 'message too big');
    await refused('fragments over the bound', (ws) => {
        ws.send('c'.repeat(2000), { fin: false });
        ws.send('c'.repeat(2000), { fin: false });
        ws.send('c'.repeat(2000), { fin: true });
    }, 1009, 'message too big');
    await refused('invalid UTF-8', (ws) => ws.send(Buffer.from([0x68, 0xc3, 0x28]), { binary: false }), 1007, 'invalid UTF-8');
    await refused('UTF-8 cut between fragments', (ws) => {
        ws.send(Buffer.from([0x68, 0xe2, 0x82]), { binary: false, fin: false });
        ws.send(Buffer.from([0x41]), { fin: true });
    }, 1007, 'invalid UTF-8');

    // Raw sockets: what the ws client refuses to send.
    const key = crypto.randomBytes(16).toString('base64');
    const handshake = (extra = '') =>
        `GET /ws/echo HTTP/1.1\r\nHost: ${hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`;
    const raw = (bytes) => new Promise((resolve) => {
        const s = net.connect(port, host);
        let buf = Buffer.alloc(0), ended = false, error = null;
        s.on('data', (d) => (buf = Buffer.concat([buf, d])));
        s.on('end', () => (ended = true));
        s.on('error', (e) => (error = e.code));
        s.on('close', () => resolve({ buf, ended, error }));
        s.write(bytes);
        setTimeout(() => s.destroy(), 3000);
    });
    {
        // Unmasked client frame: close 1002, then the server's FIN.
        const r = await raw(Buffer.concat([Buffer.from(handshake()), Buffer.from([0x81, 0x02, 0x68, 0x69])]));
        const head = r.buf.indexOf('\r\n\r\n');
        const text = r.buf.subarray(0, head).toString();
        const expect = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
        check(/^HTTP\/1\.1 101 /.test(text) && text.toLowerCase().includes(`sec-websocket-accept: ${expect.toLowerCase()}`),
            'raw handshake: 101 with the accept key', text);
        const frame = r.buf.subarray(head + 4);
        check(frame.length >= 4 && frame[0] === 0x88 && frame.readUInt16BE(2) === 1002, 'unmasked frame: close 1002',
            [...frame.subarray(0, 4)]);
        check(r.ended, 'unmasked frame: the server closed the connection (FIN)');
        const { s } = await waitFor((s) => s.open === 0, 3000, 'unmasked closed');
        check(lastClose(s).code === 1002 && lastClose(s).why === 'protocol error', 'unmasked frame: server on_close', lastClose(s));
        await settled('unmasked');
    }
    {
        // A 1 MiB frame over the bound, sent in one go: the server stops
        // reading at its header, so most of it is unread when the server is
        // done. Its close must still be a FIN after the close frame, not an
        // RST (which may destroy the close frame on its way).
        const n = 1 << 20;
        const hdr = Buffer.alloc(14);
        hdr[0] = 0x81;
        hdr[1] = 0x80 | 127;
        hdr.writeBigUInt64BE(BigInt(n), 2); // then a zero mask key
        const r = await raw(Buffer.concat([Buffer.from(handshake()), hdr, Buffer.alloc(n, 0x61)]));
        const frame = r.buf.subarray(r.buf.indexOf('\r\n\r\n') + 4);
        check(frame.length >= 4 && frame[0] === 0x88 && frame.readUInt16BE(2) === 1009, 'raw 1 MiB frame: close 1009',
            [...frame.subarray(0, 4)]);
        check(r.ended && r.error === null, 'raw 1 MiB frame: closed with a FIN, not reset', [r.ended, r.error]);
        await settled('raw big frame');
    }
    {
        // A control frame over 125 bytes (masked): a protocol error.
        const payload = Buffer.alloc(126, 0x61);
        const frame = Buffer.concat([Buffer.from([0x89, 0x80 | 126, 0, 126, 0, 0, 0, 0]), payload]);
        await raw(Buffer.concat([Buffer.from(handshake()), frame]));
        const { s } = await waitFor((s) => s.open === 0 && s.closed === s.opened, 3000, 'big ping closed');
        check(lastClose(s).code === 1002 || lastClose(s).code === 1006, 'oversized ping refused', lastClose(s));
        await settled('big ping');
    }
    {
        // A peer that pings (125-byte payloads) and never reads: once the
        // kernel buffers are full, its pongs pile up in the queue until the
        // bound closes it.
        const before = await stats();
        const s = net.connect(port, host);
        s.on('error', () => {});
        s.pause();
        s.write(handshake());
        const ping = Buffer.concat([Buffer.from([0x89, 0x80 | 125, 0, 0, 0, 0]), Buffer.alloc(125, 0x70)]);
        const batch = Buffer.concat(Array(1000).fill(ping));
        for (let i = 0; i < 200; i++) s.write(batch); // 26 MB, buffered by node as needed
        const t = Date.now();
        const { s: st } = await waitFor((st) => st.closed > before.closed, CLOSE + 5000, 'ping flood closed');
        const ms = Date.now() - t;
        s.destroy();
        check(lastClose(st).code === 1008 && ['slow consumer', 'close timeout'].includes(lastClose(st).why),
            'ping flood without reading: closed by the queue bound', lastClose(st));
        timings.push(`ping flood closed after ${ms} ms (${lastClose(st).why})`);
        await settled('ping flood');
    }
    {
        // Client resets the TCP connection right after its handshake.
        const before = await stats();
        await new Promise((resolve) => {
            const s = net.connect(port, host, () => {
                s.write(handshake(), () => s.resetAndDestroy());
            });
            s.on('error', () => {});
            s.on('close', resolve);
        });
        const { s } = await waitFor((s) => s.open === 0 && s.sockets === 0 && s.conns === 1, 3000, 'reset released');
        check(s.closed - before.closed === s.opened - before.opened, 'reset during the handshake: released', s);
        await settled('reset');
    }

    // -- not a handshake: 400 -----------------------------------------------------------------------
    {
        const h = { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' };
        let r = await request('/ws/echo');
        check(r.status === 400, 'plain GET on the path: 400', r.status);
        r = await request('/ws/echo', { headers: { ...h, 'Sec-WebSocket-Version': '8' } });
        check(r.status === 400, 'version 8: 400', r.status);
        const noKey = { ...h };
        delete noKey['Sec-WebSocket-Key'];
        r = await request('/ws/echo', { headers: noKey });
        check(r.status === 400, 'no key: 400', r.status);
        r = await request('/ws/echo', { headers: { ...h, 'Sec-WebSocket-Key': 'short' } });
        check(r.status === 400, 'malformed key: 400', r.status);
        r = await request('/ws/echo', { headers: { ...h, Connection: 'keep-alive' } });
        check(r.status === 400, 'Connection without upgrade: 400', r.status);
        r = await request('/ws/echo', { method: 'POST', headers: h });
        check(r.status === 400, 'POST: 400', r.status);
        await settled('not a handshake');
    }

    // -- vanished clients ------------------------------------------------------------------------------
    const victim = (path, command) => new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [self, 'victim', base + path, ...(command ? [command] : [])],
            { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
        p.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(p); });
        p.on('error', reject);
        p.on('exit', () => reject(new Error('victim exited')));
    });
    const killed = (p) => new Promise((resolve) => { p.on('exit', resolve); p.kill('SIGKILL'); });
    {
        const before = await stats();
        const p = await victim('/ws/echo');
        const t = Date.now();
        await killed(p);
        const { s } = await waitFor((s) => s.closed > before.closed, 2000, 'kill -9 seen');
        const ms = Date.now() - t;
        check(lastClose(s).code === 1006 && lastClose(s).why === 'connection lost', 'kill -9: connection lost', lastClose(s));
        check(ms < 1000, 'kill -9: released at once', ms);
        timings.push(`kill -9 released in ${ms} ms`);
        await settled('kill -9');
    }
    {
        const before = await stats();
        const p = await victim('/ws/echo');
        await sleep(50);
        p.kill('SIGSTOP');
        const t = Date.now();
        const { s } = await waitFor((s) => s.closed > before.closed, 2 * PING + 2000, 'stopped client dropped');
        const ms = Date.now() - t;
        check(lastClose(s).code === 1006 && lastClose(s).why === 'ping timeout', 'stopped client: ping timeout', lastClose(s));
        check(ms <= 2 * PING + 300, 'stopped client: dropped within two ping intervals', ms);
        timings.push(`stopped client dropped after ${ms} ms (ping ${PING} ms)`);
        await killed(p);
        await settled('stopped');
    }
    {
        const before = await stats();
        const p = await victim('/ws/echo', 'flood-slow');
        p.kill('SIGSTOP');
        const t = Date.now();
        const { s } = await waitFor((s) => s.closed > before.closed, CLOSE + 2 * PING + 3000, 'stalled reader dropped');
        const ms = Date.now() - t;
        check(lastClose(s).code === 1008 && lastClose(s).why === 'close timeout',
            'stalled reader: refused by the queue bound, dropped at the close timeout', lastClose(s));
        check(s.flood > 31, 'stalled reader: the kernel buffers filled first', s.flood);
        check(ms <= CLOSE + 1500, 'stalled reader: dropped within the close timeout', ms);
        timings.push(`stalled reader dropped after ${ms} ms (${s.flood} frames of 64 KiB accepted; close timeout ${CLOSE} ms)`);
        await killed(p);
        await settled('stalled');
    }

    // -- a hub destroyed before its connection's 101 went out ---------------------------------------
    {
        const before = await stats();
        const c = open('/ws/orphan');
        await c.opened;
        await withTimeout(c.closed, 5000, 'orphan closes');
        check(c.code === 1001, 'orphaned connection: close 1001 once open', c.code);
        const { s } = await waitFor((s) => s.closed > before.closed, 2000, 'orphan on_close');
        check(lastClose(s).code === 1001 && lastClose(s).why === 'hub destroyed', 'orphan: on_close at the destroy', lastClose(s));
        await settled('orphan');
    }

    // -- shutdown: open connections get 1001, a destroyed hub's are dropped ----------------------------
    {
        const c = open('/ws/echo');
        const d = open('/ws/doomed');
        await c.opened;
        await d.opened;
        const r = await request('/quit');
        check(r.status === 200, '/quit');
        await withTimeout(c.closed, 5000, 'close at shutdown');
        check(c.code === 1001 && c.reason === 'going away', 'shutdown: close 1001', [c.code, c.reason]);
        await withTimeout(d.closed, 5000, 'drop at hub destroy');
        check(d.code === 1006, 'hub destroyed: connection dropped', d.code);
    }

    for (const t of timings) console.log(`ws_client: ${t}`);
    console.log(`ws_client: ${checks} checks, ${failures} failures (${Date.now() - t0} ms)`);
    process.exit(failures ? 1 : 0);
}
