// bench_app.mjs - the Node.js half of bench_app.sh (which measures acceptance
// with igw-loadgen first): with a provisioned demo tenant and a running igwd,
//  1. command-to-push: a real MQTT device (npm `mqtt`) answers every downlink
//     at once; the command's result frame arrives on a new endpoint's
//     WebSocket: p50/p99 from sending the command to receiving its frame;
//  2. pull-and-ack: deliveries/s drained from endpoint EP (the acceptance
//     phase's results) with /events (32) + /events/ack.
// Env: BASE, TOKEN, EP, DEVICE (JSON of demo.json .device), MQTT_PORT,
//      NODE_DIR, WAIT_MS (12000: the acceptance phase's deadlines settle).
import { createRequire } from 'module';
import http from 'http';
const require = createRequire(process.env.NODE_DIR + '/package.json');
const WebSocket = require('ws');
const mqtt = require('mqtt');

const BASE = process.env.BASE, TOKEN = process.env.TOKEN;
const dev = JSON.parse(process.env.DEVICE);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const url = new URL(BASE);

function post(path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const headers = { 'content-length': Buffer.byteLength(data), authorization: 'Bearer ' + TOKEN };
    if (data) headers['content-type'] = 'application/json';
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + path, method: 'POST', agent, headers },
      (res) => { let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve({ status: res.statusCode, body: b })); });
    req.on('error', reject);
    req.end(data);
  });
}
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : NaN; };
const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6;
let seq = 0;
const command = (ep) => ({ endpointId: ep, command: { msgToken: 'b' + (++seq) + '-' + process.pid, method: 'device.propertyControl',
  target: { productID: dev.productID, deviceName: dev.deviceName }, params: { properties: { brightness: seq % 101 } } } });

async function register() {
  const r = await post('/endpoints/register');
  if (r.status !== 200) throw new Error('register: ' + r.body);
  return JSON.parse(r.body).data.endpointId;
}

// 2. command -> device reply (MQTT) -> result -> push
async function pushLatency(ep) {
  const device = mqtt.connect(`mqtt://127.0.0.1:${process.env.MQTT_PORT}`, { clientId: `${dev.productID}&${dev.deviceName}`,
    username: dev.username, password: dev.password, clean: true, protocolVersion: 4 });
  await new Promise((res, rej) => { device.on('connect', res); device.on('error', rej); });
  await device.subscribeAsync(`$thing/down/property/${dev.productID}/${dev.deviceName}`, { qos: 1 });
  device.on('message', (topic, payload) => {
    const m = JSON.parse(payload.toString());
    device.publish(`$thing/up/property/${dev.productID}/${dev.deviceName}`, JSON.stringify({ method: 'controlReply', msgToken: m.msgToken, code: 200 }), { qos: 1 });
  });
  const ws = new WebSocket(BASE.replace('http', 'ws') + '/events/ws/' + ep, { headers: { authorization: 'Bearer ' + TOKEN } });
  await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
  const sent = new Map(), lat = [];
  ws.on('message', (data) => { const f = JSON.parse(data.toString()); const t = sent.get(f.event.msgToken); if (t) { lat.push(ms(t)); sent.delete(f.event.msgToken); } });
  const n = 2000;
  for (let i = 0; i < n; i++) {
    const c = command(ep);
    sent.set(c.command.msgToken, process.hrtime.bigint());
    await post('/commands', c);
    await new Promise((r) => setTimeout(r, 2));
  }
  const until = Date.now() + 5000;
  while (sent.size && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  ws.close(); device.end();
  return { p50: pct(lat, 0.5), p99: pct(lat, 0.99), missing: sent.size, n };
}

// 3. drain: pull 32, ack them, until nothing is left
async function pullAck(ep) {
  let n = 0;
  const t0 = process.hrtime.bigint();
  for (;;) {
    const r = JSON.parse((await post('/events', { endpointId: ep, limit: 32 })).body);
    const ids = r.data.list.map((x) => x.deliveryId);
    if (!ids.length) break;
    const a = await post('/events/ack', { endpointId: ep, deliveryIds: ids });
    if (a.status !== 200) throw new Error('ack: ' + a.body);
    n += ids.length;
  }
  return { perSec: n / (ms(t0) / 1000), n };
}

// The acceptance phase's commands (no device answers them) time out into
// results over the next seconds; push is measured after that storm, on its own.
await new Promise((r) => setTimeout(r, Number(process.env.WAIT_MS || 12000)));
const p = await pushLatency(await register());
console.log(`command-to-push (MQTT device answering): p50 ${p.p50.toFixed(2)} ms p99 ${p.p99.toFixed(2)} ms over ${p.n} commands, ${p.missing} missing`);
const d = await pullAck(process.env.EP);
console.log(`pull-and-ack: ${d.perSec.toFixed(0)} deliveries/s over ${d.n}`);
console.log(`JSON ${JSON.stringify({ push_p99_ms: p.p99, pull_ack_per_s: d.perSec })}`);
process.exit(0);
