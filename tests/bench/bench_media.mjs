// bench_media.mjs HOST - igw's media core against Janus 1.1.2 in one run:
// the same GStreamer RTP feed (H264 + Opus) goes to both; the same number of
// WebRTC viewers (igw-media-host --ice-full, a load client built on the
// library: every viewer decrypts and counts) watch each in turn. Measured per
// server from /proc/<pid>: CPU time per forwarded packet, memory per viewer;
// from the viewers' sequence numbers: loss. Run by bench_media.sh inside
// media_netns (tests/media/lib.sh). Last line:
//   RESULT cpu_us_per_pkt=<n> janus_cpu_us_per_pkt=<n> vs_janus=<ratio> kb_per_viewer=<n> loss_pct=<n>
// IGW_ONLY=1 (make bench-live's library-only reference) measures igw alone,
// no Janus; its last line is then `RESULT cpu_us_per_pkt=<n> kb_per_viewer=<n> loss_pct=<n>`.
import { execSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnLines, sleep } from '../media/lib.mjs';
import { Janus } from './janus.mjs';
import { cpuUs, rssKiB } from './proc.mjs';

const [HOST] = process.argv.slice(2);
const HERE = path.dirname(new URL(import.meta.url).pathname);
const VIEWERS = Number(process.env.VIEWERS || 50);
const MEASURE_S = Number(process.env.MEASURE_SECONDS || 10);
const WARMUP_S = Number(process.env.WARMUP_SECONDS || 3); // viewers receiving before the window
const JANUS_HTTP = 8088, JANUS_VIDEO = 5004, JANUS_AUDIO = 5006;
const IGW_ONLY = process.env.IGW_ONLY === '1';
// The feed's picture (videotestsrc pattern): `ball` (the RESULT's reference: a
// frame is a few small slices) or e.g. `smpte` (a frame is 1200-byte fragments
// and a shorter tail, as a camera's are at 1 Mbit/s).
const PATTERN = /^[a-z0-9-]+$/.test(process.env.VIDEO_PATTERN || '') ? process.env.VIDEO_PATTERN : 'ball';

// ---- a JSON-lines igw-media-host ----
function host(args, name) {
    const p = spawnLines(HOST, args, { prefix: `[${name}] ` });
    const events = [], replies = [];
    const pump = async (ms) => {
        const m = await p.next(undefined, ms);
        (m.type === 'event' ? events : replies).push(m);
    };
    return {
        pid: p.pid,
        events,
        async call(req, ms = 15000) {
            p.send(req);
            const end = Date.now() + ms;
            while (!replies.length) await pump(Math.max(1, end - Date.now()));
            const r = replies.shift();
            if (!r.ok) throw new Error(`${name} ${req.op} ${req.id || ''}: ${r.rc} ${r.error}`);
            return r;
        },
        async until(pred, ms) {
            const end = Date.now() + ms;
            while (!pred(events)) {
                if (Date.now() >= end) throw new Error(`${name}: condition not met within ${ms} ms`);
                await pump(end - Date.now()).catch(() => {});
            }
        },
        end: () => p.end(),
        exited: p.exited,
    };
}


async function received(client, ids) {
    let rtp = 0, expected = 0, bytes = 0;
    for (const id of ids) {
        const s = await client.call({ op: 'stats', id });
        rtp += s.rtp_in;
        expected += s.rtp_expected;
        bytes += s.bytes_in;
    }
    return { rtp, expected, bytes };
}

// Connects VIEWERS viewers through `attach(i)` (returns the client id), then
// measures the server `pid` over MEASURE_S seconds.
async function measure(name, pid, client, attach) {
    const rss0 = rssKiB(pid);
    const ids = [];
    for (let i = 0; i < VIEWERS; i++) ids.push(await attach(i));
    const connected = (evs) => ids.every((id) => evs.some((e) => e.id === id && e.event === 'first-packet'));
    await client.until(connected, 30000).catch((e) => {
        console.error(JSON.stringify(client.events.filter((x) => ids.includes(x.id))));
        throw e;
    });
    await sleep(WARMUP_S * 1000);
    const rss1 = rssKiB(pid);
    const c0 = cpuUs(pid), r0 = await received(client, ids);
    const t0 = Date.now();
    // PERF=<dir>: a CPU profile of each server over the window (perf record).
    if (process.env.PERF)
        spawn('perf', ['record', '-g', '-q', '-o', `${process.env.PERF}/${name}.data`, '-p', String(pid), '--', 'sleep', String(MEASURE_S)],
            { stdio: 'ignore' });
    await sleep(MEASURE_S * 1000);
    const c1 = cpuUs(pid), r1 = await received(client, ids);
    const secs = (Date.now() - t0) / 1000;
    const pkts = r1.rtp - r0.rtp, exp = r1.expected - r0.expected;
    const res = {
        name,
        viewers: VIEWERS,
        pkts_per_s: pkts / secs,
        cpu_pct: ((c1 - c0) / 1e4) / secs,
        cpu_us_per_pkt: (c1 - c0) / Math.max(1, pkts),
        kb_per_viewer: (rss1 - rss0) / VIEWERS,
        loss_pct: exp > 0 ? (100 * Math.max(0, exp - pkts)) / exp : 100,
        bytes_per_pkt: (r1.bytes - r0.bytes) / Math.max(1, pkts),
    };
    console.log(`${name}: ${VIEWERS} viewers, ${res.pkts_per_s.toFixed(0)} pkt/s delivered, CPU ${res.cpu_pct.toFixed(1)}%,` +
        ` ${res.cpu_us_per_pkt.toFixed(2)} us/pkt (${res.bytes_per_pkt.toFixed(0)} B/pkt), ${res.kb_per_viewer.toFixed(1)} KiB/viewer,` +
        ` loss ${res.loss_pct.toFixed(3)}%`);
    for (const id of ids) await client.call({ op: 'close', id });
    return res;
}

async function main() {
    const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1'; // every peer on the one address Janus uses
    // IGW_SHARED_SOCKET=0: a libnice agent and socket per ICE-lite peer instead of the thread's shared socket (mux.h).
    const server = host(['--address', ADDR, ...(process.env.IGW_SHARED_SOCKET === '0' ? ['--agent-per-peer'] : [])], 'igw');
    const feed = await server.call({ op: 'source_rtp', id: 'feed', port: 0, video_pt: 96, audio_pt: 111 });
    const dir = IGW_ONLY ? null : mkdtempSync(path.join(tmpdir(), 'igw-bench-janus-'));
    const janusPid = IGW_ONLY ? 0 : Number(execSync(`bash ${HERE}/janus/start.sh ${dir} ${JANUS_HTTP} ${JANUS_VIDEO} ${JANUS_AUDIO}`)
        .toString().trim().split('\n').pop());
    // One feed, teed to both servers: identical packets at the same moments.
    const udp = (port) => IGW_ONLY && port !== feed.port ? 'fakesink sync=false async=false'
        : `queue ! udpsink host=127.0.0.1 port=${port} sync=false async=false`;
    const gst = spawn('gst-launch-1.0', ['-q', ...(
        `videotestsrc is-live=true pattern=${PATTERN} ! video/x-raw,width=640,height=360,framerate=30/1 ! ` +
        `x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=1000 ! ` +
        `video/x-h264,profile=constrained-baseline ! rtph264pay pt=96 config-interval=-1 mtu=1200 ! ` +
        `tee name=tv ! ${udp(feed.port)} tv. ! ${udp(JANUS_VIDEO)} ` +
        `audiotestsrc is-live=true wave=sine ! audioconvert ! audioresample ! opusenc ! rtpopuspay pt=111 ! ` +
        `tee name=ta ! ${udp(feed.port)} ta. ! ${udp(JANUS_AUDIO)}`).split(' ')], { stdio: ['ignore', 'inherit', 'inherit'] });
    const client = host(['--ice-full', '--address', ADDR, '--threads', '2', '--consent-ms', '30000'], 'viewers');
    try {
        await server.until((e) => e.some((x) => x.id === 'feed' && x.event === 'first-packet'), 10000);
        const igw = await measure('igw', server.pid, client, async (i) => {
            const o = await server.call({ op: 'viewer_offer', source: 'feed', id: `v${i}`, rev: 1 });
            const a = await client.call({ op: 'source', id: `c${i}`, rev: 1, sdp: o.sdp });
            await server.call({ op: 'viewer_answer', id: `v${i}`, rev: 1, sdp: a.sdp });
            return `c${i}`;
        });
        const k = await server.call({ op: 'sockets' }).catch(() => null); // a host before the op: no line
        if (k) console.log(`igw sockets: ${k.sent} datagrams sent, ${(k.sent / Math.max(1, k.send_batches)).toFixed(1)} per sendmmsg,` +
            ` ${k.send_dropped} dropped`);
        if (IGW_ONLY) {
            console.log(`RESULT cpu_us_per_pkt=${igw.cpu_us_per_pkt.toFixed(2)} kb_per_viewer=${igw.kb_per_viewer.toFixed(1)}` +
                ` loss_pct=${igw.loss_pct.toFixed(3)}`);
            return;
        }
        const j = new Janus(`http://127.0.0.1:${JANUS_HTTP}/janus`);
        await j.session();
        const janus = await measure('janus', janusPid, client, async (i) => {
            const { handle, offerSdp } = await j.watch(1);
            const a = await client.call({ op: 'source', id: `j${i}`, rev: 1, sdp: offerSdp });
            await j.start(handle, a.sdp);
            return `j${i}`;
        });
        await j.destroy().catch(() => {});
        const vs = janus.cpu_us_per_pkt / igw.cpu_us_per_pkt;
        console.log(`vs_janus = Janus CPU per packet / igw CPU per packet = ${vs.toFixed(2)} (target >= 3 with no loss at 50 viewers)`);
        console.log(`RESULT cpu_us_per_pkt=${igw.cpu_us_per_pkt.toFixed(2)} janus_cpu_us_per_pkt=${janus.cpu_us_per_pkt.toFixed(2)}` +
            ` vs_janus=${vs.toFixed(2)} kb_per_viewer=${igw.kb_per_viewer.toFixed(1)} loss_pct=${igw.loss_pct.toFixed(3)}`);
    } finally {
        gst.kill('SIGKILL');
        client.end();
        server.end();
        if (dir) {
            execSync(`bash ${HERE}/janus/stop.sh ${dir} || true`);
            if (!process.env.KEEP) execSync(`rm -rf ${dir}`); else console.error(`kept ${dir}`);
        }
    }
}

main().then(() => process.exit(0), (e) => {
    console.error(`bench_media: ${e.stack || e}`);
    process.exit(1);
});
