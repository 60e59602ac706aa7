import { ByteTokenizer, loadHfModelDir, loadLoraAdapter, Model, modelPreset, Prng, Trainer } from '@opentinker/engine';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointDir, listCheckpoints, mergedWeights, pruneCheckpoints, readOptimizer, readTrainerState, saveCheckpoint, type TrainerState } from './checkpoints';
import { ensureEngineBackend } from '../rollout/policy';
import { algorithmSpec } from './learner-spec';
import { computeAdvantages, trajectoryRow, updatePolicy } from './policy-update';
import { TaskCursor } from '../rollout/task-cursor';
import type { Trajectory } from '../rollout/trajectory';

const CONFIG = { ...modelPreset('tiny-test'), vocab_size: 260 };
const ALGO = algorithmSpec.parse({});
const dirs: string[] = [];
const workDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ot-ckpt-'));
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  await ensureEngineBackend();
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** One GRPO step on the batch the cursor hands out (tasks become responses deterministically). */
function trainOn(model: Model, trainer: Trainer, tasks: number[]): void {
  const rows = tasks
    .flatMap((task, g) =>
      [0, 1].map((sample): Trajectory => {
        const response = [20 + ((task * 7 + sample) % 200), 21 + sample];
        return {
          taskIndex: task,
          group: g,
          sample,
          promptIds: [5, 6 + (task % 50)],
          responseIds: response,
          lossMask: Uint8Array.of(1, 1),
          oldLogProbs: Float32Array.of(-5, -5),
          turnEnds: [1],
          turnRewards: [sample],
          reward: sample,
          finish: 'done',
          messages: [],
          info: {},
          generatedTokens: 2,
        };
      }),
    )
    .map(trajectoryRow);
  computeAdvantages(rows, ALGO);
  updatePolicy(trainer, rows, { algorithm: ALGO, padId: 0, lossScaleFactor: 4 });
}

describe('checkpoints', () => {
  it('round-trips weights, optimizer, cursor and RNG exactly; a resumed run continues identically', async () => {
    const dir = workDir();
    const model = Model.init(CONFIG, 1);
    const trainer = new Trainer(model, { lr: 1e-2 });
    const cursor = new TaskCursor(10, 3);
    const rng = new Prng(9);
    trainOn(model, trainer, cursor.next(4));
    rng.uniform();
    const state: TrainerState = {
      step: 1,
      total_steps: 5,
      cursor: cursor.state,
      cursor_start: 0,
      rng: rng.getState(),
      metrics: { 'reward/mean': 0.5 },
      sft_steps: 0,
      created: new Date().toISOString(),
    };
    const saved = await saveCheckpoint(dir, 1, { policy: { model, tokenizer: new ByteTokenizer(), chatTemplate: 'x' }, optimizer: trainer.optimizerState(), state });
    expect(saved).toBe(checkpointDir(dir, 1));
    expect(existsSync(`${saved}.tmp`)).toBe(false);

    // Load everything back into fresh objects.
    const folder = await loadHfModelDir(join(saved, 'model'));
    const resumed = Model.fromWeights(folder.config, folder.weights);
    const resumedTrainer = new Trainer(resumed, { lr: 1e-2 });
    resumedTrainer.loadOptimizerState(await readOptimizer(join(saved, 'optimizer.safetensors')));
    const back = await readTrainerState(saved);
    expect(back).toEqual(state);
    const resumedCursor = new TaskCursor(10, 3, back.cursor_start, back.cursor);
    const resumedRng = Prng.fromState(back.rng);
    for (const [name, w] of model.exportWeights()) expect(Array.from(folder.weights.get(name)!.data)).toEqual(Array.from(w.data));
    const a = trainer.optimizerState();
    const b = resumedTrainer.optimizerState();
    expect(b.step).toBe(a.step);
    for (const [name, m] of a.moments) {
      expect(Array.from(b.moments.get(name)!.m)).toEqual(Array.from(m.m));
      expect(Array.from(b.moments.get(name)!.v)).toEqual(Array.from(m.v));
    }

    // Both continue with the same next batch, the same random draws, and end at the same weights.
    const next = cursor.next(4);
    expect(resumedCursor.next(4)).toEqual(next);
    expect(resumedRng.uniform()).toBe(rng.uniform());
    trainOn(model, trainer, next);
    trainOn(resumed, resumedTrainer, next);
    const wa = model.exportWeights();
    for (const [name, w] of resumed.exportWeights()) expect(Array.from(w.data)).toEqual(Array.from(wa.get(name)!.data));
    [trainer, resumedTrainer].forEach((t) => t.dispose());
    [model, resumed].forEach((m) => m.dispose());
  });

  it('saves a LoRA policy as its adapter plus merged weights any loader can use', async () => {
    const dir = workDir();
    const model = Model.init(CONFIG, 2);
    model.addLora({ r: 2, alpha: 4, targetModules: ['q_proj', 'v_proj'], seed: 1 });
    const trainer = new Trainer(model, { lr: 5e-2 });
    trainOn(model, trainer, [0, 1]);
    const state = { step: 2, total_steps: 2, cursor: { epoch: 0, offset: 2 }, cursor_start: 0, rng: new Prng(1).getState(), metrics: {}, sft_steps: 0, created: '' };
    const saved = await saveCheckpoint(dir, 2, { policy: { model, tokenizer: new ByteTokenizer(), baseName: 'preset tiny-test' }, optimizer: trainer.optimizerState(), state });
    const adapter = await loadLoraAdapter(join(saved, 'adapter'), { modelConfig: CONFIG });
    expect(adapter.config.base_model_name_or_path).toBe('preset tiny-test');
    const merged = (await loadHfModelDir(join(saved, 'model'))).weights;
    const reference = model.clone();
    reference.loadLora(model.exportLora());
    reference.mergeLora();
    for (const [name, w] of reference.exportWeights()) {
      const got = merged.get(name)!.data;
      w.data.forEach((x, i) => expect(Math.abs(x - got[i])).toBeLessThan(1e-5));
    }
    // The training model keeps its adapter (merging worked on copies).
    expect(model.hasLora).toBe(true);
    expect(mergedWeights(model).get('model.layers.0.self_attn.q_proj.weight')!.data).toEqual(merged.get('model.layers.0.self_attn.q_proj.weight')!.data);
    const optimizer = await readOptimizer(join(saved, 'optimizer.safetensors'));
    expect([...optimizer.moments.keys()].every((k) => k.includes('lora_'))).toBe(true);
    trainer.dispose();
    reference.dispose();
    model.dispose();
  });

  it('keeps the newest max_checkpoints, never step-0, and clears interrupted saves', async () => {
    const dir = workDir();
    for (const n of [0, 1, 2, 3, 4]) mkdirSync(checkpointDir(dir, n), { recursive: true });
    mkdirSync(`${checkpointDir(dir, 5)}.tmp`);
    expect(await pruneCheckpoints(dir, 2)).toEqual([1, 2]);
    expect((await listCheckpoints(dir)).map((c) => c.step)).toEqual([0, 3, 4]);
    expect(existsSync(`${checkpointDir(dir, 5)}.tmp`)).toBe(false);
  });
});
