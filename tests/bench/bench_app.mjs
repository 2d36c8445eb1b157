// bench_app.mjs - pull-and-ack for bench_app.sh: drains the deliveries of
// endpoint EP (the acceptance phase's results) with /events (32) and
// /events/ack until none is left; prints deliveries/s.
// Env: BASE (…/api/v1/im/interaction), TOKEN (login), EP.
import http from 'http';

const BASE = process.env.BASE, TOKEN = process.env.TOKEN, EP = process.env.EP;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const url = new URL(BASE);

function post(path, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const headers = { 'content-length': Buffer.byteLength(data), 'content-type': 'application/json', authorization: 'Bearer ' + TOKEN };
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + path, method: 'POST', agent, headers },
      (res) => { let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve({ status: res.statusCode, body: b })); });
    req.on('error', reject);
    req.end(data);
  });
}

let n = 0;
const t0 = process.hrtime.bigint();
for (;;) {
  const r = await post('/events', { endpointId: EP, limit: 32 });
  if (r.status !== 200) throw new Error('pull: ' + r.body);
  const ids = JSON.parse(r.body).data.list.map((x) => x.deliveryId);
  if (!ids.length) break;
  const a = await post('/events/ack', { endpointId: EP, deliveryIds: ids });
  if (a.status !== 200) throw new Error('ack: ' + a.body);
  n += ids.length;
}
const s = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(`JSON ${JSON.stringify({ pull_ack_per_s: n / s, n })}`);
