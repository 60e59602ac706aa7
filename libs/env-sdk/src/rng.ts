/**
 * A small, fast, seeded random number generator (SplitMix32 → Mulberry32-style mixing). Environments
 * take all their randomness from one of these, so the same seed always replays the same episode.
 *
 * @example
 * ```ts
 * const rng = createRng(42);
 * const die = rng.int(1, 6);      // 1..6 inclusive
 * const coin = rng.next() < 0.5;  // [0, 1)
 * const pick = rng.pick(['a', 'b', 'c']);
 * ```
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: T[]): T[];
  /** An independent generator derived from this one (for sub-streams). */
  fork(): Rng;
}

/**
 * A seeded {@link Rng}: the same seed gives the same sequence on every platform. Seed it from the
 * episode's `reset(task, seed)` so a replay with the same seed and actions is identical.
 *
 * @example
 * ```ts
 * reset: (task, seed) => {
 *   rng = createRng(seed);
 *   first = rng.pick(['x', 'o']);
 *   return [{ role: 'user', content: `You play ${first}.` }];
 * },
 * ```
 */
export function createRng(seed: number): Rng {
  let state = hashSeed(seed);
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng: Rng = {
    next,
    int(min, max) {
      if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) throw new RangeError(`int(${min}, ${max})`);
      return min + Math.floor(next() * (max - min + 1));
    },
    pick(items) {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)];
    },
    shuffle(items) {
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [items[i], items[j]] = [items[j], items[i]];
      }
      return items;
    },
    fork() {
      return createRng(Math.floor(next() * 4294967296));
    },
  };
  return rng;
}

/** Any finite number (or a string) to a well-mixed 32-bit state. */
function hashSeed(seed: number): number {
  let h = Number.isFinite(seed) ? Math.trunc(seed) >>> 0 : 0x9e3779b9;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}
