import { RequestLane } from './request-lanes';

const item = (seq: number) => ({ seq });

describe('RequestLane', () => {
  it('hands requests out in seq_id order whatever order they came in (chunks come first one last)', () => {
    const lane = new RequestLane();
    for (const seq of [3, 4, 2]) expect(lane.add(item(seq), 0)).toBe('queued');
    expect(lane.take(0, 1000)).toBeNull();
    lane.add(item(1), 0);
    expect([1, 2, 3, 4].map(() => lane.take(0, 1000)?.item.seq)).toEqual([1, 2, 3, 4]);
    expect(lane.take(0, 1000)).toBeNull();
  });

  it('refuses a seq_id whose turn has passed, and a repeat', () => {
    const lane = new RequestLane();
    lane.add(item(1), 0);
    lane.take(0, 1000);
    expect(lane.add(item(1), 0)).toBe('late');
    lane.add(item(3), 0);
    expect(lane.add(item(3), 0)).toBe('repeat');
  });

  it('gives up on a seq_id that never comes after the gap, and says which', () => {
    const lane = new RequestLane();
    lane.add(item(3), 100);
    expect(lane.gapDeadline(50)).toBe(150);
    expect(lane.take(149, 50)).toBeNull();
    expect(lane.take(150, 50)).toEqual({ item: { seq: 3 }, skipped: [1, 2] });
    expect(lane.turn).toBe(4);
    // The one that came too late is refused.
    expect(lane.add(item(2), 200)).toBe('late');
  });

  it('starts the gap clock again after each turn', () => {
    const lane = new RequestLane();
    lane.add(item(1), 0);
    lane.add(item(3), 0);
    expect(lane.take(500, 100)?.item.seq).toBe(1);
    // Waiting for 2 from now, not from when 3 arrived.
    expect(lane.gapDeadline(100)).toBe(600);
    expect(lane.take(550, 100)).toBeNull();
    expect(lane.take(600, 100)?.skipped).toEqual([2]);
  });

  it('is not stalled while its turn is there', () => {
    const lane = new RequestLane();
    lane.add(item(2), 0);
    lane.add(item(1), 5);
    expect(lane.gapDeadline(10)).toBeNull();
    expect(lane.drain().map((i) => i.seq)).toEqual([2, 1]);
    expect(lane.size).toBe(0);
  });
});
