// console.js - igw's browser console: a client of the public API only, and
// the shortest complete example of the client flow (docs/client-flow.md):
// log in with a token, register an endpoint, listen on its WebSocket (or
// pull), acknowledge every delivery, send commands and read their outcome
// from the interaction.result events, and run a live view over WebRTC.
//
// The token is never put in a URL the browser sends: it comes from the
// text box or the URL fragment (#token=...&product=...&device=...&camera=...),
// travels in the Authorization header, and on the WebSocket as the
// subprotocol igw.bearer.<token> (a browser can set no header there).
'use strict';

const API = '/api/v1/im/interaction';
const RESULT_WAIT_MS = 20000; // a command's result: the device's 10 s plus room

const $ = (id) => document.getElementById(id);

const state = {
    token: '',
    endpointId: '',
    ws: null,
    seen: new Set(),      // deliveryIds shown (push and pull show the same ones)
    waiting: new Map(),   // msgToken -> resolve of the command's interaction.result
    live: null,           // {sessionId, mediaRevision, pc}
};

// ---- HTTP -----------------------------------------------------------------

// An error envelope as the server sent it: code, msg, data.reason, data.path.
class ApiError extends Error {
    constructor(status, envelope) {
        super(`HTTP ${status} ${JSON.stringify(envelope)}`);
        this.status = status;
        this.envelope = envelope;
    }
}

function showError(what, err) {
    const env = err instanceof ApiError ? err.envelope : null;
    $('error').textContent = env
        ? `${what}: HTTP ${err.status}\ncode ${env.code} ${env.msg}\ndata.reason ${env.data && env.data.reason}\n` +
          `data.path ${env.data && env.data.path}\n${JSON.stringify(env)}`
        : `${what}: ${err.message || err}`;
}

// POST to the interaction API; resolves to the reply's data, rejects with an
// ApiError carrying the envelope verbatim.
async function post(path, body) {
    const headers = { authorization: `Bearer ${state.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(API + path, {
        method: 'POST',
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
    });
    let env;
    try {
        env = await res.json();
    } catch {
        throw new ApiError(res.status, { code: res.status, msg: 'not JSON', data: { reason: res.statusText, path: '' } });
    }
    if (env.code !== 200) throw new ApiError(res.status, env);
    return env.data;
}

// A fresh msgToken per command: 128 random bits (no crypto.randomUUID: it
// needs a secure context, and the console may be served over plain http).
function newToken() {
    const b = crypto.getRandomValues(new Uint8Array(16));
    return 'c-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// Sends one command; resolves to {msgToken, result}, result a promise of its
// interaction.result event. Only "accepted" comes back from HTTP.
async function command(method, address, params) {
    if (!state.endpointId) throw new Error('register an endpoint first');
    const msgToken = newToken();
    const result = new Promise((resolve, reject) => {
        const t = setTimeout(() => {
            state.waiting.delete(msgToken);
            reject(new Error(`no interaction.result for ${method} ${msgToken} within ${RESULT_WAIT_MS} ms`));
        }, RESULT_WAIT_MS);
        state.waiting.set(msgToken, (ev) => (clearTimeout(t), resolve(ev)));
    });
    result.catch(() => {}); // a caller that does not wait must not see an unhandled rejection
    try {
        await post('/commands', { endpointId: state.endpointId, command: { msgToken, method, ...address, params } });
    } catch (err) {
        state.waiting.delete(msgToken);
        throw err;
    }
    return { msgToken, result };
}

// The device a command addresses, from the camera form.
function target() {
    return { target: { productID: $('product').value.trim(), deviceName: $('device-name').value.trim() } };
}

// ---- events: push, pull, acknowledge ---------------------------------------

function showEvent(deliveryId, ev) {
    const li = document.createElement('li');
    li.dataset.deliveryId = deliveryId;
    li.dataset.method = ev.method || '';
    li.dataset.msgToken = ev.msgToken || '';
    const d = ev.data || {};
    const summary = ev.method === 'interaction.state'
        ? `state ${d.state}${d.reason ? ' (' + d.reason + ')' : ''} eventSeq ${ev.eventSeq}`
        : `code ${ev.code} ${d.operation || ''} ${d.state || ''}${d.reason ? ' reason ' + d.reason : ''}`;
    if (ev.code !== undefined && ev.code !== 200) li.className = 'failed';
    const head = document.createElement('div');
    head.className = 'head';
    head.textContent = `${new Date().toLocaleTimeString()} ${ev.method} ${summary}`;
    const body = document.createElement('pre');
    body.textContent = JSON.stringify({ deliveryId, event: ev });
    li.append(head, body);
    $('events').prepend(li);
}

// Every delivery, pushed or pulled: shown once, handed to whoever waits for
// it, then acknowledged (after processing, never before).
async function onDelivery(deliveryId, ev) {
    if (!state.seen.has(deliveryId)) {
        state.seen.add(deliveryId);
        showEvent(deliveryId, ev);
        if (ev.method === 'interaction.result' && state.waiting.has(ev.msgToken)) {
            const resolve = state.waiting.get(ev.msgToken);
            state.waiting.delete(ev.msgToken);
            resolve(ev);
        } else if (ev.method === 'interaction.state') {
            onSessionState(ev);
        }
    }
    try {
        await post('/events/ack', { endpointId: state.endpointId, deliveryIds: [deliveryId] });
    } catch (err) {
        showError('ack', err);
    }
}

async function pull() {
    try {
        const data = await post('/events', { endpointId: state.endpointId, limit: 32 });
        for (const item of data.list) await onDelivery(item.deliveryId, item.event);
    } catch (err) {
        showError('pull', err);
    }
}

function openPush() {
    closePush();
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const url = `${scheme}://${location.host}${API}/events/ws/${encodeURIComponent(state.endpointId)}`;
    const ws = new WebSocket(url, ['igw.v1', 'igw.bearer.' + state.token]);
    state.ws = ws;
    $('ws-status').textContent = 'connecting';
    ws.onopen = () => ($('ws-status').textContent = 'open');
    ws.onmessage = (e) => {
        let frame;
        try {
            frame = JSON.parse(e.data);
        } catch {
            return showError('push', new Error('a frame that is not JSON'));
        }
        if (frame.method === 'interaction.event') onDelivery(frame.deliveryId, frame.event);
    };
    ws.onclose = (e) => {
        if (state.ws !== ws) return;
        state.ws = null;
        // 1001: the server stops; nothing is lost, pending deliveries come again.
        // A refused handshake shows as 1006 (the browser hides the status).
        $('ws-status').textContent = `closed (${e.code})`;
        if (e.code === 1001) setTimeout(() => state.endpointId && !state.ws && openPush(), 1000);
    };
}

function closePush() {
    if (!state.ws) return;
    const ws = state.ws;
    state.ws = null;
    ws.close(1000);
    $('ws-status').textContent = 'closed';
}

async function connect() {
    state.token = $('token').value.trim();
    $('error').textContent = '';
    try {
        const data = await post('/endpoints/register');
        state.endpointId = data.endpointId;
        $('endpoint').textContent = data.endpointId;
        openPush();
    } catch (err) {
        showError('register', err);
    }
}

// ---- live view --------------------------------------------------------------

function setLive(fields) {
    Object.assign(state.live, fields);
    $('session-id').textContent = state.live.sessionId || 'none';
    $('media-revision').textContent = String(state.live.mediaRevision);
}

function onSessionState(ev) {
    const live = state.live;
    if (!live || ev.sessionId !== live.sessionId) return;
    const d = ev.data || {};
    $('session-state').textContent = `${d.state}${d.reason ? ' (' + d.reason + ')' : ''} eventSeq ${ev.eventSeq}`;
    if (d.state === 'ended') stopPeer();
}

function stopPeer() {
    if (state.live && state.live.pc) {
        state.live.pc.close();
        state.live.pc = null;
        $('peer-state').textContent = 'closed';
    }
}

// Resolves once ICE gathering is complete: the offer carries every
// candidate (no trickle).
function gathered(pc, ms) {
    return new Promise((resolve, reject) => {
        if (pc.iceGatheringState === 'complete') return resolve();
        const t = setTimeout(() => reject(new Error(`ICE gathering not complete after ${ms} ms`)), ms);
        pc.addEventListener('icegatheringstatechange', () => {
            if (pc.iceGatheringState === 'complete') (clearTimeout(t), resolve());
        });
    });
}

// A result event that is not a success becomes an error showing it.
function expectOk(what, ev) {
    if (ev.code !== 200) throw new ApiError(200, { code: ev.code, msg: `${what} failed`, data: ev.data || {} });
    return ev.data || {};
}

// interaction.open -> result (invited, sessionId) -> recvonly offer ->
// interaction.mediaOffer -> result with the answer -> setRemoteDescription;
// every peer connection state is reported with interaction.mediaState, and
// interaction.state events move the session (invited, established, ended).
async function openLiveView() {
    try {
        if (state.live && state.live.pc) throw new Error('a live view is open: end it first');
        const listenAudio = $('listen-audio').checked;
        const params = { purpose: 'ipcLiveView', cameraId: $('camera').value.trim() };
        if (listenAudio) params.listenAudio = true;
        const open = await command('interaction.open', target(), params);
        const ev = await open.result;
        const data = expectOk('interaction.open', ev);
        const sessionId = data.sessionId || ev.sessionId;
        if (!sessionId) throw new Error('interaction.open: the result carries no sessionId');
        state.live = { sessionId, mediaRevision: data.mediaRevision || 1, pc: null };
        setLive({});
        $('session-state').textContent = data.state || 'invited';

        const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
        state.live.pc = pc;
        const stream = new MediaStream();
        pc.addTransceiver('video', { direction: 'recvonly' });
        if (listenAudio) pc.addTransceiver('audio', { direction: 'recvonly' });
        pc.ontrack = (e) => {
            stream.addTrack(e.track);
            $('video').srcObject = stream;
        };
        pc.onconnectionstatechange = () => {
            const s = pc.connectionState;
            $('peer-state').textContent = s;
            if (s === 'new' || !state.live || state.live.pc !== pc) return; // 'new' is no MediaPeerState
            command('interaction.mediaState', { sessionId }, { mediaRevision: state.live.mediaRevision, state: s })
                .catch((err) => showError('interaction.mediaState', err));
        };
        await pc.setLocalDescription(await pc.createOffer());
        await gathered(pc, 10000);

        const offer = await command('interaction.mediaOffer', { sessionId }, {
            mediaRevision: state.live.mediaRevision,
            webrtc: { iceMode: 'full', sdp: pc.localDescription.sdp },
        });
        const answer = expectOk('interaction.mediaOffer', await offer.result);
        const sdp = typeof answer.webrtc === 'string' ? answer.webrtc : answer.webrtc && answer.webrtc.sdp;
        if (!sdp) throw new Error('interaction.mediaOffer: the result carries no answer (data.webrtc)');
        if (answer.mediaRevision) setLive({ mediaRevision: answer.mediaRevision });
        await pc.setRemoteDescription({ type: 'answer', sdp });
    } catch (err) {
        showError('live view', err);
        stopPeer();
    }
}

async function trackControl(operation) {
    try {
        if (!state.live) throw new Error('no live view');
        const c = await command('interaction.trackControl', { sessionId: state.live.sessionId },
            { trackId: 'video-1', operation, mediaRevision: state.live.mediaRevision });
        expectOk(`trackControl ${operation}`, await c.result);
    } catch (err) {
        showError(`trackControl ${operation}`, err);
    }
}

async function endLiveView() {
    try {
        if (!state.live) throw new Error('no live view');
        const c = await command('interaction.end', { sessionId: state.live.sessionId }, { reason: 'userHangup' });
        expectOk('interaction.end', await c.result);
    } catch (err) {
        showError('interaction.end', err);
    } finally {
        stopPeer();
    }
}

// ---- device commands ----------------------------------------------------------

function parseJson(id) {
    try {
        return JSON.parse($(id).value);
    } catch (err) {
        throw new Error(`${id}: not JSON (${err.message})`);
    }
}

async function sendDevice(method, params) {
    try {
        const c = await command(method, target(), params());
        await c.result; // shown in the event list as it arrives
    } catch (err) {
        showError(method, err);
    }
}

// ---- wiring -----------------------------------------------------------------

function fromFragment() {
    const f = new URLSearchParams(location.hash.slice(1));
    if (f.get('token')) $('token').value = f.get('token');
    if (f.get('product')) $('product').value = f.get('product');
    if (f.get('device')) $('device-name').value = f.get('device');
    if (f.get('camera')) $('camera').value = f.get('camera');
}

fromFragment();
$('connect').addEventListener('click', connect);
$('disconnect').addEventListener('click', closePush);
$('pull').addEventListener('click', pull);
$('live-open').addEventListener('click', openLiveView);
$('live-pause').addEventListener('click', () => trackControl('pause'));
$('live-resume').addEventListener('click', () => trackControl('resume'));
$('live-end').addEventListener('click', endLiveView);
$('action-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sendDevice('device.action', () => ({ actionID: $('action-id').value.trim(), input: parseJson('action-input') }));
});
$('control-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sendDevice('device.propertyControl', () => ({ properties: parseJson('control-props') }));
});
