import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';

const WINDOW_MS = 60_000;

/**
 * Counts failed authentications per client address in a fixed one-minute window. Past the limit, even a
 * correct key is refused until the window ends, so guessing keys costs a minute per few attempts.
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

  /** Seconds until this address may try again, or 0 when it is not blocked. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.windows.get(address);
    if (!w || now - w.start >= WINDOW_MS) return 0;
    return w.failures >= this.limit ? Math.ceil((w.start + WINDOW_MS - now) / 1000) : 0;
  }

  recordFailure(address: string, now = Date.now()): void {
    const w = this.windows.get(address);
    if (!w || now - w.start >= WINDOW_MS) {
      if (this.windows.size > 100_000) this.prune(now);
      this.windows.set(address, { start: now, failures: 1 });
    } else {
      w.failures += 1;
    }
  }

  private prune(now: number): void {
    for (const [address, w] of this.windows) if (now - w.start >= WINDOW_MS) this.windows.delete(address);
  }
}
