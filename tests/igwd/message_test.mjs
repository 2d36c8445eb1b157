// message_test.mjs - messageSend end to end (issue 26), through the public
// API and igw-vcam as the demo camera on the broker: an application uploads
// audio (its type told by the first bytes, never the name), sends it as a
// voice message; the camera fetches the signed link, plays it (its level
// log shows the sound) and answers; the result carries the deliveryId and
// the outcome. Then what must be refused with nothing changed, a message
// that expires before the device fetched it, and an offline camera that
// gets its message when it comes back. Run by message_test.sh with igwd and
// the services up.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_SPEAKER_LOG, IGW_PG_DSN,
// IGW_SOUNDS (tone.ogg, tone.wav), IGW_STORAGE (igwd's storage root).
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { sleep, Checker } from '../media/lib.mjs';
import { DEMO, target, app, deviceSend, startCamera } from './live_lib.mjs';

const BASE = process.env.IGW_BASE;
const VCAM = process.env.IGW_VCAM;
const LEVELS = process.env.IGW_SPEAKER_LOG;
const SOUNDS = process.env.IGW_SOUNDS;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const sql = (q) => spawnSync('psql', [process.env.IGW_PG_DSN, '-XAtq', '-c', q], { encoding: 'utf8' }).stdout.trim();
const count = (q) => Number(sql(q));
const reEscape = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Every file under the storage root's app/ (the uploads). */
const stored = () => existsSync(`${process.env.IGW_STORAGE}/app`)
    ? readdirSync(`${process.env.IGW_STORAGE}/app`, { recursive: true }).filter((f) => /\/./.test(f)).length : 0;

/** POST /uploads as user with one part `file` (name, bytes): {status, body}. */
async function upload(user, name, bytes, opts = {}) {
    const form = new FormData();
    if (!opts.noFile) form.append(opts.part || 'file', new Blob([bytes]), name);
    const headers = opts.noAuth ? {} : { authorization: `Bearer ${user.token}` };
    const r = await fetch(`${BASE}/api/v1/im/interaction/uploads`, { method: 'POST', headers, body: form });
    return { status: r.status, body: await r.json() };
}

/** The camera's level lines of message deliveryId. */
function messageLevels(deliveryId) {
    if (!existsSync(LEVELS)) return [];
    return readFileSync(LEVELS, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
        .filter((x) => x.message === deliveryId);
}

const send = (a, params, t = token('msg'), tgt = target) =>
    a.command({ msgToken: t, method: 'messageSend', target: tgt, params }).then((r) => ({ ...r, t }));

async function camReady(cam) {
    for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
    return /capability accepted/.test(cam.stderr());
}

async function main() {
    const user = await app(DEMO.user);
    const ogg = readFileSync(`${SOUNDS}/tone.ogg`);
    const wav = readFileSync(`${SOUNDS}/tone.wav`);

    // ---- uploads -------------------------------------------------------------------------------------
    let r = await upload(DEMO.user, 'hello.ogg', ogg);
    c.check(r.status === 200 && r.body.data?.contentType === 'audio/ogg' && r.body.data.size === ogg.length &&
        /^[A-Za-z0-9_-]{22}$/.test(r.body.data.contentRef), `upload Ogg/Opus: 200 audio/ogg (${JSON.stringify(r.body)})`);
    const oggRef = r.body.data?.contentRef;
    c.check(count(`SELECT count(*) FROM app_files WHERE file_id = '${oggRef}' AND user_id = ${DEMO.user.userId}
        AND sha256 = '\\x${createHash('sha256').update(ogg).digest('hex')}'`) === 1,
        'upload Ogg/Opus: its row names the uploader and the content digest');
    r = await upload(DEMO.user, 'voice.bin', wav);
    c.check(r.status === 200 && r.body.data?.contentType === 'audio/wav', `upload WAV under any name: audio/wav (${r.status})`);
    const mp3 = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.alloc(64, 0xff)]);
    r = await upload(DEMO.user, 'song.mp3', mp3);
    c.check(r.status === 200 && r.body.data?.contentType === 'audio/mpeg', `upload MP3 (ID3): audio/mpeg (${r.status})`);
    const files0 = count('SELECT count(*) FROM app_files'), disk0 = stored();
    c.check(disk0 === files0, `one file on disk per upload row (${disk0} files, ${files0} rows)`);
    r = await upload(DEMO.user, 'note.ogg', Buffer.from('this is text, not audio\n'));
    c.check(r.status === 415 && r.body.code === 100415 && r.body.data?.path === 'file',
        `upload text named .ogg: 415 at file (${JSON.stringify(r.body)})`);
    r = await upload(DEMO.user, 'a.ogg', Buffer.from('Og'));
    c.check(r.status === 415, `upload of 2 bytes: 415 (${r.status})`);
    r = await upload(DEMO.user, 'run.php', ogg);
    c.check(r.status === 400 && r.body.data?.path === 'file', `upload named .php: 400 (${r.status})`);
    r = await upload(DEMO.user, 'x.ogg', ogg, { part: 'other' });
    c.check(r.status === 400 && r.body.data?.path === 'file', `upload without the part file: 400 (${r.status})`);
    r = await upload(DEMO.user, 'x.ogg', ogg, { noAuth: true });
    c.check(r.status === 401, `upload without a login: 401 (${r.status})`);
    r = await upload(DEMO.user, 'big.ogg', Buffer.concat([Buffer.from('OggS'), Buffer.alloc(1100000)]));
    c.check(r.status === 413, `upload over upload_max: 413 (${r.status})`);
    c.check(count('SELECT count(*) FROM app_files') === files0 && stored() === disk0,
        `refused uploads wrote no row and left no file (${stored()} files)`);
    const foreign = (await upload(DEMO.otherUser, 'f.ogg', ogg)).body.data?.contentRef;
    const otherTenant = (await upload(DEMO.otherEnterpriseUser, 't.ogg', ogg)).body.data?.contentRef;
    c.check(foreign && otherTenant, 'the other user and the other tenant uploaded theirs');

    // ---- refusals: nothing accepted, nothing written -------------------------------------------------
    const now = Date.now();
    const msgs0 = count('SELECT count(*) FROM messages');
    // expiresAt a minute from the send (each send computes its own).
    const msg = (fields = {}) => ({ kind: 'voiceMessage', expiresAt: Date.now() + 60000, contentRef: oggRef, ...fields });
    const base = msg();
    r = await send(user, { ...base, deliveryId: token('d'), expiresAt: now - 1 });
    c.check(r.status === 400 && r.body.data?.path === '/command/params/expiresAt', `expiresAt passed: 400 (${JSON.stringify(r.body)})`);
    r = await send(user, { ...base, deliveryId: token('d'), expiresAt: now + 7300000 });
    c.check(r.status === 400 && r.body.data?.path === '/command/params/expiresAt' && /message_ttl_max_ms/.test(r.body.data.reason),
        `expiresAt beyond message_ttl_max_ms: 400, saying so (${JSON.stringify(r.body)})`);
    r = await send(user, { ...base, deliveryId: token('d'), expiresAt: now + 3650000 });
    c.check(r.status === 400 && r.body.data?.path === '/command/params/expiresAt' && /endpoint expires/.test(r.body.data.reason),
        `expiresAt after the sending endpoint expires: 400 (${JSON.stringify(r.body)})`);
    r = await send(user, { ...base, deliveryId: token('d'), contentRef: foreign });
    c.check(r.status === 403 && r.body.data?.path === '/command/params/contentRef', `another user's upload: 403 (${JSON.stringify(r.body)})`);
    r = await send(user, { ...base, deliveryId: token('d'), contentRef: otherTenant });
    c.check(r.status === 403 && r.body.data?.path === '/command/params/contentRef', `another tenant's upload: 403 (${r.status})`);
    r = await send(user, { ...base, deliveryId: token('d'), contentRef: 'no-such-upload-AAAAAAA' });
    c.check(r.status === 403, `an unknown upload id: 403, as a foreign one (${r.status})`);
    r = await send(user, { ...base, deliveryId: token('d'), contentRef: '../../etc/passwd' });
    c.check(r.status === 400 && r.body.data?.path === '/command/params/contentRef', `a contentRef that is no upload id: 400 (${r.status})`);
    const stranger = await app(DEMO.otherUser);
    r = await send(stranger, { ...base, deliveryId: token('d'), contentRef: foreign });
    c.check(r.status === 403 && r.body.data?.path === '/command/target', `a user without rights on the device: 403 at target (${r.status})`);
    c.check(count('SELECT count(*) FROM messages') === msgs0, 'refused messages wrote no row');

    // ---- played by the camera ------------------------------------------------------------------------
    const cam = startCamera(VCAM, '[vcam] ', ['--speaker-log', LEVELS]);
    c.check(await camReady(cam), 'the camera is on the broker (capability accepted)');
    const d1 = token('vöice"\\'); // UTF-8, a quote and a backslash: the level log stays JSON
    const m1 = msg({ deliveryId: d1 });
    r = await send(user, m1);
    c.check(r.status === 200 && r.body.data?.accepted === true && r.body.data.replay === false, `messageSend accepted (${JSON.stringify(r.body)})`);
    let res = await user.result(r.t, 20000);
    c.check(res && res.code === 200 && res.data.operation === 'messageSend' && res.data.deliveryId === d1 &&
        res.data.state === 'played', `result: played, its deliveryId (${JSON.stringify(res)})`);
    const lv = messageLevels(d1);
    const peak = Math.max(...lv.map((x) => x.peak_db ?? x.rms_db ?? -200));
    c.check(lv.length >= 10 && peak > -30, `the camera's level meter heard the message (${lv.length} lines, peak ${peak} dB)`);
    c.check(/message \S+: played/.test(cam.stderr()), 'the camera logs the message played');
    // The same command again: a replay, not a second playback.
    const plays = (cam.stderr().match(new RegExp(`message ${reEscape(d1)}: playing`, 'g')) || []).length;
    c.check(plays === 1, `the camera played it once (${plays})`);
    const again = await send(user, m1, r.t);
    c.check(again.status === 200 && again.body.data?.replay === true, `same msgToken and body: replay (${JSON.stringify(again.body)})`);
    r = await send(user, { ...m1, kind: 'broadcast' }, r.t);
    c.check(r.status === 409 && r.body.data?.path === '/command/msgToken', `same msgToken, another body: 409 (${r.status})`);
    r = await send(user, { ...m1, expiresAt: m1.expiresAt + 1 });
    c.check(r.status === 409 && r.body.data?.path === '/command/params/deliveryId',
        `the deliveryId again in another command: 409 at deliveryId (${JSON.stringify(r.body)})`);
    r = await send(user, m1);
    c.check(r.status === 409 && r.body.data?.path === '/command/params/deliveryId', `the same message under a new msgToken: 409 (${r.status})`);
    await sleep(1000);
    c.check((cam.stderr().match(new RegExp(`message ${reEscape(d1)}: playing`, 'g')) || []).length === plays,
        'neither the replay nor the refusals played it again');

    // ---- the link: the file's bytes until the message expires ----------------------------------------
    const row = sql(`SELECT downlink->'params'->>'url' FROM messages WHERE delivery_id = '${d1}'`);
    const got = await fetch(row);
    const body = Buffer.from(await got.arrayBuffer());
    c.check(got.status === 200 && body.equals(ogg), `the signed link serves the uploaded bytes (${got.status}, ${body.length} bytes)`);
    const part = await fetch(row, { headers: { range: 'bytes=0-3' } });
    const tail = await fetch(row, { headers: { range: 'bytes=-5' } });
    c.check(part.status === 206 && Buffer.from(await part.arrayBuffer()).toString('latin1') === 'OggS' &&
        part.headers.get('content-range') === `bytes 0-3/${ogg.length}`, `a range of the link: 206, its bytes (${part.status})`);
    c.check(tail.status === 206 && Buffer.from(await tail.arrayBuffer()).equals(ogg.subarray(ogg.length - 5)),
        `a suffix range: 206, the last bytes (${tail.status})`);
    const many = await fetch(row, { headers: { range: 'bytes=0-1,4-5' } });
    c.check(many.status === 200 && Buffer.from(await many.arrayBuffer()).equals(ogg), `several ranges: the whole file, 200 (${many.status})`);
    const forged = await fetch(row.replace(/sig=[^&]+/, 'sig=' + 'A'.repeat(43)));
    c.check(forged.status === 404, `a forged signature: 404 (${forged.status})`);

    // ---- a message that expires before the device fetched it ------------------------------------------
    cam.kill('SIGTERM');
    await cam.waitExit(10000).catch(() => {});
    await sleep(500);
    const d2 = token('late');
    const exp2 = Date.now() + 2500;
    r = await send(user, msg({ deliveryId: d2, expiresAt: exp2 }));
    c.check(r.status === 200, `a message to the offline camera, 2.5 s to live: accepted (${r.status})`);
    res = await user.result(r.t, 15000);
    c.check(res && res.code === 100410 && res.data.state === 'expired' && res.data.deliveryId === d2,
        `result: expired, never played (${JSON.stringify(res)})`);
    const late = await deviceSend('media/message', { method: 'get', msgToken: token('get') });
    c.check(late.status === 200 && Array.isArray(late.body.data?.data?.messages) &&
        !late.body.data.data.messages.some((m) => m.params.deliveryId === d2),
        `the device's get no longer lists it (${JSON.stringify(late.body).slice(0, 200)})`);
    const lateUrl = sql(`SELECT downlink->'params'->>'url' FROM messages WHERE delivery_id = '${d2}'`);
    await sleep(Math.max(0, Math.ceil(exp2 / 1000) * 1000 + 200 - Date.now())); // past the second it expires in
    const lateGot = await fetch(lateUrl);
    c.check(lateGot.status === 404, `its link no longer works (${lateGot.status})`);

    // ---- an offline camera gets it when it comes back ------------------------------------------------
    const d3 = token('waiting');
    r = await send(user, msg({ deliveryId: d3, contentRef: (await upload(DEMO.user, 'w.wav', wav)).body.data.contentRef }));
    c.check(r.status === 200, `a message to the offline camera: accepted (${r.status})`);
    await sleep(1500);
    await user.pull();
    c.check(!user.events.some((e) => e.msgToken === r.t), 'no result while the camera is away');
    const w = await deviceSend('media/message', { method: 'get', msgToken: token('get') });
    c.check(w.status === 200 && w.body.data?.data?.messages?.some((m) => m.method === 'play' && m.params.deliveryId === d3),
        `the device's get lists the waiting message (${JSON.stringify(w.body).slice(0, 300)})`);
    const cam2 = startCamera(VCAM, '[vcam2] ', ['--speaker-log', LEVELS]);
    res = await user.result(r.t, 20000);
    c.check(res && res.code === 200 && res.data.state === 'played' && res.data.deliveryId === d3,
        `back online, the camera played it: result played (${JSON.stringify(res)})`);
    c.check(messageLevels(d3).length >= 3, `its levels are in the camera's log (${messageLevels(d3).length} lines)`);

    // ---- a device's answers settle a message once ----------------------------------------------------
    cam2.kill('SIGTERM');
    await cam2.waitExit(10000).catch(() => {});
    await sleep(500);
    const d4 = token('fail');
    r = await send(user, msg({ deliveryId: d4 }));
    const dtok = sql(`SELECT device_token FROM messages WHERE delivery_id = '${d4}'`);
    const rep = await deviceSend('media/message', { method: 'playReply', msgToken: dtok, code: 500, msg: 'speaker broken' });
    c.check(rep.status === 200, `the device's playReply over HTTP: 200 (${JSON.stringify(rep.body)})`);
    res = await user.result(r.t, 10000);
    c.check(res && res.code !== 200 && res.data.state === 'failed' && res.data.deliveryId === d4 &&
        /speaker broken/.test(res.data.reason), `result: failed, the device's words (${JSON.stringify(res)})`);
    await deviceSend('media/message', { method: 'playReply', msgToken: dtok, code: 200 });
    await sleep(1000);
    await user.pull();
    c.check(user.events.filter((e) => e.msgToken === r.t).length === 1, 'a second answer adds no result');
    c.done('message test');
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
