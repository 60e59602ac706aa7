/** What {@link Prng.getState} returns: plain JSON. */
export interface PrngState {
  state: number;
  /** The second normal of the last Box–Muller pair, not yet returned. */
  spare?: number;
}

/**
 * A small seeded pseudo-random generator (mulberry32 for uniforms, Box–Muller for normals). The engine
 * never uses `Math.random`: initial weights and samples are reproducible from a seed on every backend.
 *
 * @example
 * ```ts
 * const rng = new Prng(42);
 * rng.uniform(); // in [0, 1), the same sequence for seed 42 everywhere
 * ```
 */
export class Prng {
  private state: number;
  private spare: number | undefined;

  constructor(seed: number) {
    // Mix the seed so nearby seeds (0, 1, 2, …) start from unrelated states.
    let s = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
    s = Math.imul(s ^ (s >>> 16), 0x85ebca6b) >>> 0;
    s = Math.imul(s ^ (s >>> 13), 0xc2b2ae35) >>> 0;
    this.state = (s ^ (s >>> 16)) >>> 0;
  }

  /** The generator's state, to checkpoint it; {@link Prng.fromState} continues the same sequence. */
  getState(): PrngState {
    return { state: this.state, ...(this.spare !== undefined ? { spare: this.spare } : {}) };
  }

  /** A generator that continues from a state {@link Prng.getState} returned. */
  static fromState(saved: PrngState): Prng {
    if (!Number.isInteger(saved?.state) || saved.state < 0 || saved.state > 0xffffffff || (saved.spare !== undefined && !Number.isFinite(saved.spare))) {
      throw new RangeError(`not a Prng state: ${JSON.stringify(saved)}`);
    }
    const rng = new Prng(0);
    rng.state = saved.state;
    rng.spare = saved.spare;
    return rng;
  }

  /** A uniform number in [0, 1) with 32 bits of randomness. */
  uniform(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A standard normal number. */
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    let u = 0;
    while (u === 0) u = this.uniform();
    const v = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}
