import type { Job, JobEvent } from '@opentinker/client';
import { applyEvent, etaMs, initialSnapshot, PlainProgress, plainEventLine, progressLine, summaryLines } from './job-progress';

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

describe('progress without a terminal', () => {
  const state = (id: number, name: 'running' | 'succeeded', time = 0): JobEvent => ({ type: 'state', id, data: { state: name, time: at(time) } });
  const step = (id: number, n: number, total: number, message: string): JobEvent => ({ type: 'progress', id, data: { step: n, total, message, time: at(n) } });
  const metrics = (id: number, n: number): JobEvent => ({
    type: 'metrics',
    id,
    data: { points: ['reward/mean', 'loss', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'].map((name, i) => ({ name, step: n, value: n + i / 10 })), time: at(n) },
  });

  /** Feeds a job's events to a PlainProgress whose clock reads `clock[i]` at event i; returns every printed line. */
  function watch(events: JobEvent[], clockMs: (i: number) => number, prefer: readonly string[] = []): string[] {
    let i = 0;
    const plain = new PlainProgress(prefer, 5000, () => clockMs(i));
    const s = initialSnapshot();
    const out: string[] = [];
    for (; i < events.length; i++) out.push(...plain.lines(applyEvent(s, events[i]), events[i]));
    return [...out, ...plain.flush(s)];
  }

  /** A 1,000-step job, metrics and progress every step, 100 ms apart: SFT, then RL. */
  function job(): JobEvent[] {
    const events: JobEvent[] = [state(1, 'running')];
    for (let n = 1; n <= 1000; n++)
      events.push(metrics(events.length + 1, n), step(events.length + 2, n, 1000, n <= 300 ? `sft loss ${(1 / n).toFixed(3)}` : `reward ${(n / 1000).toFixed(2)} acc 0.5`));
    events.push(state(events.length + 1, 'succeeded'));
    return events;
  }

  it('prints a 1,000-step job in a bounded number of short lines: one every 5 s, each phase, the last step', () => {
    const events = job();
    const lines = watch(events, (i) => i * 50);
    // 2,000 reports over 100 s: about one line per 5 s, plus the first, the phase change and the last.
    const progress = lines.filter((l) => l.startsWith('progress '));
    expect(progress.length).toBeLessThanOrEqual(100 / 5 + 3);
    expect(progress.length).toBeGreaterThanOrEqual(100 / 5);
    expect(lines.every((l) => l.length < 160)).toBe(true);
    expect(lines[0]).toBe('state running');
    expect(progress[0]).toMatch(/^progress 1\/1000 sft loss 1\.000/);
    // The first RL report is printed when it comes, whatever the clock says.
    expect(progress).toContainEqual(expect.stringMatching(/^progress 301\/1000 reward 0\.30 acc 0\.5 /));
    // The last step before the final state, with its metrics (up to four).
    expect(lines.slice(-2)).toEqual([
      expect.stringMatching(/^progress 1000\/1000 reward 1\.00 acc 0\.5 \| reward\/mean [\d.,]+ · loss [\d.,]+ · a [\d.,]+ · b [\d.,]+$/),
      'state succeeded',
    ]);
    expect(lines.some((l) => l.startsWith('metrics '))).toBe(false);
  });

  it('shows the preferred metrics, not those the message already states, and the ETA while running', () => {
    const events = [state(1, 'running'), step(2, 1, 10, 'tick'), metrics(3, 1), step(4, 2, 10, 'tick')];
    const lines = watch(events, (i) => i * 10_000, ['loss', 'reward/mean']);
    expect(lines).toEqual([
      'state running',
      'progress 1/10 tick',
      expect.stringMatching(/^progress 1\/10 tick \| loss 1\.1 · reward\/mean 1$/),
      expect.stringMatching(/^progress 2\/10 tick \| ETA 8(\.0)?s \| loss 1\.1 · reward\/mean 1$/),
    ]);
    const stated = watch([state(1, 'running'), metrics(2, 1), step(3, 1, 1, 'reward/mean 1')], () => 0, ['reward/mean', 'loss']);
    expect(stated.at(-1)).toBe('progress 1/1 reward/mean 1 | loss 1.1');
  });

  it('holds nothing back: a report skipped for the rate is printed before the next state line', () => {
    const events = [state(1, 'running'), step(2, 1, 3, 'tick'), step(3, 2, 3, 'tick'), step(4, 3, 3, 'tick'), state(5, 'succeeded')];
    expect(watch(events, () => 0)).toEqual(['state running', 'progress 1/3 tick', 'progress 3/3 tick', 'state succeeded']);
  });
});
