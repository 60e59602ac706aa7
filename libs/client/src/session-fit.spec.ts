import type { TrainingSession } from './api/sessions-api';
import { fit } from './session-fit';

/** A session that records its calls and answers like a runner would. */
function fakeSession() {
  const calls: { op: string; args: unknown; callId?: string }[] = [];
  const session = {
    trainStep: async (args: unknown, o: { callId?: string }) => (calls.push({ op: 'train_step', args, callId: o.callId }), { 'reward/mean': calls.length }),
    validate: async (args: unknown, o: { callId?: string }) => (calls.push({ op: 'validate', args, callId: o.callId }), { 'val/accuracy': 0.5 }),
    saveCheckpoint: async (o: { callId?: string }) => (calls.push({ op: 'save_checkpoint', args: {}, callId: o.callId }), { step: calls.length, dir: '/ckpt' }),
  };
  return { session: session as unknown as TrainingSession, calls };
}

describe('fit', () => {
  it('validates first, trains in order, validates and saves on schedule and at the end, with stable call ids', async () => {
    const { session, calls } = fakeSession();
    const steps: number[] = [];
    const result = await fit(session, { tasks: [1, 2, 3, 4, 5], batchSize: 2, epochs: 2, testFreq: 2, saveFreq: 4, runId: 'r1', onStep: (s) => steps.push(s) });
    expect(calls.map((c) => `${c.op}:${c.callId}`)).toEqual([
      'validate:r1-val-0',
      'train_step:r1-train-1',
      'train_step:r1-train-2',
      'validate:r1-val-2',
      'train_step:r1-train-3',
      'train_step:r1-train-4',
      'validate:r1-val-4',
      'save_checkpoint:r1-save-4',
      'train_step:r1-train-5',
      'train_step:r1-train-6',
      'validate:r1-val-6',
      'save_checkpoint:r1-save-6',
    ]);
    expect(calls.filter((c) => c.op === 'train_step').map((c) => c.args)).toEqual([
      { tasks: [1, 2] },
      { tasks: [3, 4] },
      { tasks: [5] },
      { tasks: [1, 2] },
      { tasks: [3, 4] },
      { tasks: [5] },
    ]);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6]);
    expect(result.steps).toBe(6);
    expect(result.validations.map((v) => v.step)).toEqual([0, 2, 4, 6]);
    expect(result.checkpoints).toHaveLength(2);
  });

  it('lets the server draw tasks for a number of steps, and refuses impossible plans', async () => {
    const { session, calls } = fakeSession();
    await fit(session, { steps: 2, batchSize: 8, valBeforeTrain: false });
    expect(calls.map((c) => [c.op, c.args])).toEqual([
      ['train_step', { batch_size: 8 }],
      ['train_step', { batch_size: 8 }],
      ['validate', {}],
      ['save_checkpoint', {}],
    ]);
    await expect(fit(session, {})).rejects.toThrow('give steps, or tasks');
    await expect(fit(session, { tasks: [] })).rejects.toThrow('tasks is empty');
    await expect(fit(session, { steps: 0 })).rejects.toThrow('steps must be a positive integer');
  });
});
