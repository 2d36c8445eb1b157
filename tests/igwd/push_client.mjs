// push_client.mjs URL TOKEN SECONDS - connects to events_push with the login
// token and prints each received frame as one line of JSON; exits after
// SECONDS (or on close, printing "CLOSE <code>").
import { createRequire } from 'module';
const require = createRequire(process.env.WS_NODE_DIR + '/package.json');
const WebSocket = require('ws');
const [url, token, seconds] = process.argv.slice(2);
const ws = new WebSocket(url, { headers: { authorization: 'Bearer ' + token } });
ws.on('unexpected-response', (req, res) => { console.log('HTTP ' + res.statusCode); process.exit(0); });
ws.on('open', () => console.log('OPEN'));
ws.on('message', (data) => console.log(data.toString()));
ws.on('close', (code) => { console.log('CLOSE ' + code); process.exit(0); });
ws.on('error', (e) => { console.log('ERROR ' + e.message); process.exit(0); });
setTimeout(() => { ws.close(1000); }, Number(seconds) * 1000);
