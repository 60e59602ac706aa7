import { iso } from './columns';

describe('iso', () => {
  const reference = (ms: number) => new Date(ms).toISOString();

  it('writes what Date.prototype.toISOString writes', () => {
    const day = 86_400_000;
    const edges = [
      0,
      1,
      999,
      1000,
      59_999,
      60_000,
      3_599_999,
      3_600_000,
      day - 1,
      day,
      day + 1,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(2000, 2, 1),
      Date.UTC(2100, 1, 28, 12),
      Date.UTC(2100, 2, 1),
      Date.UTC(2026, 11, 3, 7, 16, 25, 125),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
      253_402_300_799_999, // 9999-12-31T23:59:59.999Z, the last four-digit year
    ];
    for (const ms of edges) expect([ms, iso(ms)]).toEqual([ms, reference(ms)]);
    // Random instants over the whole four-digit range, and runs within one day (the cached date part).
    let seed = 42;
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    const wrong: [number, string | null, string][] = [];
    for (let i = 0; i < 50_000; i++) {
      const ms = Math.floor(random() * 253_402_300_800_000);
      for (const x of [ms, ms + 1, ms + 61_001]) if (iso(x) !== reference(x)) wrong.push([x, iso(x), reference(x)]);
    }
    expect(wrong).toEqual([]);
  });

  it('hands what it does not format itself to Date: six-digit years, before 1970, fractions, invalid', () => {
    for (const ms of [253_402_300_800_000, 8.64e15, -1, -8.64e15, Date.UTC(1969, 6, 20, 20, 17), 1.5, 1_764_700_000_000.25]) {
      expect([ms, iso(ms)]).toEqual([ms, reference(ms)]);
    }
    expect(() => iso(NaN)).toThrow(RangeError);
    expect(iso(null)).toBeNull();
    expect(iso(undefined)).toBeNull();
  });
});
