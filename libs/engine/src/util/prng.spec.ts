import { Prng } from './prng';

describe('Prng state', () => {
  it('continues the same sequence from a saved state, including a pending normal', () => {
    const a = new Prng(7);
    a.uniform();
    a.normal(); // leaves the pair's second normal pending
    const saved = JSON.parse(JSON.stringify(a.getState()));
    expect(saved.spare).toEqual(expect.any(Number));
    const b = Prng.fromState(saved);
    const next = (r: Prng) => [r.normal(), r.uniform(), r.normal(), r.uniform()];
    expect(next(b)).toEqual(next(a));
  });

  it('refuses what is not a state', () => {
    expect(() => Prng.fromState({ state: -1 })).toThrow(/not a Prng state/);
    expect(() => Prng.fromState({ state: 1.5 })).toThrow(/not a Prng state/);
    expect(() => Prng.fromState(null as never)).toThrow(/not a Prng state/);
  });
});
