import { isOpenTinkerError, OpenTinkerClient } from '@opentinker/client';
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

const row = (i: number) => ({ prompt: [{ role: 'user', content: `What is ${i} + 1?` }], reward_model: { ground_truth: String(i + 1) } });
const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** `client.uploadDataset()` over a real socket: paths, Node streams and Blobs are streamed, errors keep their code and report. */
describe('@opentinker/client datasets', () => {
  let t: TestApp;
  let client: OpenTinkerClient;
  let dir: string;
  let baseUrl: string;
  let key: string;
  const LIMIT = 2 * 1024 * 1024;

  beforeAll(async () => {
    t = await startTestApp({ worker: false, config: { dataset_max_bytes: LIMIT } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = await t.app.getUrl();
    const admin = new OpenTinkerClient({ baseUrl, apiKey: t.adminKey });
    const { api_key } = await admin.users.create({ name: 'dora' });
    key = api_key.key;
    client = new OpenTinkerClient({ baseUrl, apiKey: key });
    dir = mkdtempSync(join(tmpdir(), 'ot-client-ds-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  it('uploads a file path (name and format from the file name), then lists, previews and deletes it', async () => {
    const path = join(dir, 'train.jsonl');
    writeFileSync(path, jsonl([row(1), row(2), { prompt: 'no answer' }]));
    const { dataset, report } = await client.uploadDataset(path, { environment: 'math' });
    expect(dataset).toMatchObject({ name: 'train.jsonl', format: 'jsonl', rows: 3, invalid_rows: 1 });
    expect(report.bad_rows).toEqual([{ row: 3, reason: expect.stringMatching(/^no ground truth/) }]);

    expect((await client.datasets.list()).items.map((d) => d.id)).toEqual([dataset.id]);
    expect(await client.datasets.get(dataset.id)).toEqual(dataset);
    const preview = await client.datasets.preview(dataset.id, { limit: 2 });
    expect(preview.rows).toEqual([
      { row: 1, value: row(1) },
      { row: 2, value: row(2) },
    ]);
    await client.datasets.delete(dataset.id);
    await expect(client.datasets.get(dataset.id)).rejects.toMatchObject({ code: 'OT_ERR_NOT_FOUND', status: 404 });
  });

  it('takes files larger than the JSON body limit (body_limit_bytes does not apply to uploads)', async () => {
    const path = join(dir, 'large.jsonl');
    const rows = Array.from({ length: 1500 }, (_, i) => ({ ...row(i), pad: 'x'.repeat(1000) }));
    writeFileSync(path, jsonl(rows));
    const { dataset } = await client.uploadDataset(path, { environment: 'math' });
    expect(dataset.bytes).toBeGreaterThan(1024 * 1024);
    expect(dataset.rows).toBe(1500);
  });

  it('streams a Node read stream and a web stream, and uploads a Blob', async () => {
    const path = join(dir, 'stream.data');
    writeFileSync(path, jsonl([row(3)]));
    const streamed = await client.datasets.upload(createReadStream(path), { environment: 'math', name: 'streamed', format: 'jsonl' });
    expect(streamed.dataset).toMatchObject({ name: 'streamed', rows: 1 });
    const web = await client.datasets.upload(new Blob([jsonl([row(6)])]).stream(), { environment: 'math', name: 'web-stream', format: 'jsonl' });
    expect(web.dataset).toMatchObject({ name: 'web-stream', rows: 1 });
    const blob = await client.uploadDataset(new Blob([jsonl([row(4), row(5)])]), { environment: 'math', name: 'blob', format: 'jsonl' });
    expect(blob.dataset).toMatchObject({ name: 'blob', rows: 2 });
  });

  it('rejects with the server’s code, field and report', async () => {
    const path = join(dir, 'bad.jsonl');
    writeFileSync(path, jsonl([{ text: 'a' }, { text: 'b' }]));
    const error = await client.uploadDataset(path, { environment: 'math' }).catch((e: unknown) => e);
    expect(isOpenTinkerError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'OT_ERR_DATASET_INVALID', status: 400, details: { rows: 2, valid_rows: 0 } });
    await expect(client.uploadDataset(path, { environment: 'nope' })).rejects.toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'environment' });
    await expect(client.uploadDataset(join(dir, 'data.csv'), { environment: 'math' })).rejects.toMatchObject({ field: 'format' });
    await expect(client.uploadDataset(join(dir, 'missing.jsonl'), { environment: 'math' })).rejects.toMatchObject({ field: 'source' });
  });

  it('gets the 413 answer for a streamed file past the limit, and nothing stays on the server', async () => {
    const path = join(dir, 'big.jsonl');
    writeFileSync(path, jsonl(Array.from({ length: 40_000 }, (_, i) => row(i))));
    const before = existsSync(join(t.home, 'datasets')) ? readdirSync(join(t.home, 'datasets')).length : 0;
    await expect(client.uploadDataset(path, { environment: 'math' })).rejects.toMatchObject({ code: 'OT_ERR_DATASET_TOO_LARGE', status: 413 });
    expect(readdirSync(join(t.home, 'datasets')).length).toBe(before);
    // The server still answers on a fresh connection.
    expect((await client.datasets.list()).total).toBeGreaterThan(0);
  });

  it('removes the partial file when the client goes away mid-upload', async () => {
    const { hostname, port } = new URL(baseUrl);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /v1/datasets?environment=math&name=cut HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\n` +
        'Content-Type: application/x-ndjson\r\nContent-Length: 1000000\r\n\r\n' +
        jsonl(Array.from({ length: 200 }, (_, i) => row(i))),
    );
    const folder = join(t.home, 'datasets');
    const uploads = () => (existsSync(folder) ? readdirSync(folder).filter((d) => existsSync(join(folder, d, 'upload.part'))) : []);
    await waitFor(async () => uploads().length === 1);
    socket.destroy();
    await waitFor(async () => uploads().length === 0);
    expect((await client.datasets.list()).items.map((d) => d.name)).not.toContain('cut');
  });
});
