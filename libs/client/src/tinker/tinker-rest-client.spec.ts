import { FakeTinkerServer, recordedSleep } from '../testing/fake-tinker-server';
import type { OpenTinkerError } from '../errors';
import { TinkerHttp } from './tinker-http';
import { parseTinkerPath, TinkerRestClient } from './tinker-rest-client';

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

const CHECKPOINT = {
  checkpoint_id: 'weights/ckpt-a',
  checkpoint_type: 'training',
  time: '2026-12-05T10:00:00Z',
  tinker_path: 'tinker://s:train:0/weights/ckpt-a',
  size_bytes: 1234,
  user_metadata: { step_name: 'late' },
};
const RUN = { training_run_id: 's:train:0', base_model: 'tiny-char', model_owner: 'alice', is_lora: true, lora_rank: 8, last_request_time: '2026-12-05T10:00:00Z' };

function setup() {
  const fake = new FakeTinkerServer();
  const http = new TinkerHttp({ baseUrl: 'http://tinker.test', fetch: fake.fetch }, recordedSleep().sleep, () => 0);
  return { fake, rest: new TinkerRestClient(http) };
}

describe('TinkerRestClient', () => {
  it('lists checkpoints and training runs on the SDK’s routes, in camelCase, user metadata keys as they are', async () => {
    const { fake, rest } = setup();
    fake.script('GET training_runs/s%3Atrain%3A0/checkpoints', { json: { checkpoints: [CHECKPOINT] } });
    fake.script('GET checkpoints', { json: { checkpoints: [CHECKPOINT], cursor: { offset: 5, limit: 10, total_count: 6 } } });
    fake.script('GET training_runs', { json: { training_runs: [RUN], cursor: { offset: 0, limit: 20, total_count: 1 } } });
    fake.script('GET training_runs/s%3Atrain%3A0', { json: RUN });
    const listed = await rest.listCheckpoints('s:train:0');
    expect(listed.checkpoints[0]).toEqual({
      checkpointId: 'weights/ckpt-a',
      checkpointType: 'training',
      time: '2026-12-05T10:00:00Z',
      tinkerPath: 'tinker://s:train:0/weights/ckpt-a',
      sizeBytes: 1234,
      public: false,
      userMetadata: { step_name: 'late' },
    });
    expect((await rest.listUserCheckpoints({ limit: 10, offset: 5 })).cursor).toEqual({ offset: 5, limit: 10, totalCount: 6 });
    expect((await rest.listTrainingRuns()).trainingRuns[0]).toMatchObject({ trainingRunId: 's:train:0', loraRank: 8, corrupted: false });
    expect(await rest.getTrainingRunByTinkerPath('tinker://s:train:0/weights/ckpt-a')).toMatchObject({ baseModel: 'tiny-char' });
    expect(fake.seen.map((s) => s.path)).toEqual([
      'training_runs/s%3Atrain%3A0/checkpoints',
      'checkpoints?limit=10&offset=5',
      'training_runs?limit=20&offset=0&access_scope=owned',
      'training_runs/s%3Atrain%3A0?access_scope=owned',
    ]);
  });

  it('deletes a checkpoint by its path (the kind and name as two path segments) and reads weights info', async () => {
    const { fake, rest } = setup();
    fake.script('DELETE training_runs/s%3Atrain%3A0/checkpoints/sampler_weights/a%20b', { status: 200 });
    await rest.deleteCheckpointFromTinkerPath('tinker://s:train:0/sampler_weights/a b');
    fake.script('POST weights_info', { json: { base_model: 'tiny-char', is_lora: true, lora_rank: 8, train_mlp: true } });
    expect(await rest.getWeightsInfoByTinkerPath('tinker://s:train:0/weights/ckpt-a')).toEqual({ baseModel: 'tiny-char', isLora: true, loraRank: 8, trainMlp: true });
    expect(fake.sent('POST weights_info')[0].json).toEqual({ tinker_path: 'tinker://s:train:0/weights/ckpt-a' });
  });

  it('gives another user’s 404 as the server’s error, in the user category, and a malformed answer as a bad response', async () => {
    const { fake, rest } = setup();
    fake.script('GET training_runs/s%3Atrain%3A0', { status: 404, json: { code: 'OT_ERR_NOT_FOUND', message: 'training run s:train:0 not found' } });
    expect(await errorOf(rest.getTrainingRun('s:train:0'))).toMatchObject({ status: 404, code: 'OT_ERR_NOT_FOUND', category: 'user' });
    fake.script('GET training_runs/s%3Atrain%3A0', { json: { training_run_id: 's:train:0' } });
    expect(await errorOf(rest.getTrainingRun('s:train:0'))).toMatchObject({ code: 'OT_ERR_BAD_RESPONSE', message: expect.stringMatching(/base_model/) });
  });

  it('reads a checkpoint’s download URL from a redirect or from JSON, as the SDK does', async () => {
    const { fake, rest } = setup();
    const route = 'GET training_runs/s%3Atrain%3A0/checkpoints/weights/ckpt-a/archive';
    fake.script(route, new Response(null, { status: 302, headers: { location: 'https://files.test/a.tar', expires: 'Sat, 05 Dec 2026 12:00:00 GMT' } }));
    expect(await rest.getCheckpointArchiveUrlFromTinkerPath('tinker://s:train:0/weights/ckpt-a')).toEqual({
      url: 'https://files.test/a.tar',
      expires: new Date('2026-12-05T12:00:00Z'),
    });
    expect(fake.sent(route)[0].headers.accept).toBe('application/json');
    fake.script(route, { json: { url: 'https://files.test/b.tar', expires: '2026-12-05T13:00:00Z' } });
    expect((await rest.getCheckpointArchiveUrlFromTinkerPath('tinker://s:train:0/weights/ckpt-a')).url).toBe('https://files.test/b.tar');
    expect(await errorOf(rest.getCheckpointArchiveUrlFromTinkerPath('tinker://s:train:0/weights/ckpt-b'))).toMatchObject({ status: 404 });
  });
});

describe('parseTinkerPath', () => {
  it('splits a tinker path into its training run and checkpoint, and refuses anything else', () => {
    expect(parseTinkerPath('tinker://s:train:0/sampler_weights/final')).toEqual({ trainingRunId: 's:train:0', checkpointId: 'sampler_weights/final' });
    for (const bad of ['tinker://s/weights', 'tinker://s/other/x', 'http://s/weights/x', 'tinker://s/weights/a/b']) {
      expect(() => parseTinkerPath(bad)).toThrow(expect.objectContaining({ code: 'OT_ERR_INVALID_INPUT', category: 'user' }));
    }
  });
});
