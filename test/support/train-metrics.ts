import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeHistory, readLevelDbLog, recordType } from '../../src/metrics/wandb-offline-run';

/** A train job small enough for seconds on a CPU: tiny-char on bare equations, 2 tasks × 2 samples. */
export function tinyTrainSpec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'train',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
    model: { preset: 'tiny-char', chat_template: 'plain' },
    algorithm: { rollout_n: 2 },
    rollout: { max_new_tokens: 4 },
    optim: { lr: 1e-3 },
    batch_size: 2,
    total_steps: 3,
    val_batch_size: 4,
    ...overrides,
  };
}

export type MetricPoint = { step: number; name: string; value: number };
/** A W&B history row: metric values by name, with `_step`, `_runtime`, … and the job's own step key. */
export type HistoryRow = Record<string, number>;

/** name → [[step, value]] in the points' order, as the API lists them and a reader returns them. */
export function bySeries(points: MetricPoint[], value = (v: number) => v): Record<string, Array<[number, number]>> {
  const out: Record<string, Array<[number, number]>> = {};
  for (const p of points) (out[p.name] ??= []).push([p.step, value(p.value)]);
  return out;
}

/** The metric points W&B history rows carry, each at the job's step (`global_step`, or `sft/step` for warm-up rows). */
export function historyPoints(rows: HistoryRow[]): MetricPoint[] {
  return rows.flatMap((row) =>
    Object.entries(row)
      .filter(([k]) => !k.startsWith('_') && k !== 'global_step' && k !== 'sft/step')
      .map(([name, value]) => ({ step: row['sft/step'] ?? row.global_step, name, value })),
  );
}

/** The offline W&B run a job wrote under its work folder: its folder, run id, history rows and summary. */
export function readOfflineRun(workDir: string) {
  const root = join(workDir, 'wandb');
  const folder = readdirSync(root).find((n) => n.startsWith('offline-run-'))!;
  const runId = folder.slice(-8);
  const records = readLevelDbLog(readFileSync(join(root, folder, `run-${runId}.wandb`))).map((r) => recordType(r)!);
  const rows = records.filter((r) => r.type === 2).map((r) => decodeHistory(r.body).items as HistoryRow);
  const summary = decodeHistory(records.find((r) => r.type === 3)!.body).items;
  return { dir: join(root, folder), folder, runId, rows, summary };
}
