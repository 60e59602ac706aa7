import type { OwnerUsage, QueueHead } from '../jobs/jobs.repository';
import { fairOrder } from './fair-share';

const head = (id: string, ownerId: string, createdAt: number, over: Partial<QueueHead> = {}): QueueHead => ({
  id,
  ownerId,
  adminPriority: 0,
  priority: 0,
  resources: { gpus: 0, cpu_slots: 1 },
  createdAt,
  ownerLastStartedAt: null,
  ...over,
});
const usage = (entries: Record<string, Partial<OwnerUsage>>) => new Map(Object.entries(entries).map(([owner, u]) => [owner, { jobs: 0, gpus: 0, cpuSlots: 0, ...u }]));
const order = (heads: QueueHead[], u = usage({}), limit = 4) => fairOrder(heads, u, limit).map((h) => h.id);

describe('fairOrder', () => {
  it('puts the user holding the fewest devices first, whoever queued first', () => {
    const heads = [head('a1', 'alice', 1), head('b1', 'bob', 2), head('c1', 'carol', 3)];
    expect(order(heads, usage({ alice: { jobs: 2, cpuSlots: 2 }, bob: { jobs: 1, cpuSlots: 1 } }))).toEqual(['c1', 'b1', 'a1']);
  });

  it('weighs GPUs before CPU slots', () => {
    const heads = [head('a1', 'alice', 1), head('b1', 'bob', 2)];
    expect(order(heads, usage({ alice: { jobs: 1, gpus: 1 }, bob: { jobs: 3, cpuSlots: 16 } }))).toEqual(['b1', 'a1']);
  });

  it('serves users with equal usage first come, first served (then by id)', () => {
    expect(order([head('b1', 'bob', 5), head('a1', 'alice', 3), head('c0', 'carol', 3)])).toEqual(['a1', 'c0', 'b1']);
  });

  it('takes turns between users holding the same: whose last job started longest ago (or never) goes first', () => {
    const heads = [head('a1', 'alice', 1, { ownerLastStartedAt: 50 }), head('b1', 'bob', 2, { ownerLastStartedAt: 40 }), head('c1', 'carol', 3)];
    expect(order(heads)).toEqual(['c1', 'b1', 'a1']);
  });

  it('leaves out users at the per-user limit', () => {
    const heads = [head('a1', 'alice', 1), head('b1', 'bob', 2)];
    expect(order(heads, usage({ alice: { jobs: 2, cpuSlots: 2 } }), 2)).toEqual(['b1']);
  });

  it("counts a plain user's priority only among their own jobs, and an admin's above the users' ceiling across users", () => {
    // The heads already carry each user's own order; a plain priority does not move alice ahead of bob.
    const heads = [head('a1', 'alice', 2, { priority: 10 }), head('b1', 'bob', 1, { priority: -5 })];
    expect(order(heads)).toEqual(['b1', 'a1']);
    const admin = head('x1', 'admin', 3, { priority: 50, adminPriority: 50 });
    expect(order([...heads, admin], usage({ admin: { jobs: 3, cpuSlots: 3 } }))).toEqual(['x1', 'b1', 'a1']);
  });
});
