import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';

const WINDOW_MS = 60_000;

/**
 * Counts failed authentications in a fixed one-minute window, per client address and per key prefix
 * (the first characters of the presented key, so guessing one key from many addresses is slowed too).
 * Only failures are throttled: a valid key always authenticates, so a flood of bad keys from an
 * address (or a NAT or proxy that many tenants share) never locks out the people with good keys.
 * Per process by design: with several API processes the effective limit multiplies, which still bounds
 * guessing far below what a 256-bit key needs.
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly windows = new Map<string, { start: number; failures: number }>();
  private readonly limit: number;

  constructor(config: AppConfig) {
    this.limit = config.values.auth_failures_per_minute;
  }

  /** Seconds until failures from these sources (`addr:…`, `key:…`) are answered again, or 0. */
  blockedFor(sources: readonly string[], now = Date.now()): number {
    let wait = 0;
    for (const source of sources) {
      const w = this.windows.get(source);
      if (!w || now - w.start >= WINDOW_MS || w.failures < this.limit) continue;
      wait = Math.max(wait, Math.ceil((w.start + WINDOW_MS - now) / 1000));
    }
    return wait;
  }

  recordFailure(sources: readonly string[], now = Date.now()): void {
    for (const source of sources) {
      const w = this.windows.get(source);
      if (!w || now - w.start >= WINDOW_MS) {
        if (this.windows.size > 100_000) this.prune(now);
        this.windows.set(source, { start: now, failures: 1 });
      } else {
        w.failures += 1;
      }
    }
  }

  private prune(now: number): void {
    for (const [source, w] of this.windows) if (now - w.start >= WINDOW_MS) this.windows.delete(source);
  }
}
