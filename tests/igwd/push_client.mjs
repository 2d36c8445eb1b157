// push_client.mjs - a client of events_push, built on the npm package `ws`
// (found in WS_NODE_DIR).
//
//   push_client.mjs URL TOKEN SECONDS
//   push_client.mjs --subprotocol URL TOKEN SECONDS
//       Connects with the login token (in Authorization, or as a browser
//       does: subprotocols igw.v1 + igw.bearer.<token>) and prints each
//       received frame as one line of JSON; "OPEN" once open, "HTTP <status>"
//       when refused, "CLOSE <code>" on close; exits after SECONDS.
//
//   push_client.mjs --check-subprotocol URL TOKEN OTHER KEYFILE LOGFILE
//       Checks the subprotocol login against the header login. URL: an
//       endpoint of TOKEN's user that has pending deliveries; OTHER: a valid
//       token of a user of the same enterprise who does not own it; KEYFILE:
//       the login key (to sign tokens here, independently of igw); LOGFILE:
//       igwd's stderr, where its access log goes. Prints
//       "push subprotocol: N checks passed", or a FAIL line and exits 1.
import { createHmac } from 'crypto';
import { readFileSync } from 'fs';
import { createRequire } from 'module';
import net from 'net';
import http from 'http';

const require = createRequire(process.env.WS_NODE_DIR + '/package.json');
const WebSocket = require('ws');

const V1 = 'igw.v1';
const BEARER = 'igw.bearer.';

function listen(url, token, seconds, subprotocol) {
    const ws = subprotocol ? new WebSocket(url, [V1, BEARER + token])
                           : new WebSocket(url, { headers: { authorization: 'Bearer ' + token } });
    ws.on('unexpected-response', (req, res) => { console.log('HTTP ' + res.statusCode); process.exit(0); });
    ws.on('open', () => console.log('OPEN'));
    ws.on('message', (data) => console.log(data.toString()));
    ws.on('close', (code) => { console.log('CLOSE ' + code); process.exit(0); });
    ws.on('error', (e) => { console.log('ERROR ' + e.message); process.exit(0); });
    setTimeout(() => { ws.close(1000); }, Number(seconds) * 1000);
}

// ---- checks -----------------------------------------------------------------------------------

let passed = 0;
function fail(msg) {
    console.log('push subprotocol: FAIL: ' + msg);
    process.exit(1);
}
function check(cond, msg) {
    if (!cond) fail(msg);
    passed++;
}

// One handshake: {status, body} when refused, else {protocol, frames, responseHeaders} after
// `settleMs` of listening (then closed).
function attempt(url, { protocols, token, settleMs = 800 } = {}) {
    return new Promise((resolve) => {
        const opts = token === undefined ? {} : { headers: { authorization: 'Bearer ' + token } };
        const ws = protocols ? new WebSocket(url, protocols, opts) : new WebSocket(url, opts);
        const frames = [];
        let done = false, headers = null;
        const finish = (r) => { if (!done) { done = true; resolve(r); } };
        ws.on('upgrade', (res) => { headers = res.headers; });
        ws.on('unexpected-response', (req, res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { body += d; });
            res.on('end', () => { finish({ status: res.statusCode, body }); ws.terminate(); });
        });
        ws.on('message', (d) => frames.push(d.toString()));
        ws.on('open', () => setTimeout(() => {
            finish({ status: 101, protocol: ws.protocol, frames, headers });
            ws.close(1000);
        }, settleMs));
        ws.on('error', (e) => finish({ error: e.message }));
    });
}

// A raw handshake offering the subprotocols on several header lines (as an intermediary may
// send them): the status line and the response head.
function rawHandshake(url, protocolLines) {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
        const s = net.connect(Number(u.port), u.hostname, () => {
            s.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
                    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
                    protocolLines.map((p) => `Sec-WebSocket-Protocol: ${p}\r\n`).join('') + '\r\n');
        });
        let buf = '';
        s.setEncoding('latin1');
        s.on('data', (d) => {
            buf += d;
            const end = buf.indexOf('\r\n\r\n');
            if (end >= 0) { s.destroy(); resolve(buf.slice(0, end)); }
        });
        s.on('error', reject);
        s.setTimeout(5000, () => { s.destroy(); reject(new Error('raw handshake timed out')); });
    });
}

// A plain HTTP request with extra headers: {status, body}.
function httpPost(url, headers) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method: 'POST', headers }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { body += d; });
            res.on('end', () => resolve({ status: res.statusCode, body }));
        });
        req.on('error', reject);
        req.end();
    });
}

const b64url = (b) => Buffer.from(b).toString('base64url');
function signJwt(claims, key) {
    const h = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' })), p = b64url(JSON.stringify(claims));
    return `${h}.${p}.${createHmac('sha256', key).update(`${h}.${p}`).digest('base64url')}`;
}

function reasonOf(body) {
    try { return JSON.parse(body).data.reason; } catch { return ''; }
}

async function checks(url, token, other, keyfile, logfile) {
    if (!logfile) fail('usage: --check-subprotocol URL TOKEN OTHER KEYFILE LOGFILE');
    setTimeout(() => fail('timed out'), 60000).unref();
    const key = readFileSync(keyfile, 'utf8').replace(/\n+$/, '');
    const mine = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    const now = Math.floor(Date.now() / 1000);
    const offer = (t) => [V1, BEARER + t];

    // RFC 7230 tchar (RFC 6455 4.1 requires subprotocols to be tokens): the characters of a
    // JWT are; a browser refuses to offer anything else.
    check(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token) &&
          /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(BEARER + token), 'a login token is a valid subprotocol token');

    // The same frames, whichever way the token came; the subprotocol way selects igw.v1.
    const [byHeader, bySub] = await Promise.all([attempt(url, { token }), attempt(url, { protocols: offer(token) })]);
    check(byHeader.status === 101 && byHeader.protocol === '', 'header login opens, no subprotocol: ' + JSON.stringify(byHeader));
    check(bySub.status === 101 && bySub.protocol === V1, 'subprotocol login opens with igw.v1: ' + JSON.stringify(bySub));
    check(bySub.headers['sec-websocket-protocol'] === V1, 'the 101 selects exactly igw.v1');
    check(!JSON.stringify(bySub.headers).includes(token), 'the 101 does not echo the token');
    check(bySub.frames.length > 0, 'frames arrive over the subprotocol login (pending deliveries)');
    check(JSON.stringify([...bySub.frames].sort()) === JSON.stringify([...byHeader.frames].sort()),
          'the same frames as with the header');
    check(bySub.frames.every((f) => JSON.parse(f).method === 'interaction.event'), 'frame shape');

    // A header login offering igw.v1 gets it selected too.
    const hv1 = await attempt(url, { token, protocols: [V1], settleMs: 50 });
    check(hv1.status === 101 && hv1.protocol === V1, 'header login offering igw.v1 gets igw.v1: ' + JSON.stringify(hv1));

    // The offer split over two header lines is one list.
    const raw = await rawHandshake(url, [BEARER + token, V1]);
    check(/^HTTP\/1\.1 101 /.test(raw), 'offer over two header lines opens: ' + raw.split('\r\n')[0]);
    check(/\r\nsec-websocket-protocol: igw\.v1(\r\n|$)/i.test(raw) && !raw.includes(token),
          'offer over two header lines selects igw.v1 only');

    // Refusals: the same status and body as through the header.
    const refused = [
        ['no token', '', 401],
        ['garbage', 'garbage', 401],
        ['a fourth part', token + '.x', 401],
        ['a changed signature', token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'), 401],
        ['expired', signJwt({ sub: mine.sub, ent: mine.ent, iat: now - 120, exp: now - 60 }, key), 401],
        ['another key', signJwt({ sub: mine.sub, ent: mine.ent, iat: now, exp: now + 60 }, key + 'x'), 401],
        ['unknown user', signJwt({ sub: '999999', ent: mine.ent, iat: now, exp: now + 60 }, key), 403],
        ['foreign enterprise claim', signJwt({ sub: mine.sub, ent: String(Number(mine.ent) + 1), iat: now, exp: now + 60 }, key), 403],
        ["another user's endpoint", other, 404],
    ];
    const used = [token, other];
    for (const [name, t, status] of refused) {
        used.push(t);
        const [h, s] = await Promise.all([attempt(url, { token: t }), attempt(url, { protocols: offer(t) })]);
        check(h.status === status, `${name}: header answers ${status}: ${JSON.stringify(h)}`);
        check(s.status === h.status && s.body === h.body, `${name}: subprotocol answers as the header: ${JSON.stringify([h, s])}`);
        if (status === 404) // the path parameter, as a JSON Pointer like every data.path
            check(JSON.parse(h.body).data.path === '/endpointId', `${name}: data.path is /endpointId: ${h.body}`);
    }

    // Offers refused before the token is looked at (400, a reason naming the rule).
    const bad = [
        ['igw.bearer without igw.v1', { protocols: [BEARER + token] }, 'igw.v1'],
        ['igw.bearer with another protocol only', { protocols: ['chat', BEARER + token] }, 'igw.v1'],
        ['igw.v1 in another case', { protocols: ['IGW.V1', BEARER + token] }, 'igw.v1'],
        ['Authorization and igw.bearer both', { token, protocols: offer(token) }, 'not both'],
        ['Authorization and a bad igw.bearer both', { token, protocols: offer('garbage') }, 'not both'],
        ['two igw.bearer entries', { protocols: [V1, BEARER + token, BEARER + other] }, 'not several'],
    ];
    for (const [name, opts, says] of bad) {
        const r = await attempt(url, opts);
        check(r.status === 400 && JSON.parse(r.body).code === 100400 && reasonOf(r.body).includes(says),
              `${name}: 400 saying "${says}": ${JSON.stringify(r)}`);
        check(!r.body.includes(token) && !r.body.includes(other), `${name}: the reply does not echo a token`);
    }

    // Other routes ignore the subprotocol: no Authorization is no login.
    const base = url.replace(/^ws/, 'http').replace(/\/events\/ws\/[^/]*$/, '');
    const reg = await httpPost(base + '/endpoints/register', { 'sec-websocket-protocol': `${V1}, ${BEARER}${token}` });
    check(reg.status === 401 && reasonOf(reg.body) === 'a valid login token is required',
          'another route ignores igw.bearer: ' + JSON.stringify(reg));

    // Never a token in the access log (which did see these handshakes).
    await new Promise((r) => setTimeout(r, 200));
    const log = readFileSync(logfile, 'utf8');
    const lines = log.split('\n').filter((l) => l.startsWith('{"ts"') && l.includes('"route":"events_push"'));
    check(lines.some((l) => l.includes('"status":101')) && lines.some((l) => l.includes('"status":401')) &&
          lines.some((l) => l.includes('"status":400')), 'the access log has the events_push handshakes');
    for (const t of used.filter((t) => t.length >= 16)) {
        check(!log.includes(t) && !log.includes(t.split('.')[2]), 'no token in the log: ' + t.slice(0, 12) + '...');
    }
    console.log(`push subprotocol: ${passed} checks passed`);
    process.exit(0);
}

const args = process.argv.slice(2);
if (args[0] === '--check-subprotocol') await checks(...args.slice(1));
else if (args[0] === '--subprotocol') listen(args[1], args[2], args[3], true);
else listen(args[0], args[1], args[2], false);
