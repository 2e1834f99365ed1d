// Floor for `payouts send FILE --dry-run`: csv-parse alone streaming the same file and
// counting its records (the header included). Prints {"records":N}.
//
// Usage: node bench/floors/csv-count.mjs FILE

import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';

const file = process.argv[2];
let records = 0;
const parser = createReadStream(file).pipe(parse({ bom: true }));
parser.on('data', () => {
  records++;
});
parser.on('end', () => {
  process.stdout.write(`${JSON.stringify({ records })}\n`);
});
parser.on('error', (err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exitCode = 1;
});
