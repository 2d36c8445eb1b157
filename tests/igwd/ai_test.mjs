// ai_test.mjs - AI sessions and vision consents (issue 27) through the
// public API. Run by ai_test.sh, one part per igwd it starts (IGW_PART):
//   ledger:  Signaling disabled, no session: get-one and revoke on consents
//            written straight into the ledger; who may reach them.
//   session: the AI session (purpose aiVision) with igw-vcam as the camera
//            and Chromium as the application: its three sections, its
//            source row, its camera track paused until a consent covers it
//            and paused again at once when none does; create's rules.
//   assist:  the reference assistant (igw-proc aiAssist) on a camera
//            showing two faces: Chromium's microphone asks "how many people
//            are there" (espeak-ng), the answer counts them and is heard;
//            after the revoke it cannot see; killed, the call goes on.
//   pattern: the same question on the test pattern: nobody.
//   translate: igw-proc translation: "hello, the house is big" spoken into
//            the microphone comes back as a Spanish caption and voice;
//            configure's rules.
//   talk:    the same translation in an IM talk call (purpose ipcTalk): the
//            member's voice goes to the translator and its Spanish voice to
//            the camera's speaker (igw-vcam's --speaker-log), until detached.
//   ticket:  a revoke while a frame's ticket is outstanding refuses its
//            consumption (tests/igwd/ticket_proc.mjs as the processor).
//
// env: IGW_PART, IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_PG_DSN, IGW_JWT_KEY_FILE,
// IGW_SOUNDS (count.wav, sentence.wav), IGW_PICTURE (two faces).
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { Checker, launch, sleep, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, call, app, target, camera, accepted, startCamera, openSession, speakerLevels } from './live_lib.mjs';

const BASE = process.env.IGW_BASE;
const c = new Checker();
const sql = (q) => {
    const r = spawnSync('psql', [process.env.IGW_PG_DSN, '-XAtq', '-v', 'ON_ERROR_STOP=1', '-c', q], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`psql: ${r.stderr}`);
    return r.stdout.trim();
};
const V = '/api/v1/im/vision-consents';
const CONSENT_KEYS = ['consentId', 'scope', 'sourceSessionId', 'cameraId', 'trackId', 'mediaRevision', 'expiresAt',
    'grantedAt', 'revision', 'revokedAt'];

/** A consent of user u written straight into the ledger (the create route
 * needs a live AI session; the ledger's reads and revokes do not). */
function ledgerRow(u, id, { revision = 1, revokedAt = 0, expiresAt = Date.now() + 600000, source = `src-${id}`,
    cam = 'cam-1', track = 'video-1', mediaRevision = 1 } = {}) {
    sql(`INSERT INTO consents (consent_id, enterprise_id, user_id, msg_token, scope, source_session_id, camera_id,
            track_id, media_revision, expires_at_ms, granted_at_ms, revision, revoked_at_ms, state)
         VALUES ('${id}', ${u.enterpriseId}, ${u.userId}, 'tok-${id}', 'cameraAI', '${source}', '${cam}', '${track}',
                 ${mediaRevision}, ${expiresAt}, ${Date.now()}, ${revision}, ${revokedAt},
                 '${revokedAt ? 'revoked' : 'granted'}')`);
}
const rowOf = (id) => sql(`SELECT revision || '/' || revoked_at_ms || '/' || state FROM consents WHERE consent_id = '${id}'`);

/** POST with raw headers (no login helper): {status, body}. */
async function raw(path, headers, body) {
    const r = await fetch(BASE + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
}

/** A login token signed with igwd's own key but with claims chosen here. */
function forged(claims) {
    const key = readFileSync(process.env.IGW_JWT_KEY_FILE, 'utf8').replace(/\n$/, '');
    const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    return `${head}.${createHmac('sha256', key).update(head).digest('base64url')}`;
}

async function ledger() {
    const me = DEMO.user, other = DEMO.otherUser, far = DEMO.otherEnterpriseUser;
    const id = `c-${process.pid}`;
    const exp = Date.now() + 600000;
    ledgerRow(me, id, { expiresAt: exp });

    // ---- get-one: Signaling off, no session, no owner: the ledger answers.
    let r = await call(me, `${V}/get-one`, { consentId: id });
    const k = r.body.data?.consent;
    c.check(r.status === 200 && r.body.code === 200 && k && JSON.stringify(Object.keys(k)) === JSON.stringify(CONSENT_KEYS),
        `get-one with Signaling disabled: 200, the Consent's fields exactly (${JSON.stringify(r.body)})`);
    c.check(k && k.consentId === id && k.scope === 'cameraAI' && k.sourceSessionId === `src-${id}` && k.cameraId === 'cam-1' &&
        k.trackId === 'video-1' && k.mediaRevision === 1 && k.expiresAt === exp && k.revision === 1 && k.revokedAt === 0,
        'get-one: the row as signed, granted (revokedAt 0)');
    r = await call(me, `${V}/get-one`, { consentId: `${id}-none` });
    const unknown = JSON.stringify(r.body);
    c.check(r.status === 404 && r.body.code === 100404 && r.body.data?.path === '/consentId',
        `get-one of an unknown id: 404 at /consentId (${unknown})`);
    r = await call(other, `${V}/get-one`, { consentId: id });
    c.check(r.status === 404 && JSON.stringify(r.body) === unknown,
        `get-one by another user of the enterprise (an administrator's token is a user's): the same 404 as unknown (${JSON.stringify(r.body)})`);
    r = await call(far, `${V}/get-one`, { consentId: id });
    c.check(r.status === 404 && JSON.stringify(r.body) === unknown, `get-one by another enterprise's user: the same 404 (${JSON.stringify(r.body)})`);
    r = await raw(`${V}/get-one`, { authorization: DEMO.device.authorization }, { consentId: id });
    c.check(r.status === 401 && r.body.code === 100401, `get-one with the device's credentials: 401 (${JSON.stringify(r.body)})`);
    const now = Math.floor(Date.now() / 1000);
    r = await raw(`${V}/get-one`, { authorization: `Bearer ${forged({ sub: String(me.userId), ent: '*', iat: now, exp: now + 600 })}` },
        { consentId: id });
    c.check(r.status === 401 && r.body.code === 100401, `get-one with a wildcard enterprise, well signed: 401 (${JSON.stringify(r.body)})`);
    r = await raw(`${V}/get-one`, { authorization: `Bearer ${forged({ sub: String(me.userId), ent: String(far.enterpriseId), iat: now, exp: now + 600 })}` },
        { consentId: id });
    c.check(r.status === 403 && r.body.code === 100403 && !r.body.data?.consent,
        `get-one as the user in an enterprise not its own, well signed: 403, the login's refusal (${JSON.stringify(r.body)})`);
    r = await raw(`${V}/get-one`, { authorization: `Bearer ${me.token}`, 'x-terminal-id': 'mobile-7f3a', 'x-device-id': 'phone-1' },
        { consentId: id });
    c.check(r.status === 200 && r.body.data?.consent?.consentId === id,
        `a mobile terminal id beside the login is not refused (${r.status})`);
    r = await call(me, `${V}/get-one`, { consentId: id, userId: String(other.userId) });
    c.check(r.status === 400 && r.body.data?.path === '/userId', `get-one naming a user in the body: 400 at /userId (${JSON.stringify(r.body)})`);

    // ---- revoke: a compare-and-set on the revision.
    r = await call(me, `${V}/revoke`, { consentId: id, expectedRevision: 2 });
    c.check(r.status === 409 && r.body.code === 100409 && r.body.data?.path === '/expectedRevision',
        `revoke with a revision it does not have: 409 at /expectedRevision (${JSON.stringify(r.body)})`);
    c.check(rowOf(id) === '1/0/granted', `the refused revoke changed nothing (${rowOf(id)})`);
    r = await call(other, `${V}/revoke`, { consentId: id, expectedRevision: 1 });
    c.check(r.status === 404 && r.body.data?.path === '/consentId', `revoke by another user: 404 (${JSON.stringify(r.body)})`);
    r = await call(far, `${V}/revoke`, { consentId: id, expectedRevision: 1 });
    c.check(r.status === 404, `revoke by another enterprise's user: 404 (${r.status})`);
    c.check(rowOf(id) === '1/0/granted', `nobody else revoked it (${rowOf(id)})`);
    const t0 = Date.now();
    r = await call(me, `${V}/revoke`, { consentId: id, expectedRevision: 1 });
    const first = r.body.data?.consent;
    c.check(r.status === 200 && first && first.revision === 2 && first.revokedAt >= t0 - 1000 && first.revokedAt <= Date.now() + 1000 &&
        first.expiresAt === exp && JSON.stringify(Object.keys(first)) === JSON.stringify(CONSENT_KEYS),
        `revoke at revision 1: 200, revision 2, revokedAt now (${JSON.stringify(r.body)})`);
    await new Promise((res) => setTimeout(res, 20));
    r = await call(me, `${V}/revoke`, { consentId: id, expectedRevision: 1 });
    c.check(r.status === 200 && JSON.stringify(r.body.data?.consent) === JSON.stringify(first),
        `revoke again with the same expectedRevision: the first result, byte for byte (${JSON.stringify(r.body)})`);
    c.check(rowOf(id) === `2/${first?.revokedAt}/revoked`, `the repeat refreshed nothing: revision 2, the first revokedAt (${rowOf(id)})`);
    r = await call(me, `${V}/revoke`, { consentId: id, expectedRevision: 2 });
    c.check(r.status === 409 && r.body.data?.path === '/expectedRevision',
        `revoke of a revoked consent at its new revision: 409 (revoked is terminal) (${JSON.stringify(r.body)})`);
    r = await call(me, `${V}/get-one`, { consentId: id });
    c.check(r.status === 200 && JSON.stringify(r.body.data?.consent) === JSON.stringify(first), 'get-one after: the revoked consent as revoked');
    r = await call(me, `${V}/revoke`, { consentId: id, expectedRevision: 9007199254740991 });
    c.check(r.status === 400 && r.body.data?.path === '/expectedRevision', `expectedRevision 2^53-1: 400 (it must stay below) (${r.status})`);

    // An expired consent is still readable and revocable (machine: expire keeps it granted).
    const old = `${id}-old`;
    ledgerRow(me, old, { expiresAt: Date.now() - 1000 });
    r = await call(me, `${V}/get-one`, { consentId: old });
    c.check(r.status === 200 && r.body.data?.consent?.revokedAt === 0, `an expired consent is still readable (${r.status})`);
    r = await call(me, `${V}/revoke`, { consentId: old, expectedRevision: 1 });
    c.check(r.status === 200 && r.body.data?.consent?.revision === 2, `and revocable (${JSON.stringify(r.body)})`);

    // Concurrent revokes at one revision: every one answers the same first result; one revision step.
    const race = `${id}-race`;
    ledgerRow(me, race);
    const all = await Promise.all(Array.from({ length: 8 }, () => call(me, `${V}/revoke`, { consentId: race, expectedRevision: 1 })));
    const bodies = new Set(all.map((x) => JSON.stringify(x.body.data?.consent)));
    c.check(all.every((x) => x.status === 200) && bodies.size === 1 && rowOf(race).startsWith('2/'),
        `8 concurrent revokes at revision 1: all 200 with one result, revision 2 (${all.map((x) => x.status)} ${rowOf(race)})`);
}

let seq = 0;
const tok = (p) => `${p}-${process.pid}-${++seq}`;

/** The sections of an SDP: [{kind, dir}] in order. */
function sections(sdp) {
    return sdp.split(/\r?\n(?=m=)/).slice(1).map((m) => ({
        kind: /^m=(\w+)/.exec(m)[1],
        dir: (/a=(sendrecv|sendonly|recvonly|inactive)/.exec(m) || [])[1],
    }));
}

/** Opens an AI session of application a with a Chromium page whose
 * microphone is a tone of hz (0: the fake microphone): {sid, v, answer}. */
async function openAi(a, browser, hz) {
    const { sid, v, offer, answer } = await openSession(c, a, browser, 'aiVision', tok,
        { purpose: 'aiVision', url: hz ? undefined : `${BASE}/healthz`, offer: (x) => x.offerAssistant(hz) });
    c.check(JSON.stringify(sections(offer)) === JSON.stringify([{ kind: 'audio', dir: 'sendonly' },
        { kind: 'audio', dir: 'recvonly' }, { kind: 'video', dir: 'recvonly' }]),
        `the application's offer: audio sendonly, audio recvonly, video recvonly (${JSON.stringify(sections(offer))})`);
    const st = await v.waitFor((x) => x.connectionState === 'connected', 10000).catch((x) => x);
    c.check(st.connectionState === 'connected', `the application's peer connects (${st.connectionState})`);
    await accepted(c, a, { msgToken: tok('state'), method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } }, 'mediaState connected');
    return { sid, v, answer };
}

async function session() {
    const me = DEMO.user;
    const a = await app(me);
    const cam = startCamera(process.env.IGW_VCAM, '[cam] ');
    const browser = await launch({ args: AUTOPLAY_ARGS });
    try {
        for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
        const { sid, v, answer } = await openAi(a, browser, 330);
        c.check(JSON.stringify(sections(answer)) === JSON.stringify([{ kind: 'audio', dir: 'recvonly' },
            { kind: 'audio', dir: 'sendonly' }, { kind: 'video', dir: 'sendonly' }]),
            `the answer: it hears the microphone, speaks on the second, sends the camera (${JSON.stringify(sections(answer))})`);
        const est = await a.state(sid, 'established', 20000);
        c.check(est, 'the AI session is established (transports up, the camera\'s media flowing)');
        await sleep(300);
        const row = sql(`SELECT owner_node || '|' || camera_id || '|' || track_id || '|' || media_revision || '|' || live || '|' ||
            (capability_revision = (SELECT max(message_id) FROM device_messages WHERE handle = 'media' AND msg_type = 'capability'
                                    AND method = 'report')) || '|' || (deadline_ms > ${Date.now()}) || '|' || connection_epoch
            FROM vision_sources WHERE session_id = '${sid}' AND user_id = ${me.userId}`);
        c.check(row === `ai-node|${camera}|video-1|1|true|true|true|1`,
            `its source row: owner node, the selection (camera, track, the latest capability report), generation 1, live, a deadline ahead, connection 1 (${row})`);
        await sleep(2000);
        let st = await v.stats();
        c.check(st.framesDecoded === 0 && st.videoPackets === 0,
            `no consent: the camera track stays paused, nothing reaches the application (${st.videoPackets} video packets)`);

        // ---- create: the rules before anything is signed.
        const base = { sourceSessionId: sid, cameraId: camera, trackId: 'video-1', expectedMediaRevision: 1 };
        const create = (u, body) => call(u, `${V}/create`, body);
        const refused = async (what, body, status, path, u = me) => {
            const r = await create(u, body);
            c.check(r.status === status && r.body.data?.path === path && !r.body.data?.consent,
                `create ${what}: ${status} at ${path} (${JSON.stringify(r.body)})`);
            return r;
        };
        const nConsents = () => Number(sql(`SELECT count(*) FROM consents WHERE source_session_id = '${sid}'`));
        await refused('with expiresAt in seconds', { ...base, msgToken: tok('k'), expiresAt: Math.floor(Date.now() / 1000) + 600 },
            400, '/expiresAt');
        await refused('with expiresAt in the past', { ...base, msgToken: tok('k'), expiresAt: Date.now() - 1000 }, 400, '/expiresAt');
        await refused('beyond the session deadline', { ...base, msgToken: tok('k'), expiresAt: Date.now() + 2 * 3600 * 1000 },
            400, '/expiresAt');
        await refused('naming another track', { ...base, trackId: 'mic', msgToken: tok('k'), expiresAt: Date.now() + 60000 },
            409, '/trackId');
        await refused('naming another camera', { ...base, cameraId: 'cam-9', msgToken: tok('k'), expiresAt: Date.now() + 60000 },
            409, '/trackId');
        await refused('for another media generation', { ...base, expectedMediaRevision: 2, msgToken: tok('k'),
            expiresAt: Date.now() + 60000 }, 409, '/expectedMediaRevision');
        await refused('for an unknown session', { ...base, sourceSessionId: 'no-such-session', msgToken: tok('k'),
            expiresAt: Date.now() + 60000 }, 404, '/sourceSessionId');
        await refused('by another user of the enterprise, on this session', { ...base, msgToken: tok('k'),
            expiresAt: Date.now() + 60000 }, 404, '/sourceSessionId', DEMO.otherUser);
        await refused('with a field naming the user', { ...base, msgToken: tok('k'), expiresAt: Date.now() + 60000,
            userId: String(me.userId) }, 400, '/userId');
        // The device in privacy mode (its reported property): the owner refuses.
        sql(`UPDATE devices SET properties = properties || '{"privacy": true}' WHERE product_id = '${target.productID}'
             AND device_name = '${target.deviceName}'`);
        await refused('while the camera reports privacy on', { ...base, msgToken: tok('k'), expiresAt: Date.now() + 60000 },
            403, '/cameraId');
        sql(`UPDATE devices SET properties = properties - 'privacy' WHERE product_id = '${target.productID}'
             AND device_name = '${target.deviceName}'`);
        c.check(nConsents() === 0, `nothing was signed by the refusals (${nConsents()})`);
        st = await v.stats();
        c.check(st.videoPackets === 0, `and the track stayed paused (${st.videoPackets})`);

        // ---- create: signed; the owner advances the track.
        const ct = tok('consent');
        const exp = Date.now() + 120000;
        const t1 = Date.now();
        let r = await create(me, { ...base, msgToken: ct, expiresAt: exp });
        const k = r.body.data?.consent;
        c.check(r.status === 200 && r.body.data.replay === false && k && k.scope === 'cameraAI' && k.sourceSessionId === sid &&
            k.cameraId === camera && k.trackId === 'video-1' && k.mediaRevision === 1 && k.expiresAt === exp &&
            k.revision === 1 && k.revokedAt === 0 && k.grantedAt >= t1 - 1000 && k.grantedAt <= Date.now() + 1000 &&
            JSON.stringify(Object.keys(k)) === JSON.stringify(CONSENT_KEYS),
            `create: 200, replay false, the consent as signed (${JSON.stringify(r.body)}, ${Date.now() - t1} ms)`);
        const cid = k && k.consentId;
        st = await v.waitFor((x) => x.framesDecoded > 0, 10000).catch((x) => x);
        c.check(st.framesDecoded > 0, `signed: the owner resumes the camera track, frames decode (${st.framesDecoded})`);
        r = await create(me, { ...base, msgToken: ct, expiresAt: exp });
        c.check(r.status === 200 && r.body.data.replay === true && JSON.stringify(r.body.data.consent) === JSON.stringify(k),
            `the same token and body again: replay true, the first consent (${JSON.stringify(r.body)})`);
        await refused('with the token and another expiry', { ...base, msgToken: ct, expiresAt: exp + 1000 }, 409, '/msgToken');
        await refused('with the token and another camera', { ...base, cameraId: 'cam-9', msgToken: ct, expiresAt: exp },
            409, '/msgToken');
        c.check(nConsents() === 1, `one consent for the token (${nConsents()})`);
        const race = tok('race');
        const all = await Promise.all(Array.from({ length: 6 }, () => create(me, { ...base, msgToken: race, expiresAt: exp })));
        const ids = new Set(all.map((x) => x.body.data?.consent?.consentId));
        c.check(all.every((x) => x.status === 200) && ids.size === 1 && all.filter((x) => x.body.data.replay === false).length >= 1 &&
            Number(sql(`SELECT count(*) FROM consents WHERE msg_token = '${race}'`)) === 1,
            `6 concurrent creates with one token: one consent, every answer names it (${all.map((x) => x.status)} ${ids.size})`);
        r = await call(DEMO.otherUser, `${V}/get-one`, { consentId: cid });
        c.check(r.status === 404, `another user cannot read it (${r.status})`);
        // Revoke the race's consent so only ct's covers the track.
        r = await call(me, `${V}/revoke`, { consentId: [...ids][0], expectedRevision: 1 });
        c.check(r.status === 200, `revoke the race's consent (${r.status})`);
        await sleep(300);
        st = await v.stats();
        const g1 = st.framesDecoded;
        await sleep(800);
        c.check((await v.stats()).framesDecoded > g1, 'another consent still covers it: frames go on');

        // Revoked through the API: paused again at once.
        const t0 = Date.now();
        r = await call(me, `${V}/revoke`, { consentId: cid, expectedRevision: 1 });
        c.check(r.status === 200, `revoke: 200 (${JSON.stringify(r.body)})`);
        await sleep(500);
        const f1 = (await v.stats()).videoPackets;
        await sleep(1500);
        const f2 = (await v.stats()).videoPackets;
        c.check(f2 === f1, `revoked: no video packet after the revoke (+${f2 - f1} in 1.5 s, ${Date.now() - t0} ms after it)`);

        // A consent of another generation or camera does not cover it.
        ledgerRow(me, `${cid}-g2`, { source: sid, cam: camera, mediaRevision: 2 });
        ledgerRow(me, `${cid}-other`, { source: sid, cam: 'cam-9', mediaRevision: 1 });
        sql(`SELECT pg_notify('igw_vision', '${sid}')`);
        await sleep(1500);
        const f3 = (await v.stats()).videoPackets;
        c.check(f3 === f2, `consents of another generation or camera do not resume it (+${f3 - f2})`);

        // The end: the source row is no longer live.
        const te = tok('end');
        await accepted(c, a, { msgToken: te, method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
        await a.state(sid, 'ended', 10000);
        await sleep(300);
        c.check(sql(`SELECT live FROM vision_sources WHERE session_id = '${sid}'`) === 'f', 'ended: its source row is no longer live');
        await v.close();
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited; // gone before the next part's camera takes its client id
    }
}

const SOUNDS = process.env.IGW_SOUNDS;

/** The processor events of application a since index from that pred accepts. */
const processorEvent = (a, pred, ms, from = 0) =>
    a.wait((e) => e.method === 'interaction.processor' && pred(e.data), ms, from);

/** processorControl: {r (HTTP), res (its result event)}. */
async function control(a, sid, params) {
    const t = tok('proc');
    const r = await a.command({ msgToken: t, method: 'interaction.processorControl', sessionId: sid, params });
    const res = r.status === 200 ? await a.result(t, 25000) : null;
    return { r, res };
}

/** An AI session with a consent, its camera showing `image` (or the
 * pattern) and Chromium's microphone saying `wav` over and over. */
async function aiWithConsent(wav, image, camArgs = []) {
    const me = DEMO.user;
    const a = await app(me);
    const cam = startCamera(process.env.IGW_VCAM, '[cam] ', [...(image ? ['--image', image] : []), ...camArgs]);
    const browser = await launch({ args: [...AUTOPLAY_ARGS, `--use-file-for-fake-audio-capture=${wav}`] });
    for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
    const { sid, v } = await openAi(a, browser, 0);
    c.check(await a.state(sid, 'established', 20000), 'established');
    const r = await call(me, `${V}/create`, { msgToken: tok('k'), sourceSessionId: sid, cameraId: camera, trackId: 'video-1',
        expectedMediaRevision: 1, expiresAt: Date.now() + 300000 });
    c.check(r.status === 200, `consent signed (${JSON.stringify(r.body)})`);
    return { me, a, cam, browser, sid, v, cid: r.body.data?.consent?.consentId };
}

const pgrep = (pattern) => spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);

async function assist() {
    const { me, a, cam, browser, sid, v, cid } = await aiWithConsent(`${SOUNDS}/count.wav`, process.env.IGW_PICTURE);
    try {
        let { r } = await control(a, sid, { processorId: 'eye', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['video-1', 'mic'], consentIds: ['no-such-consent'] });
        c.check(r.status === 403 && r.body.data?.path === '/command/params/consentIds/0',
            `attach naming a consent that is not yours: 403 at it (${JSON.stringify(r.body)})`);
        ({ r } = await control(a, sid, { processorId: 'eye', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['mic'], consentIds: [cid] }));
        c.check(r.status === 400 && r.body.data?.path === '/command/params/sourceTrackIds',
            `attach aiAssist without the camera's track: 400 (${JSON.stringify(r.body)})`);
        c.check(pgrep('igw-proc --kind aiAssist').length === 0, 'no processor started by the refusals');
        const from = a.events.length;
        let res;
        ({ r, res } = await control(a, sid, { processorId: 'eye', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['video-1', 'mic'], consentIds: [cid] }));
        c.check(r.status === 200 && res && res.code === 200 && res.data.state === 'attached' && res.data.processorId === 'eye',
            `attach aiAssist: accepted, its result attached (${JSON.stringify(res)})`);
        c.check(await processorEvent(a, (d) => d.kind === 'ready' && d.processorId === 'eye', 5000, from),
            'interaction.processor ready');
        // The microphone asks again and again: an utterance misheard (under
        // load) is answered as what was heard, and the next one is asked.
        const ans = await processorEvent(a, (d) => d.kind === 'answer' && typeof d.faces === 'number' &&
            /how many people/.test(d.question), 60000, from);
        c.check(ans && ans.data.faces === 2 && /\b2 people\b/.test(ans.data.text),
            `"how many people are there": the assistant counts the two faces of the picture (${JSON.stringify(ans && ans.data)})`);
        const heard = a.events.slice(from).find((e) => e.method === 'interaction.processor' && e.data.kind === 'heard' &&
            /how many people/.test(e.data.text));
        c.check(heard && /how many people/.test(heard.data.text), `it heard the question (${JSON.stringify(heard && heard.data)})`);
        let st = await v.waitFor((x) => x.audioPackets > 25, 10000).catch((x) => x);
        c.check(st.audioPackets > 25, `its spoken answer reaches the application (${st.audioPackets} audio packets)`);

        // Revoked: it looks no more; its next answer says it cannot see.
        const r2 = await call(me, `${V}/revoke`, { consentId: cid, expectedRevision: 1 });
        c.check(r2.status === 200, 'revoke');
        const after = a.events.length;
        const blind = await processorEvent(a, (d) => d.kind === 'answer', 30000, after);
        c.check(blind && blind.data.faces === undefined && /cannot see/.test(blind.data.text),
            `after the revoke the assistant cannot see (${JSON.stringify(blind && blind.data)})`);
        c.check(!a.events.slice(after).some((e) => e.method === 'interaction.processor' && typeof e.data.faces === 'number'),
            'no answer after the revoke carries what a frame showed');

        // Killed: the processor's failure, the call goes on.
        const pids = pgrep('igw-proc --kind aiAssist');
        c.check(pids.length === 1, `one assistant process (${pids})`);
        const k0 = a.events.length;
        spawnSync('kill', ['-9', ...pids]);
        const failed = await processorEvent(a, (d) => d.kind === 'failed' && d.processorId === 'eye', 10000, k0);
        c.check(failed && failed.data.reason, `killed: interaction.processor failed (${JSON.stringify(failed && failed.data)})`);
        await sleep(1000);
        c.check(!a.events.some((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'ended'),
            'the AI session goes on (no ended)');
        st = await v.stats();
        c.check(st.connectionState === 'connected', `its peer still connected (${st.connectionState})`);
        const t = tok('state');
        r = await a.command({ msgToken: t, method: 'interaction.mediaState', sessionId: sid, params: { mediaRevision: 1, state: 'connected' } });
        c.check(r.status === 200, `and it still takes commands (${r.status})`);
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
        await a.state(sid, 'ended', 10000);
        await sleep(1500);
        c.check(pgrep('igw-proc --kind').length === 0, 'no processor outlives its session');
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited; // gone before the next part's camera takes its client id
    }
}

async function pattern() {
    const { a, cam, browser, sid, cid } = await aiWithConsent(`${SOUNDS}/count.wav`, null);
    try {
        const from = a.events.length;
        const { res } = await control(a, sid, { processorId: 'eye2', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['video-1'], consentIds: [cid] });
        c.check(res && res.code === 200, `attach (${JSON.stringify(res)})`);
        const ans = await processorEvent(a, (d) => d.kind === 'answer' && typeof d.faces === 'number' && /people/.test(d.text), 60000, from);
        c.check(ans && ans.data.faces === 0 && /\b0 people\b/.test(ans.data.text),
            `on the test pattern the assistant finds nobody (${JSON.stringify(ans && ans.data)})`);
        const { res: det } = await control(a, sid, { processorId: 'eye2', processor: 'aiAssist', operation: 'detach',
            sourceTrackIds: ['video-1'] });
        c.check(det && det.code === 200 && det.data.state === 'detached', `detach: detached (${JSON.stringify(det)})`);
        await sleep(1500);
        c.check(pgrep('igw-proc --kind').length === 0, 'detached: its process is gone');
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited; // gone before the next part's camera takes its client id
    }
}

async function translate() {
    const { a, cam, browser, sid, v, cid } = await aiWithConsent(`${SOUNDS}/sentence.wav`, null);
    try {
        const configure = async (params) => {
            const t = tok('cfg');
            const r = await a.command({ msgToken: t, method: 'interaction.configure', sessionId: sid, params });
            return { r, res: r.status === 200 ? await a.result(t, 10000) : null };
        };
        let { r, res } = await configure({ sourceLanguage: 'en-US', targetLanguage: 'es-ES', speakerId: 'me', configRevision: 1 });
        c.check(res && res.code === 200 && res.data.configRevision === 1 && res.data.state === 'configured',
            `configure en-US to es-ES at revision 1: its result carries it (${JSON.stringify(res)})`);
        ({ r } = await configure({ sourceLanguage: 'en-US', targetLanguage: 'es-ES', speakerId: 'me', configRevision: 1 }));
        c.check(r.status === 409 && r.body.data?.path === '/command/params/configRevision',
            `configure at the same revision: 409 (${JSON.stringify(r.body)})`);
        ({ r } = await configure({ sourceLanguage: 'es-ES', targetLanguage: 'en-US', speakerId: 'me', configRevision: 2 }));
        c.check(r.status === 400 && /en to es/.test(r.body.data?.reason),
            `configure es to en: 400 naming the supported pair (${JSON.stringify(r.body)})`);
        ({ r } = await control(a, sid, { processorId: 'tr', processor: 'translation', operation: 'attach',
            sourceTrackIds: ['mic'], consentIds: [cid], targetLanguage: 'fr-FR' }));
        c.check(r.status === 400 && r.body.data?.path === '/command/params/targetLanguage',
            `attach translation to French: 400 (${JSON.stringify(r.body)})`);
        const from = a.events.length;
        ({ r, res } = await control(a, sid, { processorId: 'tr', processor: 'translation', operation: 'attach',
            sourceTrackIds: ['mic'], consentIds: [cid], targetLanguage: 'es-ES' }));
        c.check(res && res.code === 200 && res.data.state === 'attached', `attach translation (${JSON.stringify(res)})`);
        const cap = await processorEvent(a, (d) => d.kind === 'caption', 40000, from);
        c.check(cap && /house is big/.test(cap.data.text) && /casa/i.test(cap.data.translated) && /grande/i.test(cap.data.translated) &&
            /^es/.test(cap.data.targetLanguage) && cap.data.configRevision === 1,
            `the Spanish caption of "hello, the house is big" (${JSON.stringify(cap && cap.data)})`);
        const st = await v.waitFor((x) => x.audioPackets > 25, 10000).catch((x) => x);
        c.check(st.audioPackets > 25, `the translated voice reaches the application (${st.audioPackets} audio packets)`);
        const lvl = await v.recvLevel();
        c.check(lvl > -80, `and it is sound, not silence (${lvl.toFixed(1)} dBFS now)`);
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited; // gone before the next part's camera takes its client id
    }
}

/** Waits until the camera played something loud (> -35 dB) after since; true if it did within ms. */
async function playedLoud(file, since, ms) {
    const deadline = Date.now() + ms;
    for (; Date.now() < deadline; await sleep(100))
        if (speakerLevels(file, since).some((x) => x.rms_db > -35)) return true;
    return false;
}
/** The page's microphone off (replaceTrack(null): nothing sent) or back. */
const mic = (v, on) => v.page.evaluate(async (on) => {
    const sender = window.__igw.pc.getTransceivers()[0].sender;
    if (!on) (window.__mic = sender.track, await sender.replaceTrack(null));
    else await sender.replaceTrack(window.__mic);
}, on);

// Translation in an IM talk call: the member's English goes to the
// translator instead of the camera's speaker, and the Spanish voice goes
// there in its place. The consent it names is one the user signed in an
// AI session (docs/decisions.md).
async function talk() {
    const spk = `${SOUNDS}/speaker.jsonl`;
    const { a, cam, browser, sid: aiSid, cid } = await aiWithConsent(`${SOUNDS}/sentence.wav`, null, ['--speaker-log', spk]);
    const im = (path, body) => call(DEMO.user, `/api/v1/im-standin/${path}`, body);
    let beat;
    try {
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: aiSid, params: { reason: 'userHangup' } }, 'the AI session ends');
        await a.state(aiSid, 'ended', 10000);
        let r = await im('calls/start', { groupId: DEMO.group.groupId });
        c.check(r.status === 200, `a call of the demo group (${JSON.stringify(r.body)})`);
        const callId = r.body.data.callId;
        beat = setInterval(() => im('calls/heartbeat', { callId }).catch(() => {}), 3000);
        const { sid, v } = await openSession(c, a, browser, 'talk', tok,
            { purpose: 'ipcTalk', params: { callId }, url: `${BASE}/healthz`, offer: (x) => x.offerPublish(0) });
        await accepted(c, a, { msgToken: tok('state'), method: 'interaction.mediaState', sessionId: sid,
            params: { mediaRevision: 1, state: 'connected' } }, 'talk mediaState connected');
        c.check(await a.state(sid, 'established', 20000), 'the talk session is established');
        c.check(await playedLoud(spk, Date.now(), 10000), 'before any processor the member\'s own voice reaches the camera\'s speaker');

        let res;
        ({ r } = await control(a, sid, { processorId: 'eye', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['video-1'], consentIds: [cid] }));
        c.check(r.status === 400 && r.body.data?.path === '/command/params/processor' && /run translation/.test(r.body.data?.reason),
            `aiAssist in a talk call: 400 naming what talk runs (${JSON.stringify(r.body)})`);
        ({ r } = await control(a, sid, { processorId: 'tr', processor: 'translation', operation: 'attach',
            sourceTrackIds: ['mic'], consentIds: [cid], targetLanguage: 'es-ES' }));
        c.check(r.status === 400 && r.body.data?.path === '/command/params/sourceTrackIds/0' && /\(speaker\)/.test(r.body.data?.reason),
            `translation of the camera's microphone: 400, it hears the member's voice (speaker) (${JSON.stringify(r.body)})`);
        const cfg = tok('cfg');
        r = await a.command({ msgToken: cfg, method: 'interaction.configure', sessionId: sid,
            params: { sourceLanguage: 'en-US', targetLanguage: 'es-ES', speakerId: 'me', configRevision: 1 } });
        res = r.status === 200 ? await a.result(cfg, 10000) : null;
        c.check(res && res.code === 200 && res.data.configRevision === 1, `configure in a talk call (${JSON.stringify(res || r.body)})`);
        const from = a.events.length;
        ({ r, res } = await control(a, sid, { processorId: 'tr', processor: 'translation', operation: 'attach',
            sourceTrackIds: ['speaker'], consentIds: [cid], targetLanguage: 'es-ES' }));
        c.check(res && res.code === 200 && res.data.state === 'attached', `attach translation to the member's voice (${JSON.stringify(res || r.body)})`);
        const cap = await processorEvent(a, (d) => d.kind === 'caption', 40000, from);
        c.check(cap && /house is big/.test(cap.data.text) && /casa/i.test(cap.data.translated) && /grande/i.test(cap.data.translated),
            `the Spanish caption of the member's "hello, the house is big" (${JSON.stringify(cap && cap.data)})`);
        // The member falls silent (nothing sent): what the camera plays now
        // is the translator's voice.
        await mic(v, false);
        await sleep(300);
        const quiet = Date.now();
        c.check(await playedLoud(spk, quiet, 8000),
            `the translated voice reaches the camera's speaker (${JSON.stringify(speakerLevels(spk, quiet).slice(-5))})`);
        ({ res } = await control(a, sid, { processorId: 'tr', processor: 'translation', operation: 'detach', sourceTrackIds: ['speaker'] }));
        c.check(res && res.code === 200 && res.data.state === 'detached', `detach (${JSON.stringify(res)})`);
        await mic(v, true);
        c.check(await playedLoud(spk, Date.now(), 10000), 'detached: the member\'s own voice reaches the camera again');
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
        await a.state(sid, 'ended', 10000);
        await sleep(1500);
        c.check(pgrep('igw-proc --kind').length === 0, 'no processor outlives the talk session');
    } finally {
        clearInterval(beat);
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited;
    }
}

// A revoke while a frame's ticket is outstanding: tests/igwd/ticket_proc.mjs
// (the processor igwd runs for this part) holds each ticket until told.
async function ticket() {
    const dir = process.env.TICKET_DIR;
    const waitFile = async (f, ms) => {
        for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (existsSync(f)) return true;
        return false;
    };
    const lines = () => (existsSync(`${dir}/lines.jsonl`)
        ? readFileSync(`${dir}/lines.jsonl`, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
    const consumed = async (tk) => {
        for (let i = 0; i < 100; i++, await sleep(50)) {
            const l = lines().find((x) => x.op === 'consumed' && x.ticket === tk);
            if (l) return l;
        }
        return null;
    };
    const { me, a, cam, browser, sid, cid } = await aiWithConsent(`${SOUNDS}/count.wav`, null);
    try {
        const { res } = await control(a, sid, { processorId: 'holder', processor: 'aiAssist', operation: 'attach',
            sourceTrackIds: ['video-1'], consentIds: [cid] });
        c.check(res && res.code === 200 && res.data.state === 'attached', `attach the ticket-holding processor (${JSON.stringify(res)})`);
        c.check(await waitFile(`${dir}/ticket.1`, 15000), 'its first take is granted a ticket for a frame');
        const t1 = JSON.parse(readFileSync(`${dir}/ticket.1`, 'utf8'));
        writeFileSync(`${dir}/go.1`, '');
        const r1 = await consumed(t1.ticket);
        c.check(r1 && r1.ok === true, `consumed in time, the consent standing: ok (${JSON.stringify(r1)})`);
        c.check(await waitFile(`${dir}/ticket.2`, 15000), 'its second take is granted a ticket');
        const t2 = JSON.parse(readFileSync(`${dir}/ticket.2`, 'utf8'));
        const rv = await call(me, `${V}/revoke`, { consentId: cid, expectedRevision: 1 });
        c.check(rv.status === 200, `revoked while that ticket is outstanding (${JSON.stringify(rv.body)})`);
        for (let i = 0; i < 40 && !lines().some((x) => x.op === 'revoked'); i++) await sleep(50);
        c.check(lines().some((x) => x.op === 'revoked'), 'the processor is told revoked');
        const goAt = Date.now();
        writeFileSync(`${dir}/go.2`, '');
        const r2 = await consumed(t2.ticket);
        c.check(r2 && r2.ok === false && /revoked|no such ticket/.test(r2.reason),
            `the outstanding ticket's consumption is refused (${JSON.stringify(r2)})`);
        c.check(goAt < t2.deadlineMs, `refused for the revoke, before its deadline (${t2.deadlineMs - goAt} ms left)`);
        await accepted(c, a, { msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited;
    }
}

const parts = { ledger, session, assist, pattern, translate, talk, ticket };
const part = parts[process.env.IGW_PART];
if (!part) throw new Error(`unknown IGW_PART ${process.env.IGW_PART}`);
part().then(() => {
    c.done(`ai ${process.env.IGW_PART}`);
}, (e) => {
    console.error(e);
    process.exit(1);
});
