// Floor for `payouts send FILE --yes --json`: csv-parse reads the whole file into prebuilt
// JSON create-request bodies of CHUNK payouts (every row is read before the first send), then
// raw undici.request posts them through one shared Agent, CONCURRENCY at a time, reading and
// parsing every answer. Prints {"rows","requests","success_count"}.
//
// Usage: node bench/floors/undici-send.mjs FILE BASE_URL CHUNK CONCURRENCY

import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import { Agent, request } from 'undici';

const [file, baseUrl, chunkText = '100', concurrencyText = '4'] = process.argv.slice(2);
const chunkSize = Number(chunkText);
const concurrency = Number(concurrencyText);

// Amounts are written as the file's text (a JSON number), as the CLI does.
function payoutJson(r) {
  let out = `{"amount":${r.amount},"currency":${JSON.stringify(r.currency)},"recipient":${JSON.stringify(r.recipient)},"reference_id":${JSON.stringify(r.reference_id)}`;
  if (r.description) out += `,"description":${JSON.stringify(r.description)}`;
  return `${out}}`;
}

const bodies = [];
let chunk = [];
let rows = 0;
for await (const r of createReadStream(file).pipe(parse({ bom: true, columns: true }))) {
  rows++;
  chunk.push(payoutJson(r));
  if (chunk.length === chunkSize) {
    bodies.push(`{"payouts":[${chunk.join(',')}]}`);
    chunk = [];
  }
}
if (chunk.length > 0) bodies.push(`{"payouts":[${chunk.join(',')}]}`);

const url = `${baseUrl}/api/v1/payouts`;
const dispatcher = new Agent({ connections: concurrency });
const headers = {
  'client-id': process.env.PAYOUTS_CLIENT_ID ?? 'bench',
  'client-secret': process.env.PAYOUTS_CLIENT_SECRET ?? 'bench-secret',
  'content-type': 'application/json',
  accept: 'application/json',
};
let next = 0;
let successCount = 0;
async function worker() {
  while (next < bodies.length) {
    const body = bodies[next++];
    const res = await request(url, { method: 'POST', headers, body, dispatcher });
    const doc = await res.body.json();
    if (res.statusCode !== 200 || !doc.success) {
      throw new Error(`HTTP ${res.statusCode}: ${JSON.stringify(doc).slice(0, 200)}`);
    }
    successCount += doc.data.success_count;
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
await dispatcher.close();
process.stdout.write(
  `${JSON.stringify({ rows, requests: bodies.length, success_count: successCount })}\n`,
);
