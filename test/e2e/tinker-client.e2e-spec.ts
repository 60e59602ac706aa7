import { isOpenTinkerError, OpenTinkerError, tinker } from '@opentinker/client';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { createApi, ensureAdmin } from '../../src/app';
import { loadConfig } from '../../src/config/app-config';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { FAST } from '../support/test-app';
import { writeTinkerTestBase } from '../support/tinker-test-base';

const SLOW = 300_000;

/** Byte tokens (the test base's tokenizer: id = byte value). */
const ids = (text: string): number[] => Array.from(Buffer.from(text));

/** A next-token datum: input = sequence[:-1], target = sequence[1:], weight 1 each. */
function datum(sequence: number[]): tinker.Datum {
  const n = sequence.length - 1;
  return { modelInput: tinker.ModelInput.fromInts(sequence.slice(0, -1)), lossFnInputs: { target_tokens: sequence.slice(1), weights: new Array(n).fill(1) } };
}

/** Loss per weighted token from the per-datum logprobs (as the cookbook's sl_loop computes it). */
function meanLoss(out: tinker.ForwardBackwardOutput, data: tinker.Datum[]): number {
  let total = 0;
  let count = 0;
  out.lossFnOutputs.forEach((o, i) => {
    const weights = data[i].lossFnInputs.weights as number[];
    const lp = o.logprobs.data as Float32Array;
    weights.forEach((w, j) => {
      total -= lp[j] * w;
      count += w;
    });
  });
  return total / count;
}

const SFT = ['12+34=46\n', '5+5=10\n', '7+8=15\n', '20+22=42\n'].map((t) => datum(ids(t)));
const ADAM: tinker.AdamParams = { learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8 };

/** The entry names of a tar. */
async function tarNames(tar: Buffer): Promise<string[]> {
  const names: string[] = [];
  const ex = extract();
  ex.on('entry', (header, body, next) => {
    names.push(header.name);
    body.on('end', next);
    body.resume();
  });
  await pipeline(Readable.from([tar]), ex as unknown as Writable);
  return names;
}

/** The error a promise rejects with (fails when it resolves). */
async function rejection(p: Promise<unknown>): Promise<OpenTinkerError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isOpenTinkerError(error)) throw new Error(`expected an OpenTinkerError, got ${String(error)}`);
  return error;
}

/**
 * @opentinker/client's Tinker primitives against a real server (`createApi` listening on a port, as the
 * SDK e2e starts it, with the tiny test base under model_roots): the SDK checks' loop written in
 * TypeScript. SFT whose loss falls, sample log-probs equal to forward log-probs, save_state into a new
 * training client that continues, bad requests failing fast with the user category, another user's 404s,
 * the REST client's listing and deleting.
 */
describe('the TypeScript Tinker client against the server (e2e)', () => {
  let app: NestFastifyApplication;
  let home: string;
  let base: string;
  let url: string;
  const keys: Record<string, string> = {};
  let service: tinker.ServiceClient;
  let training: tinker.TrainingClient;
  let sampler: tinker.SamplingClient;
  let saved: string;
  let hub: FakeHub;

  beforeAll(async () => {
    hub = await startFakeHub([]);
    home = mkdtempSync(join(tmpdir(), 'opentinker-tinker-client-'));
    const roots = join(home, 'models-root');
    base = join(roots, 'tiny-base');
    await writeTinkerTestBase(base);
    const adminKey = 'otk_test_admin_key_0123456789abcdef';
    const config = loadConfig(
      {},
      {
        home,
        admin_key: adminKey,
        cpu_slots: 2,
        gpus: 'none',
        ...FAST,
        tinker_seq_gap_seconds: 5,
        model_roots: roots,
        // A Hub with no repos: a Hub name fails to load at once (404), without the network.
        hub_endpoint: hub.url,
      },
    );
    app = await createApi({ config, worker: true });
    await ensureAdmin(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    for (const name of ['alice', 'bob']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/users',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ name }),
      });
      keys[name] = JSON.parse(res.body).api_key.key;
    }
    // The SDK's form of the key works as well as the plain one.
    service = new tinker.ServiceClient({ baseUrl: url, apiKey: `tml-${keys.alice}` });
  }, SLOW);

  afterAll(async () => {
    await service?.close();
    await app?.close();
    await hub?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('lists the base model among the server capabilities', async () => {
    const names = (await service.getServerCapabilities()).supportedModels.map((m) => m.modelName);
    expect(names).toContain(base);
  });

  it(
    'trains a LoRA adapter by SFT: the loss falls',
    async () => {
      training = await service.createLoraTrainingClient({ baseModel: base, rank: 8, seed: 3 });
      expect(training.modelId).toBe(`${await service.sessionId()}:train:0`);
      const info = await training.getInfo();
      expect(info).toMatchObject({ modelId: training.modelId, loraRank: 8, modelData: { modelName: base } });
      const losses: number[] = [];
      for (let step = 0; step < 16; step++) {
        // Both submitted before either is awaited, as the cookbook's loops do.
        const fb = training.forwardBackward(SFT, 'cross_entropy');
        const opt = training.optimStep(ADAM);
        const [out, optimized] = await Promise.all([fb, opt]);
        expect(out.metrics['loss:sum']).toBeGreaterThan(0);
        expect(optimized.metrics?.grad_norm).toBeGreaterThan(0);
        losses.push(meanLoss(out, SFT));
      }
      expect(losses[15]).toBeLessThan(0.7 * losses[0]);
    },
    SLOW,
  );

  it(
    'samples with log-probs equal to forward log-probs, and computes prompt log-probs',
    async () => {
      sampler = await training.saveWeightsAndGetSamplingClient();
      const prompt = ids('12+3');
      const out = await sampler.sample(tinker.ModelInput.fromInts(prompt), { numSamples: 3, samplingParams: { maxTokens: 6, temperature: 1, seed: 11 } });
      expect(out.sequences).toHaveLength(3);
      let worst = 0;
      for (const seq of out.sequences) {
        expect(seq.logprobs).toHaveLength(seq.tokens.length);
        expect(seq.sequenceId).toEqual(expect.stringContaining(sampler.samplingSessionId));
        const fwd = await training.forward([datum([...prompt, ...seq.tokens])], 'cross_entropy');
        const lp = Array.from(fwd.lossFnOutputs[0].logprobs.data as Float32Array).slice(prompt.length - 1);
        seq.logprobs!.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - lp[i]))));
      }
      expect(worst).toBeLessThan(2e-3);
      const full = [...prompt, ...out.sequences[0].tokens];
      const scored = await sampler.computeLogprobs(full);
      expect(scored[0]).toBeNull();
      const fwd0 = Array.from((await training.forward([datum(full)], 'cross_entropy')).lossFnOutputs[0].logprobs.data as Float32Array);
      scored.slice(1).forEach((v, i) => expect(Math.abs(v! - fwd0[i])).toBeLessThan(2e-3));
      // Stop strings end the sequence with the token that completed them.
      const stopped = await sampler.sample(ids('5+5='), { numSamples: 2, samplingParams: { maxTokens: 12, stop: ['1'], seed: 1 } });
      for (const s of stopped.sequences) expect(s.stopReason === 'length' || String.fromCharCode(...s.tokens).endsWith('1')).toBe(true);
    },
    SLOW,
  );

  it(
    'runs an RL step on sampled tokens: ppo with its loss_fn_config, the sampler’s log-probs as q',
    async () => {
      const prompt = ids('Q:');
      const out = await sampler.sample(prompt, { numSamples: 4, samplingParams: { maxTokens: 4, seed: 5 }, includePromptLogprobs: true, topkPromptLogprobs: 2 });
      expect(out.promptLogprobs).toHaveLength(prompt.length);
      expect(out.topkPromptLogprobs?.[0]).toBeNull();
      expect(out.topkPromptLogprobs?.[1]).toHaveLength(2);
      const data: tinker.Datum[] = out.sequences.map((s, i) => {
        const full = [...prompt, ...s.tokens];
        const pad = new Array(prompt.length - 1).fill(0);
        return {
          modelInput: full.slice(0, -1),
          lossFnInputs: { target_tokens: full.slice(1), logprobs: [...pad, ...s.logprobs!], advantages: [...pad, ...s.tokens.map(() => (i % 2 ? 1 : -1))] },
        };
      });
      const rl = await training.forwardBackward(data, 'ppo', { lossFnConfig: { clip_low_threshold: 0.9, clip_high_threshold: 1.1 } });
      expect(rl.lossFnOutputs).toHaveLength(4);
      expect(Number.isFinite(rl.metrics['loss:sum'])).toBe(true);
      const unknown = await rejection(training.forwardBackward(data, 'ppo', { lossFnConfig: { clip_ratio: 0.2 } }));
      expect(unknown).toMatchObject({ status: 400, category: 'user', message: expect.stringMatching(/clip_ratio/) });
      // A zero-rate step clears the gradient this one added, leaving the weights as they were.
      await training.optimStep({ learningRate: 0 });
    },
    SLOW,
  );

  it(
    'saves state; a new training client from it continues where it was, the first one unmoved',
    async () => {
      const before = meanLoss(await training.forward(SFT, 'cross_entropy'), SFT);
      saved = (await training.saveState('ckpt-a')).path;
      expect(saved).toBe(`tinker://${training.modelId}/weights/ckpt-a`);
      const resumed = await service.createTrainingClientFromStateWithOptimizer(saved);
      expect(resumed.modelId).not.toBe(training.modelId);
      const loaded = meanLoss(await resumed.forward(SFT, 'cross_entropy'), SFT);
      expect(Math.abs(loaded - before)).toBeLessThan(1e-4);
      for (let i = 0; i < 4; i++) await Promise.all([resumed.forwardBackward(SFT, 'cross_entropy'), resumed.optimStep(ADAM)]);
      expect(meanLoss(await resumed.forward(SFT, 'cross_entropy'), SFT)).toBeLessThan(loaded);
      expect(Math.abs(meanLoss(await training.forward(SFT, 'cross_entropy'), SFT) - before)).toBeLessThan(1e-5);
      // Loading the checkpoint back into the moved client puts it where it was saved.
      await resumed.loadStateWithOptimizer(saved);
      expect(Math.abs(meanLoss(await resumed.forward(SFT, 'cross_entropy'), SFT) - before)).toBeLessThan(1e-4);
    },
    SLOW,
  );

  it(
    'fails a bad request fast with the user category, and the training client goes on',
    async () => {
      const started = Date.now();
      const loss = await rejection(training.forwardBackward(SFT, 'stable_reinforce'));
      expect(loss).toMatchObject({ status: 400, category: 'user' });
      expect(loss.message).toMatch(/importance_sampling/);
      const lr = await rejection(training.optimStep({ learningRate: -1 }));
      expect(lr).toMatchObject({ status: 400, category: 'user', field: 'adam_params.learning_rate' });
      // Refused requests used their seq_ids; the next one is not kept waiting for them.
      await training.forward(SFT, 'cross_entropy');
      // What only the runner sees fails the future, with the server's category.
      const tooLong = await rejection(sampler.sample([1, 2], { samplingParams: { maxTokens: 100_000 } }));
      expect(tooLong).toMatchObject({ code: 'OT_ERR_REQUEST_FAILED', category: 'user' });
      expect(tooLong.message).toMatch(/context/);
      // Refused before sending: nothing reached the server, no seq_id was used.
      const bad = await rejection(training.forward([datum([1, -2, 3])], 'cross_entropy'));
      expect(bad).toMatchObject({ code: 'OT_ERR_INVALID_INPUT', category: 'user', field: 'data[0].model_input.chunks[0].tokens[1]' });
      await training.forward(SFT, 'cross_entropy');
      expect(Date.now() - started).toBeLessThan(10_000);
    },
    SLOW,
  );

  it(
    'lists, reads and deletes checkpoints with the REST client, and samples a saved sampler checkpoint',
    async () => {
      const rest = service.createRestClient();
      const samplerPath = (await training.saveWeightsForSampler('sampler-a')).path;
      const listed = (await rest.listCheckpoints(training.modelId)).checkpoints.map((c) => c.tinkerPath);
      expect(listed).toEqual(expect.arrayContaining([saved, samplerPath]));
      expect(await rest.getTrainingRun(training.modelId)).toMatchObject({ trainingRunId: training.modelId, loraRank: 8, isLora: true });
      expect(await rest.getWeightsInfoByTinkerPath(saved)).toMatchObject({ baseModel: base, loraRank: 8 });
      const baseOnly = await service.createSamplingClient({ baseModel: base });
      expect((await baseOnly.sample(ids('1+'), { numSamples: 2, samplingParams: { maxTokens: 3, stop: [10] } })).sequences).toHaveLength(2);
      const fromPath = await service.createSamplingClient({ modelPath: samplerPath });
      expect((await fromPath.getInfo()).baseModel).toBe(base);
      expect((await fromPath.sample(ids('1+'), { samplingParams: { maxTokens: 3 } })).sequences).toHaveLength(1);
      await rest.deleteCheckpointFromTinkerPath(samplerPath);
      expect((await rest.listCheckpoints(training.modelId)).checkpoints.map((c) => c.tinkerPath)).not.toContain(samplerPath);
      expect((await rest.listTrainingRuns()).trainingRuns.map((r) => r.trainingRunId)).toContain(training.modelId);
      expect((await rest.listUserCheckpoints()).checkpoints.map((c) => c.tinkerPath)).toContain(saved);
    },
    SLOW,
  );

  it(
    'gives a signed URL that downloads a checkpoint without a key, to its owner only',
    async () => {
      const archive = await service.createRestClient().getCheckpointArchiveUrlFromTinkerPath(saved);
      expect(archive.url).toMatch(/^https?:/);
      expect(archive.expires.getTime()).toBeGreaterThan(Date.now());
      const response = await fetch(archive.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/x-tar');
      const names = await tarNames(Buffer.from(await response.arrayBuffer()));
      expect(names).toEqual(expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors', 'optimizer.safetensors']));
      // The URL is bound to its checkpoint: another one's path with the same signature is refused.
      const sampler = (await training.saveWeightsForSampler('archived')).path;
      const swapped = archive.url.replace('/weights/ckpt-a/', `/sampler_weights/${sampler.split('/').pop()}/`);
      expect((await fetch(swapped)).status).toBe(403);
      const bob = await rejection(new tinker.ServiceClient({ baseUrl: url, apiKey: keys.bob }).createRestClient().getCheckpointArchiveUrlFromTinkerPath(saved));
      expect(bob).toMatchObject({ status: 404, category: 'user' });
    },
    SLOW,
  );

  it(
    'fails a training client on a base model that cannot be loaded with the reason, in the user category',
    async () => {
      const other = new tinker.ServiceClient({ baseUrl: url, apiKey: keys.alice });
      try {
        const started = Date.now();
        const error = await rejection(other.createLoraTrainingClient({ baseModel: 'nobody/no-such-model', rank: 2 }));
        expect(error.code).toBe('OT_ERR_REQUEST_FAILED');
        expect(error.category).toBe('user');
        expect(error.message).toMatch(/no-such-model/);
        expect(error.message).not.toMatch(/session ended before answering/);
        expect(Date.now() - started).toBeLessThan(60_000);
      } finally {
        await other.close();
      }
    },
    SLOW,
  );

  it(
    'answers another user 404, in the user category',
    async () => {
      const bob = new tinker.ServiceClient({ baseUrl: url, apiKey: keys.bob });
      try {
        const run = await rejection(bob.createRestClient().getTrainingRun(training.modelId));
        expect(run).toMatchObject({ status: 404, category: 'user' });
        const load = await rejection(bob.createTrainingClientFromState(saved));
        expect(load).toMatchObject({ status: 404, category: 'user' });
        expect((await bob.createRestClient().listUserCheckpoints()).checkpoints).toEqual([]);
      } finally {
        await bob.close();
      }
    },
    SLOW,
  );

  it(
    'ends the session on close: its clients are gone',
    async () => {
      await service.close();
      const after = await rejection(training.forward(SFT, 'cross_entropy'));
      expect(after).toMatchObject({ status: 410 });
    },
    SLOW,
  );
});
