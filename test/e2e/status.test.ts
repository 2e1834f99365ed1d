import { afterAll, describe, expect, it } from 'vitest';
import { PayoutClient } from '../../src/api/client.js';
import { Secret } from '../../src/api/secret.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { fixture, parseJsonStdout, runCli, spawnCli, tempHome } from '../helpers/cli.js';
import { startTlsServer } from '../helpers/http-servers.js';
import { testService } from '../helpers/sandbox.js';

// What only a process of its own shows: a signal, and a CA that Node reads at start-up.
// Everything else about `payouts status` is in test/inprocess/status.test.ts.

describe('payouts status as a process', () => {
  const home = tempHome();
  afterAll(() => home.cleanup());

  it('stops a --watch on SIGINT with exit 130', async () => {
    const slow = await testService({ pendingDelayMs: 3_600_000 });
    const client = new PayoutClient({
      baseUrl: slow.sandbox.baseUrl,
      clientId: SANDBOX_CREDENTIALS.clientId,
      clientSecret: new Secret(SANDBOX_CREDENTIALS.clientSecret),
      userAgent: 'status-test',
    });
    try {
      await client.createPayouts({
        payouts: [
          {
            reference_id: 'w-4',
            recipient: 'x+pending@example.com',
            amount: '12.50',
            currency: 'USD',
          },
        ],
      });
      const child = spawnCli(['status', 'w-4', '--watch', '--interval', '5'], { env: slow.env });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      child.stdin.end();
      // Signalled once the watch has shown the payout, however long the start takes.
      const until = Date.now() + 30_000;
      while (!stderr.includes('w-4: pending') && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(stderr).toContain('w-4: pending');
      const exited = new Promise<number | null>((resolve) =>
        child.on('close', (code) => resolve(code)),
      );
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/interrupted/);
    } finally {
      await client.close();
      await slow.close();
    }
  });

  it('trusts a private CA through NODE_EXTRA_CA_CERTS', async () => {
    // Node reads the variable once, at start-up; the refusal without it is an in-process test.
    const server = await startTlsServer();
    try {
      const trusted = await runCli(['status', 't-1', '--json'], {
        env: {
          ...home.env,
          PAYOUTS_CLIENT_ID: 'cid',
          PAYOUTS_CLIENT_SECRET: 'status-test-secret',
          PAYOUTS_BASE_URL: server.url,
          NODE_EXTRA_CA_CERTS: fixture('status', 'tls-cert.pem'),
        },
      });
      expect(trusted.code).toBe(0);
      const doc = parseJsonStdout<{ results: Array<{ status: string }> }>(trusted);
      expect(doc.results[0]?.status).toBe('success');
    } finally {
      await server.close();
    }
  });
});
