import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { startTestApp, TestApp } from '../support/test-app';

/** Rows as verl's GSM8K preprocessing writes them. */
const verlRow = (i: number) => ({
  data_source: 'openai/gsm8k',
  prompt: [{ role: 'user', content: `What is ${i} + ${i}?` }],
  ability: 'math',
  reward_model: { style: 'rule', ground_truth: String(2 * i) },
  extra_info: { split: 'train', index: i },
});
const jsonl = (rows: unknown[]) => rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n';

describe('datasets (e2e)', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  const datasetsDir = () => join(t.home, 'datasets');
  const stored = () => (existsSync(datasetsDir()) ? readdirSync(datasetsDir()).length : 0);
  const upload = (payload: string | Buffer, q: string, opts: { key?: string; type?: string } = {}) =>
    t.app
      .inject({
        method: 'POST',
        url: `/v1/datasets?${q}`,
        headers: { authorization: `Bearer ${opts.key ?? alice}`, 'content-type': opts.type ?? 'application/x-ndjson' },
        payload,
      })
      .then((res) => ({ status: res.statusCode, body: res.json(), headers: res.headers }));

  beforeAll(async () => {
    // No worker: jobs that name a dataset stay queued, which is what the delete check needs.
    t = await startTestApp({ worker: false, config: { dataset_max_bytes: 4096 } });
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  });
  afterAll(() => t.close());

  it('stores a valid JSONL file in the verl layout and reports it clean', async () => {
    const file = jsonl([verlRow(1), verlRow(2), verlRow(3)]);
    const res = await upload(file, 'environment=math&name=gsm8k-mini');
    expect(res.status).toBe(201);
    const { dataset, report } = res.body;
    expect(report).toEqual({
      rows: 3,
      valid_rows: 3,
      invalid_rows: 0,
      bad_rows: [],
      columns: ['data_source', 'prompt', 'ability', 'reward_model', 'extra_info'],
    });
    expect(dataset).toMatchObject({ name: 'gsm8k-mini', environment: 'math', format: 'jsonl', rows: 3, invalid_rows: 0, bytes: Buffer.byteLength(file) });
    expect(readFileSync(join(datasetsDir(), dataset.id, 'data.jsonl'), 'utf8')).toBe(file);
    expect((await t.request('GET', `/v1/datasets/${dataset.id}`, { key: alice })).body).toEqual(dataset);
  });

  it('keeps a file with some bad rows and names the first of them with their line and reason', async () => {
    const rows = [verlRow(1), { prompt: 'What is 1+1?' }, 'not json {', verlRow(2), { question: 'What is 3+3?', answer: '#### 6' }, [1, 2]];
    const res = await upload(jsonl(rows), 'environment=math&name=mixed');
    expect(res.status).toBe(201);
    expect(res.body.report).toMatchObject({ rows: 6, valid_rows: 3, invalid_rows: 3 });
    expect(res.body.report.bad_rows).toEqual([
      { row: 2, reason: expect.stringMatching(/^no ground truth/) },
      { row: 3, reason: expect.stringMatching(/^line 3 is not JSON/) },
      { row: 6, reason: 'not a JSON object' },
    ]);
    expect(res.body.dataset).toMatchObject({ rows: 6, invalid_rows: 3, bad_rows: res.body.report.bad_rows });
  });

  it('refuses the same file with strict=true, and keeps nothing', async () => {
    const before = stored();
    const res = await upload(jsonl([verlRow(1), { prompt: 'q' }]), 'environment=math&name=strict&strict=true');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'OT_ERR_DATASET_INVALID', details: { rows: 2, valid_rows: 1, invalid_rows: 1 } });
    expect(stored()).toBe(before);
  });

  it('refuses a file without the columns the environment needs: 400 with the code and the report, nothing on disk', async () => {
    const before = stored();
    const rows = Array.from({ length: 25 }, (_, i) => ({ text: `sentence ${i}`, label: i % 2 }));
    const res = await upload(jsonl(rows), 'environment=math&name=wrong-columns');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('OT_ERR_DATASET_INVALID');
    expect(res.body.message).toContain('no row is usable');
    expect(res.body.details).toMatchObject({ rows: 25, valid_rows: 0, invalid_rows: 25, columns: ['text', 'label'] });
    expect(res.body.details.bad_rows).toHaveLength(20);
    expect(res.body.details.bad_rows[0]).toEqual({ row: 1, reason: 'no prompt' });
    expect(stored()).toBe(before);
  });

  it('accepts any JSON object rows for an environment without a row check', async () => {
    const res = await upload(jsonl([{ anything: 1 }, { else: [2] }]), 'environment=gomoku&name=free-form');
    expect(res.status).toBe(201);
    expect(res.body.report).toMatchObject({ rows: 2, valid_rows: 2 });
  });

  it('answers 413 with a stable code past dataset_max_bytes and leaves nothing on disk', async () => {
    const before = stored();
    const big = jsonl(Array.from({ length: 80 }, (_, i) => verlRow(i)));
    expect(Buffer.byteLength(big)).toBeGreaterThan(4096);
    const res = await upload(big, 'environment=math&name=big');
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 'OT_ERR_DATASET_TOO_LARGE', details: { limit_bytes: 4096 } });
    expect(stored()).toBe(before);
  });

  it('stops reading a streamed body (no content-length) at the limit: 413, nothing on disk', async () => {
    const before = stored();
    const line = JSON.stringify(verlRow(7)) + '\n';
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/datasets?environment=math&name=streamed',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/jsonl' },
      payload: Readable.from(
        (function* () {
          for (let i = 0; i < 200; i++) yield Buffer.from(line);
        })(),
      ),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('OT_ERR_DATASET_TOO_LARGE');
    expect(stored()).toBe(before);
  });

  it('refuses unknown environments, missing names, and octet-stream without a format', async () => {
    const file = jsonl([verlRow(1)]);
    const unknown = await upload(file, 'environment=chess&name=x');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'environment', message: expect.stringContaining('known: ') });
    expect((await upload(file, 'environment=math')).body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'name' });
    const octet = await upload(file, 'environment=math&name=x', { type: 'application/octet-stream' });
    expect(octet.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'format' });
    const contradiction = await upload(file, 'environment=math&name=x&format=parquet');
    expect(contradiction.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'format' });
    const asOctet = await upload(file, 'environment=math&name=octet&format=jsonl', { type: 'application/octet-stream' });
    expect(asOctet.status).toBe(201);
    const notParquet = await upload(file, 'environment=math&name=x&format=parquet', { type: 'application/octet-stream' });
    expect(notParquet.status).toBe(400);
    expect(notParquet.body).toMatchObject({ code: 'OT_ERR_DATASET_INVALID', message: expect.stringContaining('PAR1') });
  });

  it('only the upload route takes raw file bodies: another route answers 415', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/octet-stream' },
      payload: Buffer.from('xx'),
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().code).toBe('OT_ERR_UNSUPPORTED_MEDIA_TYPE');
  });

  it('stores parquet files (nested reward_model column) and previews their rows as JSON', async () => {
    const file = parquetWriteBuffer({
      columnData: [
        { name: 'data_source', data: ['openai/gsm8k', 'openai/gsm8k'] },
        { name: 'prompt', data: ['What is 2+2?', 'What is 3+4?'] },
        {
          name: 'reward_model',
          data: [
            { style: 'rule', ground_truth: '4' },
            { style: 'rule', ground_truth: null },
          ],
        },
      ],
    });
    const res = await upload(Buffer.from(file), 'environment=math&name=pq', { type: 'application/vnd.apache.parquet' });
    expect(res.status).toBe(201);
    expect(res.body.dataset).toMatchObject({ format: 'parquet', rows: 2, invalid_rows: 1, columns: ['data_source', 'prompt', 'reward_model'] });
    expect(res.body.report.bad_rows).toEqual([{ row: 2, reason: expect.stringMatching(/^no ground truth/) }]);
    expect(existsSync(join(datasetsDir(), res.body.dataset.id, 'data.parquet'))).toBe(true);
    const preview = await t.request('GET', `/v1/datasets/${res.body.dataset.id}/preview?limit=1`, { key: alice });
    expect(preview.body.rows).toEqual([{ row: 1, value: { data_source: 'openai/gsm8k', prompt: 'What is 2+2?', reward_model: { style: 'rule', ground_truth: '4' } } }]);
  });

  it('previews the first rows of a JSONL file, bad lines with their reason', async () => {
    const id = (await upload(jsonl([verlRow(1), 'oops', verlRow(2), verlRow(3)]), 'environment=math&name=preview')).body.dataset.id;
    const preview = await t.request('GET', `/v1/datasets/${id}/preview?limit=3`, { key: alice });
    expect(preview.status).toBe(200);
    expect(preview.body.rows).toEqual([
      { row: 1, value: verlRow(1) },
      { row: 2, value: null, error: expect.stringMatching(/^line 2 is not JSON/) },
      { row: 3, value: verlRow(2) },
    ]);
    expect((await t.request('GET', `/v1/datasets/${id}/preview?limit=0`, { key: alice })).body).toMatchObject({ field: 'limit' });
  });

  it('keeps users apart: another user cannot see, preview or delete a dataset; admins see all', async () => {
    const id = (await upload(jsonl([verlRow(1)]), 'environment=math&name=private')).body.dataset.id;
    for (const [method, url] of [
      ['GET', `/v1/datasets/${id}`],
      ['GET', `/v1/datasets/${id}/preview`],
      ['DELETE', `/v1/datasets/${id}`],
    ]) {
      expect((await t.request(method, url, { key: bob })).body).toMatchObject({ statusCode: 404, code: 'OT_ERR_NOT_FOUND' });
    }
    const bobs = await t.request('GET', '/v1/datasets', { key: bob });
    expect(bobs.body).toMatchObject({ items: [], total: 0 });
    const alices = await t.request('GET', '/v1/datasets', { key: alice });
    expect(alices.body.items.map((d: { id: string }) => d.id)).toContain(id);
    expect(alices.body.items.every((d: { owner_id: string }) => d.owner_id === alices.body.items[0].owner_id)).toBe(true);
    expect((await upload(jsonl([verlRow(5)]), 'environment=math&name=bobs', { key: bob })).status).toBe(201);
    const all = await t.request('GET', '/v1/datasets?limit=200');
    expect(all.body.total).toBe(alices.body.total + 1);
    expect(existsSync(join(datasetsDir(), id))).toBe(true);
  });

  it('refuses at submit a job naming a dataset that is not the caller’s, not there, or checked for other rows', async () => {
    const mine = (await upload(jsonl([verlRow(1)]), 'environment=math&name=for-jobs')).body.dataset.id;
    const free = (await upload(jsonl([{ board: 1 }]), 'environment=gomoku&name=free')).body.dataset.id;
    const submit = (key: string, environment: object) => t.request('POST', '/v1/jobs', { key, body: { kind: 'inference', environment, model: { preset: 'tiny-test' } } });
    const notBobs = await submit(bob, { id: 'math', dataset: mine });
    expect(notBobs.status).toBe(400);
    expect(notBobs.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'environment.dataset' });
    const missing = await submit(alice, { id: 'math', val_dataset: '1b4e28ba-2fa1-41d2-883f-0016d3cca427' });
    expect(missing.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'environment.val_dataset' });
    const otherRows = await submit(alice, { id: 'math', dataset: free });
    expect(otherRows.body).toMatchObject({ field: 'environment.dataset', message: expect.stringContaining('was checked for environment gomoku') });
    const remote = await submit(alice, { id: 'math', url: 'http://127.0.0.1:9/', dataset: mine });
    expect(remote.body).toMatchObject({ field: 'environment.dataset', message: expect.stringContaining('remote environment') });
    const tool = await submit(alice, { id: 'math-tool', dataset: mine, val_dataset: mine });
    expect(tool.body).toMatchObject({ state: 'queued' });
    await t.request('POST', `/v1/jobs/${tool.body.id}/cancel`, { key: alice });
  });

  it('deletes a dataset and its file; refuses with 409 while a queued job names it', async () => {
    const id = (await upload(jsonl([verlRow(1), verlRow(2)]), 'environment=math&name=used')).body.dataset.id;
    const job = await t.request('POST', '/v1/jobs', {
      key: alice,
      body: { kind: 'inference', environment: { id: 'math', dataset: id }, model: { preset: 'tiny-test' } },
    });
    expect(job.status).toBe(201);
    const refused = await t.request('DELETE', `/v1/datasets/${id}`, { key: alice });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'OT_ERR_DATASET_IN_USE', details: { jobs: [job.body.id] } });

    await t.request('POST', `/v1/jobs/${job.body.id}/cancel`, { key: alice });
    const deleted = await t.request('DELETE', `/v1/datasets/${id}`, { key: alice });
    expect(deleted.status).toBe(204);
    expect(existsSync(join(datasetsDir(), id))).toBe(false);
    expect((await t.request('GET', `/v1/datasets/${id}`, { key: alice })).status).toBe(404);
  });
});
