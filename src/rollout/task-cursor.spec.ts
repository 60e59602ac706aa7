import { plannedSteps, TaskCursor } from './task-cursor';

describe('TaskCursor', () => {
  it('walks a finite split in seeded shuffled epochs, crossing epoch boundaries', () => {
    const c = new TaskCursor(5, 1);
    const first = c.next(3);
    const rest = c.next(4);
    expect([...first, ...rest.slice(0, 2)].sort()).toEqual([0, 1, 2, 3, 4]);
    expect(c.state).toEqual({ epoch: 1, offset: 2 });
    expect(new TaskCursor(5, 2).next(5)).not.toEqual([...first, ...rest.slice(0, 2)]);
    const again = new TaskCursor(5, 1);
    again.next(7);
    expect(again.next(6)).toEqual(c.next(6));
  });

  it('restores from its state and walks endless splits in order from their start', () => {
    const c = new TaskCursor(100, 4);
    c.next(30);
    const restored = new TaskCursor(100, 4, 0, c.state);
    expect(restored.next(10)).toEqual(c.next(10));
    const endless = new TaskCursor(null, 4, 200);
    expect(endless.next(3)).toEqual([200, 201, 202]);
    expect(new TaskCursor(null, 4, 200, endless.state).next(2)).toEqual([203, 204]);
    expect(() => new TaskCursor(0, 1)).toThrow(/empty/);
    expect(() => new TaskCursor(3, 1, 0, { epoch: -1, offset: 0 })).toThrow(/Not a task cursor state/);
  });

  it('plans total_steps, else num_epochs over a finite split, else 100', () => {
    expect(plannedSteps({ totalSteps: 7, numEpochs: 3, batchSize: 4, trainSize: 10 })).toBe(7);
    expect(plannedSteps({ numEpochs: 3, batchSize: 4, trainSize: 10 })).toBe(8);
    expect(plannedSteps({ batchSize: 4, trainSize: null })).toBe(100);
    expect(() => plannedSteps({ numEpochs: 1, batchSize: 4, trainSize: null })).toThrow(/total_steps/);
  });
});
