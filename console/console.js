// console.js - igw's browser console: a client of the public API only, and
// the shortest complete example of the client flow (docs/client-flow.md):
// log in with a token, register an endpoint, listen on its WebSocket (or
// pull), acknowledge every delivery, send commands and read their outcome
// from the interaction.result events, run a live view over WebRTC, talk
// to the camera from a call of the stand-in IM (ipcTalk), and list the
// camera's recordings and play them back (recordPlayback).
//
// The token is never put in a URL the browser sends: it comes from the
// text box or the URL fragment (#token=...&product=...&device=...&camera=...),
// travels in the Authorization header, and on the WebSocket as the
// subprotocol igw.bearer.<token> (a browser can set no header there).
'use strict';

const API = '/api/v1/im/interaction';
const IM = '/api/v1/im-standin/'; // the stand-in IM's calls (not the spec's API)
const RESULT_WAIT_MS = 20000; // a command's result: the device's 10 s plus room
const ROSTER_MS = 2000;
const HEARTBEAT_MS = 10000; // the server lets a membership lapse after 30 s without one
const QUERY_MS = 5000; // the recordings query's client timeout (the spec's; it may be sent again)
const DAY_MS = 86400000; // the widest window the query takes
const STATS_MS = 500; // how often the playback's decoded frames are read

const $ = (id) => document.getElementById(id);

const state = {
    token: '',
    endpointId: '',
    ws: null,
    seen: new Set(),      // deliveryIds shown (push and pull show the same ones)
    waiting: new Map(),   // msgToken -> resolve of the command's interaction.result
    live: null,           // {sessionId, mediaRevision, pc}
    user: '',             // the token's "sub", to label the page (the server decides)
    talk: {
        callId: '',       // the call we are a member of, '' when none
        initiator: '',
        memberEpoch: 0,   // our join instance, from start/join/heartbeat
        members: [],      // the last roster
        shown: '',        // what the roster table shows, to redraw only on a change
        gen: 0,           // raised at every entry and exit: an older poll stops
        rosterTimer: 0,
        beatTimer: 0,
        session: null,    // {sessionId, mediaRevision, pc}
        mic: null,        // the microphone's MediaStream while talking
    },
    rec: {
        list: [],         // the last page of the catalog
        target: null,     // {target, cameraId} it was read for: a play opens that camera's recording
        gen: 0,           // raised at every query: an older answer is dropped
    },
    pb: null,             // the playback: {sessionId, mediaRevision, pc, rec, phase, ...}
    bell: null,           // the door-bell: {sessionId, inviteToken, state, pc, mic, mediaRevision}
    msg: { audio: null, url: '', rec: null, starting: false, sending: false }, // the voice message
    ai: null,             // the AI session: {sessionId, mediaRevision, pc, mic, consent, procs: Map id -> kind}
    renewTimer: 0,        // registers the next endpoint and moves the sessions a minute before expiry
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
// ApiError carrying the envelope verbatim (ms: as postTo).
function post(path, body, ms) {
    return postTo(API + path, body, ms);
}

// POST to the stand-in IM (calls/start, calls/roster, ...), as post().
function im(path, body) {
    return postTo(IM + path, body);
}

// ms: give up after that long (the request may be sent again), else wait.
async function postTo(url, body, ms) {
    const headers = { authorization: `Bearer ${state.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res;
    try {
        res = await fetch(url, {
            method: 'POST',
            headers,
            body: body === undefined ? undefined : JSON.stringify(body),
            cache: 'no-store',
            credentials: 'omit',
            signal: ms ? AbortSignal.timeout(ms) : undefined,
        });
    } catch (err) {
        if (err.name === 'TimeoutError') throw new Error(`no answer within ${ms} ms: send it again`);
        throw err;
    }
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
// waitMs: how long its result may take (a message waits for its camera).
async function command(method, address, params, waitMs = RESULT_WAIT_MS) {
    if (!state.endpointId) throw new Error('register an endpoint first');
    const msgToken = newToken();
    const result = new Promise((resolve, reject) => {
        const t = setTimeout(() => {
            state.waiting.delete(msgToken);
            reject(new Error(`no interaction.result for ${method} ${msgToken} within ${waitMs} ms`));
        }, waitMs);
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
        } else if (ev.method === 'interaction.processor') {
            onProcessor(ev);
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

// The user id in a JWT's claims ("sub"), or '' for anything else. Read
// without verifying: it only labels the page and names oneself in a leave;
// the server takes identity from the verified token alone.
function tokenUser(token) {
    try {
        const p = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
        const claims = JSON.parse(atob(p + '='.repeat((4 - (p.length % 4)) % 4)));
        return claims.sub === undefined ? '' : String(claims.sub);
    } catch {
        return '';
    }
}

// The live sessions this page holds: live view, talk, door-bell, playback.
function liveSessions() {
    return [state.live, state.talk.session, state.bell, state.pb].filter((s) => s && s.sessionId && s.pc);
}

// Registers an endpoint (its hour starts now) and moves every live session
// of the previous one to it: interaction.control endpointControl sent on
// the new endpoint, one per session (docs/sessions.md). The media goes on
// untouched; what the old endpoint had not acknowledged comes on the new
// one. Done again a minute before each endpoint expires, so a view can stay
// open for hours.
async function connect() {
    state.token = $('token').value.trim();
    state.user = tokenUser(state.token);
    $('talk-me').textContent = state.user || 'unknown';
    $('error').textContent = '';
    const old = state.endpointId;
    try {
        const data = await post('/endpoints/register');
        state.endpointId = data.endpointId;
        $('endpoint').textContent = data.endpointId;
        openPush();
        clearTimeout(state.renewTimer);
        state.renewTimer = setTimeout(connect, Math.max(5000, data.expiresAt - Date.now() - 60000));
    } catch (err) {
        showError('register', err);
        return;
    }
    if (!old || old === state.endpointId) return;
    for (const s of liveSessions()) {
        try {
            const c = await command('interaction.control', { sessionId: s.sessionId },
                { operation: 'endpointControl', args: { transferFrom: old } });
            const r = expectOk('endpointControl', await c.result).result || {};
            $('transfer-note').textContent = `${new Date().toLocaleTimeString()} session ${s.sessionId} moved from endpoint ` +
                `${old} to ${state.endpointId} (${r.redelivered || 0} unacknowledged events redelivered here)`;
        } catch (err) {
            showError(`moving session ${s.sessionId}`, err);
        }
    }
}

// ---- live view --------------------------------------------------------------

function setLive(fields) {
    Object.assign(state.live, fields);
    $('session-id').textContent = state.live.sessionId || 'none';
    $('media-revision').textContent = String(state.live.mediaRevision);
}

// interaction.state of the live view's or the talk's session.
function onSessionState(ev) {
    const d = ev.data || {};
    const shown = `${d.state}${d.reason ? ' (' + d.reason + ')' : ''} eventSeq ${ev.eventSeq}`;
    const talk = state.talk.session;
    if (state.ai && ev.sessionId === state.ai.sessionId) {
        $('ai-state').textContent = shown;
        if (d.state === 'ended') stopAi();
    } else if (d.state === 'ringing' || (state.bell && ev.sessionId === state.bell.sessionId)) {
        onBellState(ev);
    } else if (state.pb && ev.sessionId === state.pb.sessionId) {
        onPlaybackState(ev);
    } else if (state.live && ev.sessionId === state.live.sessionId) {
        $('session-state').textContent = shown;
        if (d.state === 'ended') stopPeer();
    } else if (talk && ev.sessionId === talk.sessionId) {
        $('talk-session-state').textContent = shown;
        if (d.state === 'ended') stopTalkPeer();
    }
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

// The media of session s ({sessionId, mediaRevision, pc}) on pc, whose
// transceivers are set: every change of the connection state shown in
// element peerId and reported with interaction.mediaState, the offer once
// ICE gathering is complete -> interaction.mediaOffer -> its result's answer
// -> setRemoteDescription. onRevision(r) when the answer names a revision.
// The reports go one at a time, each once the previous one is accepted:
// two commands in flight together are applied in either order, and a
// `connecting` applied after `connected` would leave the session waiting.
async function negotiate(s, pc, peerId, onRevision) {
    const sessionId = s.sessionId;
    let reports = Promise.resolve();
    pc.onconnectionstatechange = () => {
        const st = pc.connectionState;
        $(peerId).textContent = st;
        if (st === 'new' || s.pc !== pc) return; // 'new' is no MediaPeerState
        const params = { mediaRevision: s.mediaRevision, state: st };
        reports = reports.then(() => command('interaction.mediaState', { sessionId }, params))
            .catch((err) => showError('interaction.mediaState', err));
    };
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc, 10000);

    const offer = await command('interaction.mediaOffer', { sessionId }, {
        mediaRevision: s.mediaRevision,
        webrtc: { iceMode: 'full', sdp: pc.localDescription.sdp },
    });
    const answer = expectOk('interaction.mediaOffer', await offer.result);
    const sdp = typeof answer.webrtc === 'string' ? answer.webrtc : answer.webrtc && answer.webrtc.sdp;
    if (!sdp) throw new Error('interaction.mediaOffer: the result carries no answer (data.webrtc)');
    if (answer.mediaRevision) onRevision(answer.mediaRevision);
    await pc.setRemoteDescription({ type: 'answer', sdp });
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
        await negotiate(state.live, pc, 'peer-state', (r) => setLive({ mediaRevision: r }));
    } catch (err) {
        showError('live view', err);
        stopPeer();
    }
}

// A new media generation of a session's peer: restartIce() (a new network
// path), the offer as mediaRevision + 1, its answer; the session goes on.
async function restartIce(s, peerId, onRevision) {
    try {
        if (!s || !s.pc) throw new Error('no peer to renegotiate');
        const pc = s.pc;
        pc.restartIce();
        await pc.setLocalDescription(await pc.createOffer());
        await gathered(pc, 10000);
        const next = s.mediaRevision + 1;
        const offer = await command('interaction.mediaOffer', { sessionId: s.sessionId }, {
            mediaRevision: next,
            webrtc: { iceMode: 'full', sdp: pc.localDescription.sdp },
        });
        const answer = expectOk('interaction.mediaOffer', await offer.result);
        const sdp = answer.webrtc && answer.webrtc.sdp;
        if (!sdp) throw new Error('interaction.mediaOffer: the result carries no answer (data.webrtc)');
        await pc.setRemoteDescription({ type: 'answer', sdp });
        s.mediaRevision = answer.mediaRevision || next;
        onRevision(s.mediaRevision);
        $(peerId).textContent = `${pc.connectionState} (ICE restarted, generation ${s.mediaRevision})`;
    } catch (err) {
        showError('restart ICE', err);
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

// ---- talk ---------------------------------------------------------------------
//
// A call of the stand-in IM (calls/start of a group, or calls/join by id),
// kept alive with calls/heartbeat and shown with calls/roster; then ipcTalk
// on the camera: interaction.open {purpose: ipcTalk, cameraId, callId} -> the
// microphone on a sendrecv audio transceiver, the camera's picture and
// microphone received -> the media as the live view's. The call's initiator
// mutes members with /talk/audio-access (read, then set with the revision
// read) and removes them with interaction.leave; everyone leaves
// (interaction.leave of oneself) or hangs up (calls/hangup).

// A short line about the last talk operation; refused ones stand out.
function talkStatus(text, refused) {
    $('talk-status').textContent = `${new Date().toLocaleTimeString()} ${text}`;
    $('talk-status').className = refused ? 'refused' : '';
}

function reasonOf(err) {
    const env = err instanceof ApiError ? err.envelope : null;
    return env && env.data ? `${env.data.reason}${env.data.path ? ' (' + env.data.path + ')' : ''}` : err.message || String(err);
}

// The call is gone for us (ended, or our membership lapsed or left): no more
// polling; a talk session on it is ended by the server (its state event).
function callGone(err) {
    return err instanceof ApiError && (err.status === 404 || err.status === 403);
}

function showCall() {
    const t = state.talk;
    $('talk-call').textContent = t.callId || 'none';
    $('talk-initiator').textContent = t.initiator || 'none';
    $('talk-epoch').textContent = t.memberEpoch ? String(t.memberEpoch) : 'none';
}

function enterCall(member, what) {
    const t = state.talk;
    t.callId = member.callId;
    t.memberEpoch = member.memberEpoch;
    t.initiator = '';
    t.members = [];
    $('talk-call-input').value = member.callId;
    $('talk-heartbeat').textContent = `deadline ${new Date(member.deadlineAt).toLocaleTimeString()}`;
    showCall();
    talkStatus(`${what}: call ${member.callId}, memberEpoch ${member.memberEpoch}`);
    const gen = ++t.gen;
    t.rosterTimer = setTimeout(() => pollRoster(gen), 0);
    t.beatTimer = setTimeout(() => heartbeat(gen), HEARTBEAT_MS);
}

function leaveCallLocally(why) {
    const t = state.talk;
    t.gen++;
    clearTimeout(t.rosterTimer);
    clearTimeout(t.beatTimer);
    t.callId = '';
    t.initiator = '';
    t.memberEpoch = 0;
    t.members = [];
    renderRoster();
    showCall();
    $('talk-call').textContent = `none (${why})`;
}

async function startCall() {
    try {
        if (state.talk.callId) throw new Error(`in call ${state.talk.callId}: hang up first`);
        enterCall(await im('calls/start', { groupId: $('talk-group').value.trim() }), 'started');
    } catch (err) {
        showError('calls/start', err);
        talkStatus(`calls/start refused: ${reasonOf(err)}`, true);
    }
}

async function joinCall() {
    try {
        if (state.talk.callId) throw new Error(`in call ${state.talk.callId}: hang up first`);
        enterCall(await im('calls/join', { callId: $('talk-call-input').value.trim() }), 'joined');
    } catch (err) {
        showError('calls/join', err);
        talkStatus(`calls/join refused: ${reasonOf(err)}`, true);
    }
}

// One read of the roster into the table (the poll and every change we make).
async function refreshRoster() {
    const t = state.talk;
    const gen = t.gen;
    const r = await im('calls/roster', { callId: t.callId });
    if (t.gen !== gen) return;
    t.initiator = r.initiator;
    t.members = r.members;
    showCall();
    renderRoster();
}

// Polled every ROSTER_MS while in a call; a chain of timeouts, so that a slow
// reply never overlaps the next. gen: the entry it belongs to (a reply that
// comes back after an exit, or after a new entry, ends its chain).
async function pollRoster(gen) {
    const t = state.talk;
    if (t.gen !== gen) return;
    try {
        await refreshRoster();
    } catch (err) {
        if (t.gen !== gen) return;
        showError('calls/roster', err);
        if (callGone(err)) return leaveCallLocally(reasonOf(err));
    }
    if (t.gen === gen) t.rosterTimer = setTimeout(() => pollRoster(gen), ROSTER_MS);
}

async function heartbeat(gen) {
    const t = state.talk;
    if (t.gen !== gen) return;
    const callId = t.callId;
    try {
        const m = await im('calls/heartbeat', { callId });
        if (t.gen !== gen) return;
        t.memberEpoch = m.memberEpoch;
        showCall();
        $('talk-heartbeat').textContent =
            `sent ${new Date().toLocaleTimeString()}, deadline ${new Date(m.deadlineAt).toLocaleTimeString()}`;
    } catch (err) {
        if (t.gen !== gen) return;
        $('talk-heartbeat').textContent = `refused: ${reasonOf(err)}`;
        showError('calls/heartbeat', err);
        if (callGone(err)) return leaveCallLocally(reasonOf(err));
    }
    if (t.gen === gen) t.beatTimer = setTimeout(() => heartbeat(gen), HEARTBEAT_MS);
}

function cell(tr, text) {
    const td = document.createElement('td');
    td.textContent = text;
    tr.append(td);
    return td;
}

// Redraws the roster table when it changed (a button is not replaced under
// the pointer by every poll).
function renderRoster() {
    const t = state.talk;
    const shown = JSON.stringify([state.user, t.initiator, t.members]);
    if (shown === t.shown) return;
    t.shown = shown;
    const host = t.initiator !== '' && t.initiator === state.user;
    const rows = t.members.map((m) => {
        const tr = document.createElement('tr');
        tr.dataset.userId = m.userId;
        if (m.userId === state.user) tr.className = 'me';
        cell(tr, m.userId);
        cell(tr, String(m.memberEpoch));
        cell(tr, String(m.publishAllowed));
        cell(tr, String(m.audioRevision));
        const actions = cell(tr, '');
        if (host) {
            const mute = document.createElement('button');
            mute.className = 'mute';
            mute.textContent = m.publishAllowed ? 'Mute' : 'Unmute';
            mute.dataset.allowed = String(!m.publishAllowed);
            actions.append(mute);
            if (m.userId !== state.user) {
                const remove = document.createElement('button');
                remove.className = 'remove';
                remove.textContent = 'Remove';
                remove.dataset.memberEpoch = String(m.memberEpoch);
                actions.append(remove);
            }
        }
        return tr;
    });
    $('roster-body').replaceChildren(...rows);
}

// The initiator sets a member's publish permission: read its record, then
// set with the audioRevision read. A stale revision (someone changed it in
// between) is shown as refused and the record read again; pressing again
// decides on what is current, never a revision substituted here.
async function setAudio(userId, allowed) {
    const callId = state.talk.callId;
    const read = () => post('/talk/audio-access', { operation: 'read', callId, targetUserID: userId });
    try {
        const rec = await read();
        if (rec.publishAllowed === allowed) {
            talkStatus(`user ${userId}: publishAllowed already ${allowed} (audioRevision ${rec.audioRevision})`);
        } else {
            try {
                const set = await post('/talk/audio-access',
                    { operation: 'set', callId, targetUserID: userId, allowed, expectedRevision: rec.audioRevision });
                talkStatus(`user ${userId}: publishAllowed ${set.publishAllowed}, audioRevision ${set.audioRevision}`);
            } catch (err) {
                const env = err instanceof ApiError ? err.envelope : null;
                if (!(env && env.data && env.data.path === '/expectedRevision')) throw err;
                showError('audio-access set', err);
                const now = await read();
                talkStatus(`refused, stale revision: ${env.data.reason} (expectedRevision ${rec.audioRevision}); ` +
                    `read again: user ${userId} publishAllowed ${now.publishAllowed}, audioRevision ${now.audioRevision}; ` +
                    'press again to change it', true);
            }
        }
        await refreshRoster();
    } catch (err) {
        showError('audio-access', err);
        talkStatus(`audio-access refused: ${reasonOf(err)}`, true);
    }
}

// interaction.leave on our talk session: ourselves (self exit) or, for the
// initiator, another member's join instance (memberEpoch as the roster
// showed it: a re-entry since is refused, not removed).
async function leave(participantId, memberEpoch) {
    const t = state.talk;
    try {
        if (!t.session) throw new Error('interaction.leave acts on a talk session: press Talk first (Hang up leaves the call without one)');
        if (!t.callId) throw new Error('not in a call');
        const c = await command('interaction.leave', { sessionId: t.session.sessionId },
            { callId: t.callId, participantId, expectedMemberEpoch: memberEpoch });
        const r = expectOk('interaction.leave', await c.result);
        talkStatus(`left: ${r.participantId} (memberEpoch ${r.memberEpoch}), call ended ${r.ended}, ` +
            `remaining ${JSON.stringify(r.remaining)}`);
        if (participantId === state.user || r.ended) leaveCallLocally(r.ended ? 'call ended' : 'you left');
        else await refreshRoster();
    } catch (err) {
        showError('interaction.leave', err);
        talkStatus(`interaction.leave refused: ${reasonOf(err)}`, true);
    }
}

function leaveSelf() {
    const me = state.talk.members.find((m) => m.userId === state.user);
    leave(state.user, me ? me.memberEpoch : state.talk.memberEpoch);
}

async function hangUp() {
    const t = state.talk;
    try {
        if (!t.callId) throw new Error('not in a call');
        const callId = t.callId;
        const r = await im('calls/hangup', { callId });
        talkStatus(`hung up: call ${callId}, ended ${r.ended}`);
        leaveCallLocally(r.ended ? 'hung up, call ended' : 'hung up');
    } catch (err) {
        showError('calls/hangup', err);
        talkStatus(`calls/hangup refused: ${reasonOf(err)}`, true);
    }
}

function stopTalkPeer() {
    const t = state.talk;
    if (t.session && t.session.pc) {
        t.session.pc.close();
        t.session.pc = null;
        $('talk-peer-state').textContent = 'closed';
    }
    if (t.mic) {
        for (const track of t.mic.getTracks()) track.stop();
        t.mic = null;
        $('talk-mic').textContent = 'off';
    }
}

function setTalk(fields) {
    const s = state.talk.session;
    Object.assign(s, fields);
    $('talk-session-id').textContent = s.sessionId;
    $('talk-media-revision').textContent = String(s.mediaRevision);
}

// The microphone first (a refusal leaves nothing open on the server), then
// interaction.open with purpose ipcTalk on the call, then the peer: the
// microphone on a sendrecv audio transceiver, the camera's video received.
// Mutes or unmutes my own microphone on the camera's speaker without
// hanging up: trackControl stop / publish on the session's uplink track
// (`speaker`, what the camera plays); the call's permission still applies.
async function talkMic(operation) {
    try {
        const s = state.talk.session;
        if (!s) throw new Error('no talk session');
        const c = await command('interaction.trackControl', { sessionId: s.sessionId },
            { trackId: 'speaker', operation, mediaRevision: s.mediaRevision });
        const d = expectOk(`trackControl ${operation}`, await c.result);
        $('talk-mic').textContent = d.state === 'stopped' ? 'muted (stopped at the platform)' : 'on';
        talkStatus(`microphone ${d.state === 'stopped' ? 'muted' : 'on'} (trackControl ${operation})`);
    } catch (err) {
        talkStatus(`trackControl ${operation} refused: ${reasonOf(err)}`, true);
    }
}

async function openTalk() {
    const t = state.talk;
    try {
        if (t.session && t.session.pc) throw new Error('a talk is open: leave or hang up first');
        if (!t.callId) throw new Error('start or join a call first');
        if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia)
            throw new Error('no microphone here: getUserMedia needs a secure context (https, or http on 127.0.0.1 or localhost)');
        t.mic = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
        const track = t.mic.getAudioTracks()[0];
        $('talk-mic').textContent = track.label || 'on';

        const open = await command('interaction.open', target(),
            { purpose: 'ipcTalk', cameraId: $('camera').value.trim(), callId: t.callId });
        const ev = await open.result;
        const data = expectOk('interaction.open', ev);
        const sessionId = data.sessionId || ev.sessionId;
        if (!sessionId) throw new Error('interaction.open: the result carries no sessionId');
        t.session = { sessionId, mediaRevision: data.mediaRevision || 1, pc: null };
        setTalk({});
        $('talk-session-state').textContent = data.state || 'invited';

        const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
        t.session.pc = pc;
        pc.addTransceiver(track, { direction: 'sendrecv', streams: [t.mic] });
        pc.addTransceiver('video', { direction: 'recvonly' });
        const picture = new MediaStream();
        pc.ontrack = (e) => {
            if (e.track.kind === 'audio') {
                $('talk-audio').srcObject = new MediaStream([e.track]);
            } else {
                picture.addTrack(e.track);
                $('talk-video').srcObject = picture;
            }
        };
        await negotiate(t.session, pc, 'talk-peer-state', (r) => setTalk({ mediaRevision: r }));
    } catch (err) {
        showError('talk', err);
        talkStatus(`talk refused: ${reasonOf(err)}`, true);
        stopTalkPeer();
    }
}

// ---- door-bell ------------------------------------------------------------------
//
// A ring arrives as interaction.state ringing on a session of our own, with
// its inviteToken; Accept sends interaction.control accept with it (the
// first accept wins; the others end answeredElsewhere), then the peer: the
// camera's video received, our microphone on one sendrecv audio m-line to
// its speaker (docs/doorbell.md).

function bellStatus(text, refused) {
    $('bell-status').textContent = text;
    $('bell-status').className = refused ? 'failed' : '';
}

function bellButtons() {
    const b = state.bell;
    const st = b ? b.state : '';
    $('bell-accept').disabled = st !== 'ringing';
    $('bell-decline').disabled = st !== 'ringing';
    $('bell-hangup').disabled = st !== 'invited' && st !== 'established';
    $('bell-handover').disabled = st !== 'invited' && st !== 'established';
}

function onBellState(ev) {
    const d = ev.data || {};
    if (d.state === 'ringing') {
        if (state.bell && state.bell.pc) return; // in a call: another ring shows in the log only
        state.bell = { sessionId: ev.sessionId, inviteToken: d.inviteToken, state: 'ringing', pc: null, mic: null,
                       mediaRevision: 1 };
        const t = d.target || {};
        $('bell-who').textContent = `${t.productID}/${t.deviceName} camera ${d.cameraId}`;
        $('bell-session-id').textContent = ev.sessionId;
        bellStatus('ringing: accept or decline');
    } else {
        state.bell.state = d.state;
        if (d.state === 'ended') {
            stopBellPeer();
            bellStatus(`ended: ${d.reason}`, d.reason !== 'userHangup');
        }
    }
    $('bell-state').textContent = `${d.state}${d.reason ? ' (' + d.reason + ')' : ''} eventSeq ${ev.eventSeq}`;
    bellButtons();
}

function stopBellPeer() {
    const b = state.bell;
    if (b && b.pc) {
        b.pc.close();
        b.pc = null;
        $('bell-peer-state').textContent = 'closed';
    }
    if (b && b.mic) {
        for (const track of b.mic.getTracks()) track.stop();
        b.mic = null;
        $('bell-mic').textContent = 'off';
    }
}

// The microphone, or a silent track when the page has none (the call is
// two-way all the same: the camera then hears silence).
async function bellMic() {
    if (navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
        try {
            return await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
        } catch (err) {
            showError('microphone', err);
        }
    }
    const ctx = new AudioContext();
    return ctx.createMediaStreamDestination().stream;
}

async function bellDecide(operation) {
    const b = state.bell;
    try {
        if (!b || b.state !== 'ringing') throw new Error('nothing rings');
        const sessionId = b.sessionId;
        if (operation === 'decline') {
            const c = await command('interaction.control', { sessionId }, { operation, args: { inviteToken: b.inviteToken } });
            expectOk('decline', await c.result);
            return;
        }
        b.mic = await bellMic();
        $('bell-mic').textContent = b.mic.getAudioTracks()[0].label || 'on';
        const c = await command('interaction.control', { sessionId }, { operation, args: { inviteToken: b.inviteToken } });
        const data = expectOk('accept', await c.result);
        b.state = data.state || 'invited';
        bellButtons();
        bellStatus('answered: connecting');
        const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
        b.pc = pc;
        pc.addTransceiver('video', { direction: 'recvonly' });
        pc.addTransceiver(b.mic.getAudioTracks()[0], { direction: 'sendrecv', streams: [b.mic] });
        const picture = new MediaStream();
        pc.ontrack = (e) => {
            if (e.track.kind === 'audio') {
                $('bell-audio').srcObject = new MediaStream([e.track]);
            } else {
                picture.addTrack(e.track);
                $('bell-video').srcObject = picture;
            }
        };
        await negotiate(b, pc, 'bell-peer-state', (r) => (b.mediaRevision = r));
    } catch (err) {
        showError(`door-bell ${operation}`, err);
        bellStatus(`${operation} refused: ${reasonOf(err)}`, true);
        if (operation === 'accept') stopBellPeer();
    }
}

async function bellHandover() {
    const b = state.bell;
    try {
        if (!b) throw new Error('no call');
        const args = {};
        if ($('bell-to-user').value.trim()) args.userId = $('bell-to-user').value.trim();
        if ($('bell-to-endpoint').value.trim()) args.endpointId = $('bell-to-endpoint').value.trim();
        const c = await command('interaction.control', { sessionId: b.sessionId }, { operation: 'handover', args });
        expectOk('handover', await c.result);
        bellStatus('handing over: the target rings; this call goes on until it answers');
    } catch (err) {
        showError('handover', err);
        bellStatus(`handover refused: ${reasonOf(err)}`, true);
    }
}

async function bellHangup() {
    const b = state.bell;
    try {
        if (!b) throw new Error('no call');
        const c = await command('interaction.end', { sessionId: b.sessionId }, { reason: 'userHangup' });
        expectOk('interaction.end', await c.result);
    } catch (err) {
        showError('hang up', err);
    }
}

// ---- recordings -----------------------------------------------------------------
//
// The camera's catalog: /recordings/query with a window of at most 24 h
// (recordings that start in it, in start order, 32 a page; hasMore when
// truncated, and Next moves the window's start past the last row's start).
// A row's Play opens a recordPlayback session: interaction.open {purpose:
// recordPlayback, cameraId, recordingId} -> the media as the live view's
// (recvonly) -> the interaction.state events say loaded (the camera has
// it), ready (media can flow), playing, paused, ended with its reason.
// Nothing plays until interaction.playbackControl play, sent once ready;
// pause and seek (positionMs from the recording's start) likewise; Stop is
// interaction.end userStopped.

function recStatus(text, refused) {
    $('rec-status').textContent = text;
    $('rec-status').className = refused ? 'refused' : '';
}

function pbStatus(text, refused) {
    $('pb-status').textContent = `${new Date().toLocaleTimeString()} ${text}`;
    $('pb-status').className = refused ? 'refused' : '';
}

// A datetime-local picker's value for Unix ms, in local time, in the form
// the picker keeps (seconds and milliseconds only when not zero).
function pickerValue(ms) {
    const d = new Date(ms);
    const p = (n, w = 2) => String(n).padStart(w, '0');
    let v = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
    if (d.getSeconds() || d.getMilliseconds()) v += `:${p(d.getSeconds())}`;
    if (d.getMilliseconds()) v += `.${p(d.getMilliseconds(), 3)}`;
    return v;
}

// Unix ms of a picker's local time (valueAsNumber would read it as UTC), or NaN.
function pickerMs(id) {
    const v = $(id).value;
    return v ? new Date(v).getTime() : NaN;
}

function fmtMs(ms) {
    return `${(ms / 1000).toFixed(1)} s`;
}

// "last N h": the window ends now.
function lastHours(h) {
    const now = Date.now();
    $('rec-start').value = pickerValue(now - h * 3600000);
    $('rec-end').value = pickerValue(now);
    queryRecordings();
}

async function queryRecordings() {
    const r = state.rec;
    const gen = ++r.gen;
    const startTimeMs = pickerMs('rec-start');
    const endTimeMs = pickerMs('rec-end');
    try {
        if (!state.endpointId) throw new Error('register an endpoint first');
        if (!Number.isSafeInteger(startTimeMs) || !Number.isSafeInteger(endTimeMs) || startTimeMs < 0)
            throw new Error('pick the window\'s start and end');
        if (startTimeMs >= endTimeMs) throw new Error('the window\'s start must be before its end');
        if (endTimeMs - startTimeMs > DAY_MS) throw new Error('the window is at most 24 h: narrow it');
        const where = { target: target().target, cameraId: $('camera').value.trim() };
        recStatus(`querying ${new Date(startTimeMs).toLocaleString()} .. ${new Date(endTimeMs).toLocaleString()}`);
        const data = await post('/recordings/query',
            { endpointId: state.endpointId, ...where, startTimeMs, endTimeMs, limit: 32 }, QUERY_MS);
        if (gen !== r.gen) return;
        r.list = data.list;
        r.target = where;
        renderRecordings();
        $('rec-next').disabled = !data.hasMore;
        recStatus(`${data.list.length} recording${data.list.length === 1 ? '' : 's'} starting in the window` +
            (data.hasMore ? '; hasMore: narrow the window (Next goes on after the last row)' : ''));
    } catch (err) {
        if (gen !== r.gen) return;
        r.list = [];
        renderRecordings();
        $('rec-next').disabled = true;
        if (err instanceof ApiError) showError('recordings/query', err);
        recStatus(`recordings/query refused: ${reasonOf(err)}`, true);
    }
}

// After a truncated page: the same end, the start just past the last row's.
// The API has no cursor: another recording that starts in that same
// millisecond and sorts after it is not shown.
function nextRecordings() {
    const last = state.rec.list[state.rec.list.length - 1];
    if (!last) return;
    $('rec-start').value = pickerValue(last.startTimeMs + 1);
    queryRecordings();
}

function renderRecordings() {
    const rows = state.rec.list.map((x, i) => {
        const tr = document.createElement('tr');
        tr.dataset.recordingId = x.recordingId;
        tr.dataset.startTimeMs = String(x.startTimeMs);
        tr.dataset.durationMs = String(x.durationMs);
        cell(tr, new Date(x.startTimeMs).toLocaleString());
        cell(tr, fmtMs(x.durationMs));
        cell(tr, x.audioCodec ? `${x.videoCodec} + ${x.audioCodec}` : x.videoCodec);
        cell(tr, String(x.recordingVersion));
        cell(tr, x.available ? 'yes' : 'no');
        const play = document.createElement('button');
        play.className = 'play';
        play.textContent = 'Play';
        play.dataset.index = String(i);
        play.disabled = !x.available; // the catalog says the camera has it not
        cell(tr, '').append(play);
        return tr;
    });
    $('rec-body').replaceChildren(...rows);
}

// The playback's fields and the buttons its phase allows (the platform
// refuses the others anyway: conflict).
function showPlayback() {
    const s = state.pb;
    $('pb-recording').textContent = s ? `${s.rec.recordingId} (version ${s.rec.recordingVersion}, ${fmtMs(s.rec.durationMs)})` : 'none';
    $('pb-session-id').textContent = s ? s.sessionId : 'none';
    $('pb-phase').textContent = !s ? 'none'
        : `${s.phase}${s.reason ? ' (' + s.reason + ')' : ''}` +
          `${s.eventPositionMs !== null ? ' at ' + s.eventPositionMs + ' ms' : ''}${s.eventSeq ? ', eventSeq ' + s.eventSeq : ''}`;
    $('pb-phases').textContent = s ? s.phases.join(' → ') : 'none';
    $('pb-position').textContent = s && s.positionMs !== null ? `${s.positionMs} ms (${s.positionFrom})` : 'none';
    const ph = s ? s.phase : 'none';
    $('pb-play').disabled = !(ph === 'ready' || ph === 'paused');
    $('pb-pause').disabled = ph !== 'playing';
    $('pb-seek').disabled = !(ph === 'ready' || ph === 'playing' || ph === 'paused');
    $('pb-stop').disabled = !s || ph === 'ended';
}

function setPhase(s, phase, reason) {
    s.phase = phase;
    s.reason = reason || '';
    const shown = reason ? `${phase} (${reason})` : phase;
    if (s.phases[s.phases.length - 1] !== shown) s.phases.push(shown);
}

// interaction.state of the playback: the phase is data.playback while the
// session lives (with its positionMs), then ended with its reason. An event
// older than one shown (eventSeq) changes nothing. The position line is the
// last playbackControl result's.
function onPlaybackState(ev) {
    const s = state.pb;
    const d = ev.data || {};
    if (Number.isSafeInteger(ev.eventSeq)) {
        if (ev.eventSeq <= s.eventSeq) return;
        s.eventSeq = ev.eventSeq;
    }
    if (d.state === 'ended') {
        setPhase(s, 'ended', d.reason);
        stopPlaybackPeer();
    } else if (d.playback) {
        setPhase(s, d.playback);
    }
    s.eventPositionMs = Number.isSafeInteger(d.positionMs) ? d.positionMs : null;
    showPlayback();
}

function stopPlaybackPeer() {
    const s = state.pb;
    if (!s) return;
    clearInterval(s.statsTimer);
    s.statsTimer = 0;
    if (s.pc) {
        s.pc.close();
        s.pc = null;
        $('pb-peer-state').textContent = 'closed';
    }
}

// The video frames decoded so far (inbound-rtp): that the picture moves
// while playing and stands still while paused.
async function readFrames(s, pc) {
    try {
        const stats = await pc.getStats();
        let frames = 0;
        stats.forEach((r) => {
            if (r.type === 'inbound-rtp' && r.kind === 'video') frames += r.framesDecoded || 0;
        });
        if (state.pb === s && s.pc === pc) $('pb-frames').textContent = String(frames);
    } catch {
        // closed meanwhile: the last count stays
    }
}

async function openPlayback(rec) {
    try {
        if (state.pb && state.pb.phase !== 'ended') throw new Error('a playback is open: stop it first');
        const where = state.rec.target;
        const open = await command('interaction.open', { target: where.target },
            { purpose: 'recordPlayback', cameraId: where.cameraId, recordingId: rec.recordingId });
        const ev = await open.result;
        const data = expectOk('interaction.open', ev);
        const sessionId = data.sessionId || ev.sessionId;
        if (!sessionId) throw new Error('interaction.open: the result carries no sessionId');
        const s = {
            sessionId, mediaRevision: data.mediaRevision || 1, pc: null, rec, phase: '', reason: '', phases: [],
            eventSeq: 0, eventPositionMs: null, positionMs: null, positionFrom: '', statsTimer: 0,
        };
        state.pb = s;
        setPhase(s, data.state || 'invited');
        $('pb-seek').max = String(Math.max(0, rec.durationMs - 1)); // a position inside: 0 <= p < durationMs
        $('pb-seek').value = '0';
        $('pb-seek-to').textContent = '';
        $('pb-frames').textContent = '0';
        showPlayback();
        pbStatus(`opened ${rec.recordingId}: nothing plays before Play`);

        const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
        s.pc = pc;
        pc.addTransceiver('video', { direction: 'recvonly' });
        if (rec.audioCodec) pc.addTransceiver('audio', { direction: 'recvonly' });
        const stream = new MediaStream();
        pc.ontrack = (e) => {
            stream.addTrack(e.track);
            $('pb-video').srcObject = stream;
        };
        s.statsTimer = setInterval(() => readFrames(s, pc), STATS_MS);
        await negotiate(s, pc, 'pb-peer-state', (r) => (s.mediaRevision = r));
    } catch (err) {
        showError('playback', err);
        pbStatus(`playback refused: ${reasonOf(err)}`, true);
        stopPlaybackPeer();
    }
}

// interaction.playbackControl: its result says playing or paused and the
// camera's position after it.
async function playbackControl(operation, positionMs) {
    const s = state.pb;
    try {
        if (!s || s.phase === 'ended') throw new Error('no playback: press Play on a recording first');
        const params = { operation, mediaRevision: s.mediaRevision };
        if (operation === 'seek') params.positionMs = positionMs;
        const c = await command('interaction.playbackControl', { sessionId: s.sessionId }, params);
        const r = expectOk(`playbackControl ${operation}`, await c.result);
        if (state.pb !== s) return;
        if (Number.isSafeInteger(r.positionMs)) {
            s.positionMs = r.positionMs;
            s.positionFrom = `${operation} result: ${r.state}`;
            if (operation !== 'seek') $('pb-seek').value = String(r.positionMs);
        }
        showPlayback();
        pbStatus(`${operation}: ${r.state} at ${r.positionMs} ms`);
    } catch (err) {
        showError(`playbackControl ${operation}`, err);
        pbStatus(`${operation} refused: ${reasonOf(err)}`, true);
        if (state.pb === s) showPlayback();
    }
}

async function stopPlayback() {
    const s = state.pb;
    try {
        if (!s || s.phase === 'ended') throw new Error('no playback');
        const c = await command('interaction.end', { sessionId: s.sessionId }, { reason: 'userStopped' });
        expectOk('interaction.end', await c.result);
        pbStatus('stopped');
    } catch (err) {
        showError('interaction.end', err);
        pbStatus(`stop refused: ${reasonOf(err)}`, true);
    } finally {
        stopPlaybackPeer();
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

// ---- voice message: upload, messageSend, its outcome -------------------------
// docs/messages.md: POST /uploads (multipart, part `file`) gives a
// contentRef; messageSend names it with a deliveryId of ours and an
// expiry; the camera fetches it, plays it and answers; the result carries
// the deliveryId and played / expired / failed. Recording captures the
// microphone as 16-bit PCM and writes a WAV: MediaRecorder gives WebM in
// Chromium, which the upload refuses (Ogg, WAV or MP3 only).

const MSG_RECORD_MAX_S = 30;

function msgShow(fields) {
    for (const [k, v] of Object.entries(fields)) $(`msg-${k}`).textContent = v;
}

// The recorded or chosen audio: {blob, name}.
function msgSetAudio(blob, name, what) {
    state.msg.audio = { blob, name };
    if (state.msg.url) URL.revokeObjectURL(state.msg.url);
    state.msg.url = URL.createObjectURL(blob);
    $('msg-preview').src = state.msg.url;
    msgShow({ audio: `${what} (${blob.size} bytes)`, 'content-ref': 'none', 'delivery-id': 'none', outcome: 'none' });
}

// Mono 16-bit PCM at the context's rate as a WAV file.
function wavOf(chunks, rate) {
    const n = chunks.reduce((a, c) => a + c.length, 0);
    const buf = new DataView(new ArrayBuffer(44 + 2 * n));
    const str = (off, s) => [...s].forEach((ch, i) => buf.setUint8(off + i, ch.charCodeAt(0)));
    str(0, 'RIFF'); buf.setUint32(4, 36 + 2 * n, true); str(8, 'WAVE');
    str(12, 'fmt '); buf.setUint32(16, 16, true); buf.setUint16(20, 1, true); buf.setUint16(22, 1, true);
    buf.setUint32(24, rate, true); buf.setUint32(28, 2 * rate, true); buf.setUint16(32, 2, true); buf.setUint16(34, 16, true);
    str(36, 'data'); buf.setUint32(40, 2 * n, true);
    let off = 44;
    for (const c of chunks)
        for (const x of c) {
            buf.setInt16(off, Math.max(-1, Math.min(1, x)) * 0x7fff, true);
            off += 2;
        }
    return new Blob([buf], { type: 'audio/wav' });
}

async function msgRecord() {
    if (state.msg.rec || state.msg.starting) return; // one recording at a time
    state.msg.starting = true;
    $('msg-record').disabled = true;
    let stream = null, ctx = null;
    try {
        if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia)
            throw new Error('no microphone here: getUserMedia needs a secure context (https, or http on 127.0.0.1 or localhost)');
        stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
        ctx = new AudioContext();
        const src = ctx.createMediaStreamSource(stream);
        // ScriptProcessor: no module file to serve (an AudioWorklet needs one).
        const node = ctx.createScriptProcessor(4096, 1, 1);
        const chunks = [];
        node.onaudioprocess = (e) => chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
        src.connect(node);
        node.connect(ctx.destination);
        const rec = { stream, ctx, node, chunks, timer: setTimeout(msgRecordStop, MSG_RECORD_MAX_S * 1000) };
        state.msg.rec = rec;
        $('msg-record-stop').disabled = false;
        msgShow({ audio: 'recording…' });
    } catch (err) {
        // The microphone off again whatever failed after it was granted.
        if (stream) stream.getTracks().forEach((t) => t.stop());
        if (ctx) ctx.close();
        $('msg-record').disabled = false;
        showError('record', err);
    } finally {
        state.msg.starting = false;
    }
}

function msgRecordStop() {
    const rec = state.msg.rec;
    if (!rec) return;
    state.msg.rec = null;
    clearTimeout(rec.timer);
    rec.node.disconnect();
    rec.stream.getTracks().forEach((t) => t.stop());
    const rate = rec.ctx.sampleRate;
    rec.ctx.close();
    $('msg-record').disabled = false;
    $('msg-record-stop').disabled = true;
    const samples = rec.chunks.reduce((a, c) => a + c.length, 0);
    msgSetAudio(wavOf(rec.chunks, rate), 'recording.wav', `recorded ${(samples / rate).toFixed(1)} s, WAV`);
}

async function msgSend() {
    if (state.msg.sending) return; // a double click sends once
    state.msg.sending = true;
    $('msg-send').disabled = true;
    try {
        if (!state.msg.audio) throw new Error('record or choose an audio file first');
        if (!state.endpointId) throw new Error('register an endpoint first');
        const ttl = Math.round(Number($('msg-ttl').value));
        if (!(ttl >= 1)) throw new Error('expires in: at least one second');
        // The result goes to this endpoint: the message may not outlive it (400).
        if (ttl > 86400) throw new Error('expires in: at most a day (message_ttl_max_ms)');
        const form = new FormData();
        form.append('file', state.msg.audio.blob, state.msg.audio.name);
        const res = await fetch(API + '/uploads', {
            method: 'POST', headers: { authorization: `Bearer ${state.token}` }, body: form,
            cache: 'no-store', credentials: 'omit',
        });
        const env = await res.json();
        if (env.code !== 200) throw new ApiError(res.status, env);
        const deliveryId = newToken();
        msgShow({ 'content-ref': `${env.data.contentRef} (${env.data.contentType})`, 'delivery-id': deliveryId,
                  outcome: 'sent…' });
        // Its result may take as long as the message may wait for its camera.
        const c = await command('messageSend', target(), {
            deliveryId, kind: $('msg-kind').value, expiresAt: Date.now() + ttl * 1000, contentRef: env.data.contentRef,
        }, ttl * 1000 + RESULT_WAIT_MS);
        msgShow({ outcome: 'accepted, waiting for the camera' });
        const ev = await c.result;
        msgShow({ outcome: `${ev.data.state}${ev.data.reason ? ' (' + ev.data.reason + ')' : ''}` });
    } catch (err) {
        msgShow({ outcome: err instanceof ApiError ? 'refused' : 'failed' });
        showError('voice message', err);
    } finally {
        state.msg.sending = false;
        $('msg-send').disabled = false;
    }
}

// ---- AI assistant: the session, consents, processors (docs/ai.md) -------------

const CONSENTS = '/api/v1/im/vision-consents';

function aiShowProcs() {
    const a = state.ai;
    $('ai-procs').textContent = a && a.procs.size ? [...a.procs].map(([id, k]) => `${id} (${k})`).join(', ') : 'none';
}

function stopAi() {
    const a = state.ai;
    if (!a) return;
    if (a.pc) a.pc.close();
    if (a.mic) a.mic.getTracks().forEach((t) => t.stop());
    a.pc = null;
    a.mic = null;
    a.procs.clear();
    aiShowProcs();
    $('ai-peer').textContent = 'closed';
}

// interaction.open aiVision -> the offer: the microphone (audio sendonly), the
// assistant's voice (audio recvonly), the camera (video recvonly: paused
// until a consent covers it).
async function openAi() {
    try {
        if (state.ai && state.ai.pc) throw new Error('an AI session is open: end it first');
        const mic = await navigator.mediaDevices.getUserMedia({ audio: true });
        const open = await command('interaction.open', target(), { purpose: 'aiVision', cameraId: $('camera').value.trim() });
        const ev = await open.result;
        const data = expectOk('interaction.open', ev);
        const sessionId = data.sessionId || ev.sessionId;
        if (!sessionId) throw new Error('interaction.open: the result carries no sessionId');
        state.ai = { sessionId, mediaRevision: 1, pc: null, mic, consent: null, procs: new Map() };
        $('ai-session').textContent = sessionId;
        $('ai-state').textContent = data.state || 'invited';
        const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
        state.ai.pc = pc;
        pc.addTransceiver(mic.getAudioTracks()[0], { direction: 'sendonly' });
        pc.addTransceiver('audio', { direction: 'recvonly' });
        pc.addTransceiver('video', { direction: 'recvonly' });
        pc.ontrack = (e) => {
            const el = e.track.kind === 'video' ? $('ai-video') : $('ai-voice');
            el.srcObject = new MediaStream([e.track]);
        };
        await negotiate(state.ai, pc, 'ai-peer', (r) => (state.ai.mediaRevision = r));
    } catch (err) {
        showError('AI session', err);
        stopAi();
    }
}

async function endAi() {
    try {
        if (!state.ai) throw new Error('no AI session');
        const c = await command('interaction.end', { sessionId: state.ai.sessionId }, { reason: 'userHangup' });
        expectOk('interaction.end', await c.result);
    } catch (err) {
        showError('interaction.end', err);
    } finally {
        stopAi();
    }
}

function aiShowConsent() {
    const k = state.ai && state.ai.consent;
    $('ai-consent-id').textContent = k
        ? `${k.consentId} revision ${k.revision}${k.revokedAt ? ', revoked' : `, until ${new Date(k.expiresAt).toLocaleTimeString()}`}`
        : 'none';
}

// The consent: this session's camera track, until the expiry (explicit Unix ms).
async function aiConsent() {
    try {
        if (!state.ai) throw new Error('open an AI session first');
        const ttl = Math.round(Number($('ai-ttl').value));
        if (!(ttl >= 1)) throw new Error('the expiry is a whole number of seconds, at least 1');
        const data = await postTo(`${CONSENTS}/create`, {
            msgToken: newToken(), sourceSessionId: state.ai.sessionId, cameraId: $('camera').value.trim(),
            trackId: 'video-1', expectedMediaRevision: state.ai.mediaRevision, expiresAt: Date.now() + ttl * 1000,
        }, 10000);
        state.ai.consent = data.consent;
        aiShowConsent();
    } catch (err) {
        showError('consent', err);
    }
}

async function aiRevoke() {
    try {
        const k = state.ai && state.ai.consent;
        if (!k) throw new Error('no consent signed here');
        const data = await postTo(`${CONSENTS}/revoke`, { consentId: k.consentId, expectedRevision: k.revision }, 10000);
        state.ai.consent = data.consent;
        aiShowConsent();
    } catch (err) {
        showError('revoke', err);
    }
}

async function aiAttach(processor) {
    try {
        const a = state.ai;
        if (!a) throw new Error('open an AI session first');
        if (!a.consent) throw new Error('sign a consent first');
        const processorId = `${processor}-${a.procs.size + 1}`;
        const params = { processorId, processor, operation: 'attach', consentIds: [a.consent.consentId],
            sourceTrackIds: processor === 'aiAssist' ? ['video-1', 'mic'] : ['mic'] };
        if (processor === 'translation') params.targetLanguage = 'es-ES';
        const c = await command('interaction.processorControl', { sessionId: a.sessionId }, params);
        expectOk('processorControl attach', await c.result);
        a.procs.set(processorId, processor);
        aiShowProcs();
    } catch (err) {
        showError('attach', err);
    }
}

async function aiDetach() {
    try {
        const a = state.ai;
        if (!a || !a.procs.size) throw new Error('no processor attached');
        for (const [processorId, processor] of [...a.procs]) {
            const c = await command('interaction.processorControl', { sessionId: a.sessionId },
                { processorId, processor, operation: 'detach', sourceTrackIds: processor === 'aiAssist' ? ['video-1'] : ['mic'] });
            expectOk('processorControl detach', await c.result);
            a.procs.delete(processorId);
        }
        aiShowProcs();
    } catch (err) {
        showError('detach', err);
    }
}

// Translation of my voice in the talk call (docs/ai.md): the camera hears
// the translator instead of me; its consent is the one signed in the AI
// panel.
const TALK_TRANSLATOR = 'talk-translation';

async function talkTranslate(on) {
    try {
        const s = state.talk.session;
        if (!s || !s.sessionId) throw new Error('talk on the camera first');
        const params = { processorId: TALK_TRANSLATOR, processor: 'translation', operation: on ? 'attach' : 'detach',
            sourceTrackIds: ['speaker'] };
        if (on) {
            const k = state.ai && state.ai.consent;
            if (!k || k.revokedAt) throw new Error('sign a consent in the AI assistant panel first');
            params.consentIds = [k.consentId];
            params.targetLanguage = 'es-ES';
        }
        const c = await command('interaction.processorControl', { sessionId: s.sessionId }, params);
        expectOk(`processorControl ${params.operation}`, await c.result);
        $('talk-translation').textContent = on ? 'English to Spanish' : 'off';
    } catch (err) {
        showError('translation', err);
    }
}

// interaction.processor: what the processors heard, answered, translated.
function onProcessor(ev) {
    const a = state.ai;
    const d = ev.data || {};
    const talk = state.talk.session;
    if (talk && ev.sessionId === talk.sessionId) {
        if (d.kind === 'caption') $('talk-caption').textContent = `${d.text} → ${d.translated}`;
        else if (d.kind === 'failed' || d.kind === 'detached') $('talk-translation').textContent = d.kind === 'failed' ? `failed: ${d.reason}` : 'off';
        return;
    }
    if (!a || ev.sessionId !== a.sessionId) return;
    if (d.kind === 'heard') $('ai-heard').textContent = d.text;
    else if (d.kind === 'answer')
        $('ai-answer').textContent = d.faces === undefined ? d.text : `${d.text} (faces ${d.faces}, brightness ${d.brightness})`;
    else if (d.kind === 'caption') $('ai-caption').textContent = `${d.text} → ${d.translated}`;
    else if (d.kind === 'failed' || d.kind === 'detached') {
        a.procs.delete(d.processorId);
        aiShowProcs();
        if (d.kind === 'failed') showError('processor', new Error(`${d.processorId} failed: ${d.reason}`));
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
{
    // the recordings' window: the last hour until another is picked
    const now = Date.now();
    $('rec-start').value = pickerValue(now - 3600000);
    $('rec-end').value = pickerValue(now);
}
$('connect').addEventListener('click', connect);
$('disconnect').addEventListener('click', closePush);
$('pull').addEventListener('click', pull);
$('live-open').addEventListener('click', openLiveView);
$('live-pause').addEventListener('click', () => trackControl('pause'));
$('live-resume').addEventListener('click', () => trackControl('resume'));
$('live-end').addEventListener('click', endLiveView);
$('live-restart').addEventListener('click', () => restartIce(state.live, 'peer-state', (r) => setLive({ mediaRevision: r })));
$('talk-mute').addEventListener('click', () => talkMic('stop'));
$('talk-unmute').addEventListener('click', () => talkMic('publish'));
$('talk-translate').addEventListener('click', () => talkTranslate(true));
$('talk-untranslate').addEventListener('click', () => talkTranslate(false));
$('bell-accept').addEventListener('click', () => bellDecide('accept'));
$('bell-decline').addEventListener('click', () => bellDecide('decline'));
$('bell-hangup').addEventListener('click', bellHangup);
$('bell-handover').addEventListener('click', bellHandover);
$('talk-start').addEventListener('click', startCall);
$('talk-join').addEventListener('click', joinCall);
$('talk-open').addEventListener('click', openTalk);
$('talk-leave').addEventListener('click', leaveSelf);
$('talk-hangup').addEventListener('click', hangUp);
$('roster-body').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    const tr = b && b.closest('tr');
    if (!tr) return;
    if (b.classList.contains('mute')) setAudio(tr.dataset.userId, b.dataset.allowed === 'true');
    else if (b.classList.contains('remove')) leave(tr.dataset.userId, Number(b.dataset.memberEpoch));
});
$('rec-1h').addEventListener('click', () => lastHours(1));
$('rec-6h').addEventListener('click', () => lastHours(6));
$('rec-24h').addEventListener('click', () => lastHours(24));
$('rec-query').addEventListener('click', queryRecordings);
$('rec-next').addEventListener('click', nextRecordings);
$('rec-body').addEventListener('click', (e) => {
    const b = e.target.closest('button.play');
    const rec = b && state.rec.list[Number(b.dataset.index)];
    if (rec) openPlayback(rec);
});
$('pb-play').addEventListener('click', () => {
    // Started by the click itself: a muted autoplay out of view would stay paused.
    $('pb-video').play().catch(() => {});
    playbackControl('play');
});
$('pb-pause').addEventListener('click', () => playbackControl('pause'));
$('pb-stop').addEventListener('click', stopPlayback);
$('pb-seek').addEventListener('input', () => ($('pb-seek-to').textContent = `${$('pb-seek').value} ms`));
$('pb-seek').addEventListener('change', () => playbackControl('seek', Number($('pb-seek').value)));
$('msg-file').addEventListener('change', () => {
    const f = $('msg-file').files[0];
    if (f) msgSetAudio(f, f.name, `${f.name}, chosen`);
});
$('msg-record').addEventListener('click', msgRecord);
$('msg-record-stop').addEventListener('click', msgRecordStop);
$('msg-send').addEventListener('click', msgSend);
$('ai-open').addEventListener('click', openAi);
$('ai-end').addEventListener('click', endAi);
$('ai-consent').addEventListener('click', aiConsent);
$('ai-revoke').addEventListener('click', aiRevoke);
$('ai-assist').addEventListener('click', () => aiAttach('aiAssist'));
$('ai-translate').addEventListener('click', () => aiAttach('translation'));
$('ai-detach').addEventListener('click', aiDetach);
$('action-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sendDevice('device.action', () => ({ actionID: $('action-id').value.trim(), input: parseJson('action-input') }));
});
$('control-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sendDevice('device.propertyControl', () => ({ properties: parseJson('control-props') }));
});
