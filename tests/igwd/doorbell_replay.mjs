// doorbell_replay.mjs - the spec's two replay rules, one case per clause
// (issue 25): rule 1, a door-bell decision (interaction.control accept)
// retried with its token; rule 2, a session command (interaction.mediaState)
// replayed by its endpoint. Events are pulled without acknowledging unless a
// case acknowledges on purpose. The rings go over the device's HTTP send
// route. Run by doorbell_test.sh with doorbell_retention_ms = 3000.
//
// env: IGW_BASE, IGW_DEMO, IGW_PG_DSN, IGW_RETENTION_MS.
import { spawnSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { sleep, Checker } from '../media/lib.mjs';
import { DEMO, camera, call, deviceSend } from './live_lib.mjs';

const RETENTION = Number(process.env.IGW_RETENTION_MS);
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const sql = (q) => spawnSync('psql', [process.env.IGW_PG_DSN, '-XAtq', '-c', q], { encoding: 'utf8' }).stdout.trim();

/** An endpoint whose events are pulled as they are, acknowledged only when asked. */
async function endpoint(user) {
    const r = await call(user, '/api/v1/im/interaction/endpoints/register');
    const e = { user, ep: r.body.data.endpointId };
    e.command = (command) => call(user, '/api/v1/im/interaction/commands', { endpointId: e.ep, command });
    e.list = async () => (await call(user, '/api/v1/im/interaction/events', { endpointId: e.ep, limit: 32 })).body.data.list;
    e.ack = (ids) => call(user, '/api/v1/im/interaction/events/ack', { endpointId: e.ep, deliveryIds: ids });
    /** The deliveries (unacknowledged) whose event pred accepts, waiting up to ms for one. */
    e.find = async (pred, ms = 5000) => {
        const deadline = Date.now() + ms;
        for (;;) {
            const hits = (await e.list()).filter((i) => pred(i.event));
            if (hits.length || Date.now() > deadline) return hits;
            await sleep(30);
        }
    };
    /** Acknowledges everything pending. */
    e.drain = async () => {
        for (let l = await e.list(); l.length; l = await e.list()) await e.ack(l.map((i) => i.deliveryId));
    };
    return e;
}

const ring = () => deviceSend('media/doorbell', { method: 'ring', msgToken: token('ring'), params: { cameraId: camera } })
    .then((x) => x.body.data && x.body.data.data && x.body.data.data.sessionId);

const isResult = (t) => (ev) => ev.method === 'interaction.result' && ev.msgToken === t;
const acceptCmd = (t, sid, inviteToken, operation = 'accept') =>
    ({ msgToken: t, method: 'interaction.control', sessionId: sid, params: { operation, args: { inviteToken } } });

/** A fresh ring answered by `a`: its session, the accept and its result's delivery (unacknowledged). */
async function answered(a, others) {
    for (const e of [a, ...others]) await e.drain();
    const ringId = await ring();
    const [rg] = await a.find((ev) => ev.method === 'interaction.state' && ev.data.state === 'ringing');
    await a.ack([rg.deliveryId]);
    const t = token('accept');
    const cmd = acceptCmd(t, rg.event.sessionId, rg.event.data.inviteToken);
    const r = await a.command(cmd);
    const [res] = await a.find(isResult(t));
    return { ringId, sid: rg.event.sessionId, invite: rg.event.data.inviteToken, t, cmd, first: r, res };
}

async function main() {
    const a = await endpoint(DEMO.user);
    const a2 = await endpoint(DEMO.user);
    const b = await endpoint(DEMO.otherUser);
    const others = [a2, b];

    // ---- rule 1: a door-bell decision retried --------------------------------------------------------
    let x = await answered(a, others);
    c.check(x.first.status === 200 && x.res && x.res.event.code === 200, `rule 1: the accept won (${JSON.stringify(x.res)})`);
    const seqBefore = sql(`SELECT event_seq FROM sessions WHERE session_id = '${x.sid}'`);
    const rings = sql('SELECT count(*) FROM rings');

    // unacknowledged: the same delivery
    let r = await a.command(x.cmd);
    c.check(r.status === 200 && isDeepStrictEqual(r.body.data, { accepted: true, msgToken: x.t, replay: true }),
        `rule 1, unacknowledged: HTTP says only accepted, msgToken and replay (${JSON.stringify(r.body)})`);
    let hits = await a.find(isResult(x.t), 300);
    c.check(hits.length === 1 && hits[0].deliveryId === x.res.deliveryId,
        `rule 1, unacknowledged: the same delivery (${JSON.stringify(hits.map((h) => h.deliveryId))} vs ${x.res.deliveryId})`);

    // acknowledged: the same result under a new deliveryId
    await a.ack([x.res.deliveryId]);
    r = await a.command(x.cmd);
    hits = await a.find(isResult(x.t));
    c.check(r.status === 200 && r.body.data.replay === true && hits.length === 1 && hits[0].deliveryId !== x.res.deliveryId &&
        isDeepStrictEqual(hits[0].event, x.res.event),
        `rule 1, acknowledged: a new delivery of the same result (${JSON.stringify(hits)})`);
    const d2 = hits[0] && hits[0].deliveryId;

    // a late ack of the old id does not acknowledge the new delivery
    r = await a.ack([x.res.deliveryId]);
    hits = await a.find(isResult(x.t), 300);
    c.check(r.status === 200 && hits.length === 1 && hits[0].deliveryId === d2,
        `rule 1, a late old ack leaves the new delivery pending (${JSON.stringify(hits.map((h) => h.deliveryId))})`);

    // only the delivery watermark moved: no eventSeq, no ring, no answer, the same winner
    c.check(sql(`SELECT event_seq FROM sessions WHERE session_id = '${x.sid}'`) === seqBefore,
        'rule 1: the session\'s business eventSeq did not move');
    c.check(sql('SELECT count(*) FROM rings') === rings && sql(`SELECT controller FROM rings WHERE ring_id = '${x.ringId}'`) === x.sid,
        'rule 1: no new ring, the same winner');
    c.check((await a2.find((ev) => ev.data && ev.data.state === 'ringing', 300)).length === 1,
        'rule 1: nobody rings again (the other endpoint has the one ringing event of the ring)');

    // the same token with another command or refusal reason: a conflict
    r = await a.command(acceptCmd(x.t, x.sid, x.invite, 'decline'));
    c.check(r.status === 409 && r.body.data.path === '/command/msgToken' && !r.body.data.accepted,
        `rule 1: the same token with decline conflicts (${JSON.stringify(r.body)})`);
    r = await a.command(acceptCmd(x.t, x.sid, 'another-token'));
    c.check(r.status === 409 && !r.body.data.accepted, `rule 1: the same token with another inviteToken conflicts (${JSON.stringify(r.body)})`);

    // another endpoint with the same token and body: not a replay of this one
    r = await a2.command(x.cmd);
    c.check(r.status === 404 && !r.body.data.accepted, `rule 1: only within the same endpoint (${JSON.stringify(r.body)})`);

    // after the window: rejected with its own error, nothing redelivered
    await a.ack([d2]);
    await sleep(RETENTION + 500);
    r = await a.command(x.cmd);
    c.check(r.status === 410 && r.body.code === 100410 && /retention window/.test(r.body.data.reason) && !r.body.data.accepted,
        `rule 1: after the window the retry is rejected (${JSON.stringify(r.body)})`);
    c.check((await a.find(isResult(x.t), 300)).length === 0, 'rule 1: after the window nothing is redelivered');
    await a.command({ msgToken: token('end'), method: 'interaction.end', sessionId: x.sid, params: { reason: 'userHangup' } });

    // ---- rule 2: a session command replayed ----------------------------------------------------------
    x = await answered(a, others);
    const mt = token('state');
    const ms = { msgToken: mt, method: 'interaction.mediaState', sessionId: x.sid, params: { mediaRevision: 1, state: 'connecting' } };
    r = await a.command(ms);
    const [orig] = await a.find(isResult(mt));
    c.check(r.status === 200 && orig && orig.event.code === 200, `rule 2: the mediaState's result (${JSON.stringify(orig)})`);
    const rev = sql(`SELECT media_revision || ',' || event_seq FROM sessions WHERE session_id = '${x.sid}'`);
    r = await a.command(ms);
    hits = await a.find(isResult(mt), 300);
    c.check(r.status === 200 && isDeepStrictEqual(r.body.data, { accepted: true, msgToken: mt, replay: true }) &&
        hits.length === 1 && hits[0].deliveryId === orig.deliveryId,
        `rule 2, unacknowledged: HTTP only accepted/msgToken/replay, the same deliveryId (${JSON.stringify(r.body)})`);
    await a.ack([orig.deliveryId]);
    r = await a.command(ms);
    hits = await a.find(isResult(mt));
    const nd = hits[0];
    c.check(nd && nd.deliveryId !== orig.deliveryId && isDeepStrictEqual(nd.event, orig.event),
        `rule 2, acknowledged: a new independent delivery with the original body (${JSON.stringify(hits)})`);
    c.check(nd && sql(`SELECT expires_at_ms FROM deliveries WHERE delivery_id = '${nd.deliveryId}'`) ===
        sql(`SELECT expires_at_ms FROM deliveries WHERE delivery_id = '${orig.deliveryId}'`),
        'rule 2: the new delivery keeps the original expiresAt');
    c.check(sql(`SELECT media_revision || ',' || event_seq FROM sessions WHERE session_id = '${x.sid}'`) === rev,
        'rule 2: the replay changes no session revision, eventSeq or media');
    r = await a.command({ ...ms, params: { mediaRevision: 1, state: 'connected' } });
    c.check(r.status === 409 && !r.body.data.accepted, `rule 2: the same token with another body conflicts (${JSON.stringify(r.body)})`);
    // an expired (or swept) original: no new delivery
    await a.ack([nd.deliveryId]);
    sql(`UPDATE deliveries SET expires_at_ms = 1 WHERE delivery_id = '${nd.deliveryId}'`);
    const n = sql(`SELECT count(*) FROM deliveries d JOIN events e ON e.event_id = d.event_id WHERE e.msg_token = '${mt}'`);
    r = await a.command(ms);
    c.check(r.status === 200 && r.body.data.replay === true &&
        sql(`SELECT count(*) FROM deliveries d JOIN events e ON e.event_id = d.event_id WHERE e.msg_token = '${mt}'`) === n &&
        (await a.find(isResult(mt), 300)).length === 0, 'rule 2: an expired original creates no delivery');
    await a.command({ msgToken: token('end'), method: 'interaction.end', sessionId: x.sid, params: { reason: 'userHangup' } });
    c.done('doorbell replay');
}

main().catch((e) => { console.error(e); process.exit(1); });
