import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { AppConfig } from '../config/app-config';

const WINDOW_MS = 60_000;
/** Cells per row of the table (a power of two). */
const WIDTH = 1 << 16;
/** Rows, each indexed by its own seeded hash; a source's count is the smallest of its cells. */
const DEPTH = 2;

/**
 * Counts failed authentications in fixed one-minute windows, per client address (IPv6: per /64, what
 * one subscriber usually holds) and per key id (so guessing one key from many addresses is slowed too).
 *
 * The counts live in a fixed table (a count-min sketch: {@link DEPTH} rows of {@link WIDTH} cells, 1 MiB
 * allocated once), so memory stays the same however many distinct addresses and keys fail, and every
 * call costs a few array reads whatever came before: no map grows, nothing is ever scanned. Sources that
 * share all their cells share a count, which can only over-count: a source may be answered `429` a
 * little early when a minute brings hundreds of thousands of failures, never later than its limit.
 *
 * Only failures are counted and only failures are refused: a valid key is accepted whatever its
 * address's count (see `AuthService`), so a flood of bad keys from an address, or a NAT that many
 * tenants share, never locks out the people with good keys. Per process by design: with several API
 * processes the effective limit multiplies, which still bounds guessing far below what a 256-bit key needs.
 */
@Injectable()
export class AuthFailureLimiter {
  /** Bytes the table takes, whatever is counted. */
  static readonly BYTES = DEPTH * WIDTH * 2 * Uint32Array.BYTES_PER_ELEMENT;

  private readonly counts = new Uint32Array(DEPTH * WIDTH);
  /** The window (minutes since the epoch, plus one) each cell's count belongs to; 0 = never used. */
  private readonly windows = new Uint32Array(DEPTH * WIDTH);
  /** Per-process random seeds, so no one can choose sources that share cells with a given one. */
  private readonly seeds = new Uint32Array(randomBytes(DEPTH * 4).buffer);
  private readonly limit: number;

  constructor(config: AppConfig) {
    this.limit = config.values.auth_failures_per_minute;
  }

  /** Seconds until failures from these sources (`addr:…`, `key:…`) are answered again, or 0. */
  blockedFor(sources: readonly string[], now = Date.now()): number {
    const window = windowOf(now);
    for (const source of sources) {
      if (this.count(source, window) >= this.limit) return Math.max(1, Math.ceil((window * WINDOW_MS - now) / 1000));
    }
    return 0;
  }

  recordFailure(sources: readonly string[], now = Date.now()): void {
    const window = windowOf(now);
    for (const source of sources) {
      for (let row = 0; row < DEPTH; row++) {
        const cell = this.cell(source, row);
        if (this.windows[cell] !== window) {
          this.windows[cell] = window;
          this.counts[cell] = 0;
        }
        if (this.counts[cell] < 0xffffffff) this.counts[cell] += 1;
      }
    }
  }

  private count(source: string, window: number): number {
    let min = Infinity;
    for (let row = 0; row < DEPTH; row++) {
      const cell = this.cell(source, row);
      min = Math.min(min, this.windows[cell] === window ? this.counts[cell] : 0);
    }
    return min;
  }

  private cell(source: string, row: number): number {
    // FNV-1a over the UTF-16 code units from a seeded basis, then murmur3's finaliser to spread the bits.
    let h = (this.seeds[row] ^ 0x811c9dc5) >>> 0;
    for (let i = 0; i < source.length; i++) h = Math.imul(h ^ source.charCodeAt(i), 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return row * WIDTH + ((h >>> 0) & (WIDTH - 1));
  }
}

/** The window after `now`'s ends at `windowOf(now) * WINDOW_MS`. */
function windowOf(now: number): number {
  return Math.floor(now / WINDOW_MS) + 1;
}

/**
 * The limiter's source for a client address: IPv4 as is (IPv4-mapped IPv6 too), IPv6 by its /64, since
 * one subscriber usually gets a whole /64 and could otherwise fail from 2^64 addresses.
 */
export function addressSource(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return `addr:${mapped[1]}`;
  if (!isIPv6(address)) return `addr:${address}`;
  const [head, tail = ''] = address.toLowerCase().split('%')[0].split('::');
  const left = head ? head.split(':') : [];
  const right = address.includes('::') && tail ? tail.split(':') : [];
  // An embedded IPv4 tail (`…:1.2.3.4`) counts as two groups; only the first four groups are kept anyway.
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = address.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill('0'), ...right] : left;
  return `addr:${groups
    .slice(0, 4)
    .map((g) => (g.includes('.') ? g : g.replace(/^0+(?=.)/, '')))
    .join(':')}::/64`;
}
