import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestApp } from '../support/test-app';
import { startTenants } from './tenants';

const HOSTILE_PARQUET = readFileSync(join(process.cwd(), 'test', 'fixtures', 'hostile', 'ten-million-rows.parquet'));

/**
 * Attack 4 of SECURITY.md: a small upload that expands into millions of rows (or one huge line) froze
 * the API's event loop and took its memory. The API must stay responsive (a probe measures /health
 * while the upload is handled) and refuse the file with a 413 naming the setting, keeping nothing.
 */
describe('security: uploads never block the API or blow its memory', () => {
  /** Uploads `body` while probing /health every 20 ms; the slowest probe's latency in ms. */
  async function uploadWhileProbing(t: TestApp, key: string, body: Buffer, type: string) {
    let slowest = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const started = performance.now();
        const res = await t.request('GET', '/health', { key: null });
        expect(res.status).toBe(200);
        slowest = Math.max(slowest, performance.now() - started);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/datasets?environment=math&name=hostile',
      headers: { authorization: `Bearer ${key}`, 'content-type': type },
      payload: body,
    });
    probing = false;
    await probe;
    return { status: res.statusCode, body: JSON.parse(res.body), slowest };
  }

  const kept = (t: TestApp) => {
    try {
      return readdirSync(join(t.home, 'datasets'));
    } catch {
      return [];
    }
  };

  it('4. a 2 KB parquet file declaring 10 M rows is refused from its footer, at once', async () => {
    const s = await startTenants();
    try {
      expect(HOSTILE_PARQUET.length).toBeLessThan(4096);
      const res = await uploadWhileProbing(s.t, s.bob, HOSTILE_PARQUET, 'application/vnd.apache.parquet');
      expect([res.status, res.body.code]).toEqual([413, 'OT_ERR_DATASET_TOO_LARGE']);
      expect(res.body.message).toMatch(/more than 1000000 rows \(setting dataset_max_rows\)/);
      expect(res.slowest).toBeLessThan(1000);
      expect(kept(s.t)).toEqual([]);
    } finally {
      await s.t.close();
    }
  });

  it('4. with the row cap raised, decoding runs in a thread whose memory cap stops it; the API keeps answering', async () => {
    const s = await startTenants({ config: { dataset_max_rows: 100_000_000, dataset_parse_memory_mb: 128 } });
    try {
      const before = process.memoryUsage().heapUsed;
      const res = await uploadWhileProbing(s.t, s.bob, HOSTILE_PARQUET, 'application/vnd.apache.parquet');
      expect([res.status, res.body.code]).toEqual([413, 'OT_ERR_DATASET_TOO_LARGE']);
      expect(res.body.message).toMatch(/more than 128 MiB \(setting dataset_parse_memory_mb\)/);
      expect(res.slowest).toBeLessThan(1000);
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 1024 * 1024);
      expect(kept(s.t)).toEqual([]);
    } finally {
      await s.t.close();
    }
  }, 60_000);

  it('4. a JSONL line longer than the line cap is refused while streaming, not held whole', async () => {
    const s = await startTenants({ config: { dataset_max_line_bytes: 64 * 1024 } });
    try {
      const line = Buffer.from(JSON.stringify({ prompt: 'x'.repeat(4 * 1024 * 1024), reward_model: { ground_truth: '1' } }) + '\n');
      const res = await uploadWhileProbing(s.t, s.bob, line, 'application/x-ndjson');
      expect([res.status, res.body.code]).toEqual([413, 'OT_ERR_DATASET_TOO_LARGE']);
      expect(res.body.message).toMatch(/line 1 is longer than 65536 bytes \(setting dataset_max_line_bytes\)/);
      expect(kept(s.t)).toEqual([]);
    } finally {
      await s.t.close();
    }
  });

  it("4. a user's datasets stop at their storage quota", async () => {
    const row = JSON.stringify({ prompt: [{ role: 'user', content: 'q'.repeat(900) }], reward_model: { ground_truth: '1' } }) + '\n';
    const quota = Buffer.byteLength(row) * 3;
    const s = await startTenants({ config: { storage_quota_bytes: quota } });
    try {
      const upload = (key: string, rows: number) =>
        s.t.request('POST', '/v1/datasets?environment=math&name=q', { key, headers: { 'content-type': 'application/x-ndjson' }, body: row.repeat(rows) });
      expect((await upload(s.bob, 2)).status).toBe(201);
      const over = await upload(s.bob, 2);
      expect([over.status, over.body.code]).toEqual([413, 'OT_ERR_QUOTA_EXCEEDED']);
      expect(over.body.message).toContain(`storage quota of ${quota} bytes (operator setting storage_quota_bytes)`);
      expect((await upload(s.bob, 1)).status).toBe(201);
      expect((await upload(s.alice, 2)).status).toBe(201);
      expect(kept(s.t)).toHaveLength(3);
      const job = await s.t.request('POST', '/v1/jobs', { key: s.bob, body: { kind: 'train', environment: { id: 'math' }, model: { preset: 'tiny-char' }, total_steps: 1 } });
      expect([job.status, job.body.code]).toEqual([413, 'OT_ERR_QUOTA_EXCEEDED']);
    } finally {
      await s.t.close();
    }
  });
});
