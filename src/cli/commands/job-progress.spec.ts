import type { Job, JobEvent } from '@opentinker/client';
import { applyEvent, etaMs, initialSnapshot, plainEventLine, progressLine, summaryLines } from './job-progress';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const progress = (id: number, step: number, total: number | null, time: number): JobEvent => ({
  type: 'progress',
  id,
  data: { step, total, message: null, time: at(time) },
});

function snapshotOf(events: JobEvent[]) {
  const s = initialSnapshot();
  for (const e of events) applyEvent(s, e);
  return s;
}

describe('the watch progress line', () => {
  const events: JobEvent[] = [
    { type: 'state', id: 1, data: { state: 'running', time: at(0) } },
    progress(2, 10, 100, 10),
    {
      type: 'metrics',
      id: 3,
      data: {
        points: [
          { step: 10, name: 'reward', value: 0.5 },
          { step: 10, name: 'loss', value: 1.23456 },
        ],
        time: at(10),
      },
    },
    progress(4, 30, 100, 30),
    { type: 'metrics', id: 5, data: { points: [{ step: 30, name: 'reward', value: 0.75 }], time: at(30) } },
  ];

  it('shows state, step/total with a bar, the ETA from the measured rate, and the latest metrics', () => {
    const s = snapshotOf(events);
    // 20 steps in 20 s: 70 steps left take 70 s.
    expect(etaMs(s)).toBe(70_000);
    expect(progressLine(s, 200)).toBe('running  ██████░░░░░░░░░░░░░░  30/100 30%  ETA 1m10s  reward 0.75 · loss 1.235');
  });

  it('fits the terminal width, cutting the metrics first', () => {
    const line = progressLine(snapshotOf(events), 60);
    expect(line.length).toBeLessThanOrEqual(59);
    expect(line).toContain('ETA 1m10s');
    expect(line.endsWith('…')).toBe(true);
  });

  it('has no ETA without a total or a second progress report, nor once the job is not running', () => {
    expect(etaMs(snapshotOf([progress(1, 5, 100, 0)]))).toBeUndefined();
    expect(etaMs(snapshotOf([progress(1, 5, null, 0), progress(2, 6, null, 1)]))).toBeUndefined();
    expect(progressLine(snapshotOf([progress(1, 5, null, 0)]))).toBe('unknown  step 5');
    const ended = snapshotOf([...events, { type: 'end', data: { state: 'cancelled' } }]);
    expect(progressLine(ended, 200)).not.toContain('ETA');
  });

  it('restarts the rate when a resumed attempt counts from an earlier step', () => {
    const s = snapshotOf([progress(1, 0, 10, 0), progress(2, 8, 10, 80), progress(3, 4, 10, 100), progress(4, 6, 10, 102)]);
    expect(etaMs(s)).toBe(4_000);
  });
});

describe('plain event lines', () => {
  it('writes one readable line per event, grouping metric points by step', () => {
    expect(plainEventLine({ type: 'state', id: 1, data: { state: 'starting', worker_id: 'w1', devices: ['cpu:0'], time: at(0) } })).toBe(
      'state starting worker_id=w1 devices=["cpu:0"]',
    );
    expect(plainEventLine({ type: 'progress', id: 2, data: { step: 3, total: 10, message: 'tick', time: at(0) } })).toBe('progress 3/10 tick');
    expect(
      plainEventLine({
        type: 'metrics',
        id: 3,
        data: {
          points: [
            { step: 3, name: 'a', value: 1 },
            { step: 3, name: 'b', value: 0.5 },
          ],
          time: at(0),
        },
      }),
    ).toBe('metrics step 3: a=1 b=0.5');
    expect(plainEventLine({ type: 'artifact', id: 4, data: { name: 'result.json', size: 2048, time: at(0) } })).toBe('artifact result.json (2.0 KiB)');
    expect(plainEventLine({ type: 'end', data: { state: 'succeeded' } })).toBeUndefined();
  });
});

describe('the summary', () => {
  it('gives the outcome, duration, steps, every metric, artifacts and the error', () => {
    const s = snapshotOf([
      progress(1, 7, 10, 0),
      { type: 'metrics', id: 2, data: { points: [{ step: 7, name: 'reward', value: 0.25 }], time: at(0) } },
      { type: 'artifact', id: 3, data: { name: 'ckpt', size: 10, time: at(0) } },
    ]);
    const job = { id: 'j1', name: 'demo', state: 'failed', started_at: at(0), finished_at: at(65), error: 'boom at step 7' } as Job;
    expect(summaryLines(job, s)).toEqual(['Job j1 "demo" failed in 1m05s (7/10 steps)', '  metrics    reward 0.25', '  artifacts  ckpt (10 B)', '  error      boom at step 7']);
  });
});

describe('progressLine with preferred metrics', () => {
  it('shows the preferred metrics the job reports, in that order, else the first ones', () => {
    const s = initialSnapshot();
    s.state = 'running';
    for (const [k, v] of [
      ['sft/loss', 1.5],
      ['actor/kl_loss', 0.01],
      ['val/accuracy', 0.25],
      ['reward/mean', 0.5],
    ] as const)
      s.metrics.set(k, v);
    expect(progressLine(s, 200, ['reward/mean', 'val/accuracy', 'val/win_rate'])).toBe('running  reward/mean 0.5 · val/accuracy 0.25');
    expect(progressLine(s, 200, ['val/win_rate'])).toBe('running  sft/loss 1.5 · actor/kl_loss 0.01 · val/accuracy 0.25 · reward/mean 0.5');
  });
});

describe('summaryLines with preferred metrics', () => {
  it('lists the preferred metrics and counts the others', () => {
    const s = initialSnapshot();
    for (const [k, v] of [
      ['sft/loss', 1.5],
      ['val/accuracy', 0.25],
      ['reward/mean', 0.5],
    ] as const)
      s.metrics.set(k, v);
    const job = { id: 'j1', name: null, state: 'succeeded', started_at: null, finished_at: null, error: null } as unknown as Job;
    expect(summaryLines(job, s, ['reward/mean', 'val/accuracy'])[1]).toBe('  metrics    reward/mean 0.5 · val/accuracy 0.25 (and 1 more: opentinker jobs metrics j1)');
    expect(summaryLines(job, s)[1]).toBe('  metrics    sft/loss 1.5 · val/accuracy 0.25 · reward/mean 0.5');
  });
});
