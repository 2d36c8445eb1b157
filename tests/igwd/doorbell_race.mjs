// doorbell_race.mjs - the door-bell's first accept (issue 25): IGW_RACES
// rings, each answered by three endpoints (two of the owner, one of a
// granted user) accepting at once over igwd's HTTP workers; exactly one
// winner every time, every loser exactly one `ended` (answeredElsewhere) and
// a 409 result, and a replay of any accept changes no winner. The rings go
// over the device's HTTP send route (the camera itself is not connected:
// the race is the decision, not the media); each winner hangs up so the
// ring ends before the next. Run by doorbell_test.sh.
//
// env: IGW_BASE, IGW_DEMO, IGW_RACES (default 200).
import { sleep, Checker } from '../media/lib.mjs';
import { DEMO, camera, app, deviceSend } from './live_lib.mjs';

const RACES = Number(process.env.IGW_RACES || 200);
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;

const ring = () => deviceSend('media/doorbell', { method: 'ring', msgToken: token('ring'), params: { cameraId: camera } })
    .then((x) => x.body);

/** Pulls a (every 10 ms, for up to 5 s) until its events since `from`
 * hold one pred accepts. */
async function until(a, from, pred) {
    for (let i = 0; i < 500; i++) {
        const e = a.events.slice(from).find(pred);
        if (e) return e;
        await a.pull();
        await sleep(10);
    }
    return null;
}
const ringing = (a, from) => until(a, from, (x) => x.method === 'interaction.state' && x.data.state === 'ringing');
const result = (a, from, t) => until(a, from, (x) => x.method === 'interaction.result' && x.msgToken === t);

async function main() {
    const apps = [await app(DEMO.user), await app(DEMO.user), await app(DEMO.otherUser)];
    let doubles = 0, none = 0, lostEnds = 0, replayChanged = 0;
    const t0 = Date.now();
    for (let n = 0; n < RACES; n++) {
        const marks = apps.map((a) => a.events.length);
        const rr = await ring(); // the send route's envelope; data: the device's ringReply
        const reply = rr.data && rr.data.data;
        if (!c.check(rr.code === 200 && reply && reply.sessionId && reply.joined === false,
            `race ${n}: the ring is answered with its session (${JSON.stringify(rr)})`)) break;
        const evs = await Promise.all(apps.map((a, i) => ringing(a, marks[i])));
        if (!c.check(evs.every((e) => e), `race ${n}: every endpoint rings`)) break;
        const tokens = evs.map(() => token('accept'));
        const acc = await Promise.all(apps.map((a, i) => a.command({ msgToken: tokens[i], method: 'interaction.control',
            sessionId: evs[i].sessionId, params: { operation: 'accept', args: { inviteToken: evs[i].data.inviteToken } } })));
        // A loser is refused at once (409: its session ended before its accept
        // reached the engine) or accepted and failed by the ring's row.
        const res = await Promise.all(apps.map((a, i) => (acc[i].status === 200 ? result(a, marks[i], tokens[i]) : null)));
        const won = res.map((x, i) => (x && x.code === 200 ? i : -1)).filter((i) => i >= 0);
        if (won.length > 1) doubles++;
        if (won.length === 0) none++;
        const w = won[0];
        for (let i = 0; i < 3; i++) {
            if (i === w) continue;
            const refused = acc[i].status === 409 && !acc[i].body.data.accepted && /answeredElsewhere/.test(acc[i].body.data.reason);
            if (!(refused || (res[i] && res[i].code === 100409))) lostEnds++;
            const ended = apps[i].events.filter((e) => e.method === 'interaction.state' && e.sessionId === evs[i].sessionId &&
                e.data.state === 'ended');
            if (ended.length > 1 || (ended.length === 1 && ended[0].data.reason !== 'answeredElsewhere')) lostEnds++;
        }
        if (w === undefined) continue;
        // The winner replays its accept: a replay, the winner unchanged.
        const rp = await apps[w].command({ msgToken: tokens[w], method: 'interaction.control', sessionId: evs[w].sessionId,
            params: { operation: 'accept', args: { inviteToken: evs[w].data.inviteToken } } });
        if (!(rp.status === 200 && rp.body.data.replay === true)) replayChanged++;
        await apps[w].command({ msgToken: token('end'), method: 'interaction.end', sessionId: evs[w].sessionId,
            params: { reason: 'userHangup' } });
        await until(apps[w], marks[w], (x) => x.method === 'interaction.state' && x.sessionId === evs[w].sessionId &&
            x.data.state === 'ended');
    }
    // Every loser's one `ended` (answeredElsewhere) has arrived by now.
    await sleep(300);
    for (const a of apps) await a.pull();
    const byS = new Map();
    for (const a of apps)
        for (const e of a.events)
            if (e.method === 'interaction.state' && e.data.state === 'ended') byS.set(e.sessionId, (byS.get(e.sessionId) || 0) + 1);
    const twice = [...byS.values()].filter((x) => x !== 1).length;
    c.check(doubles === 0, `races: double winners ${doubles}`);
    c.check(none === 0, `races: rings without a winner ${none}`);
    c.check(lostEnds === 0, `races: losers without exactly one answeredElsewhere and a 409 result: ${lostEnds}`);
    c.check(twice === 0, `races: sessions with more than one ended: ${twice}`);
    c.check(replayChanged === 0, `races: replays that were not replays: ${replayChanged}`);
    console.log(`RACE races=${RACES} double_winners=${doubles} no_winner=${none} seconds=${((Date.now() - t0) / 1000).toFixed(1)}`);
    c.done('doorbell race');
}

main().catch((e) => { console.error(e); process.exit(1); });
