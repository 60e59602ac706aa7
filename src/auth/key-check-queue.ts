import { AppError, ErrorCode } from '../core/app-error';

export interface KeyCheckLimits {
  /** Checks running at once (`auth_key_checks`). */
  concurrency: number;
  /** Checks waiting for one of those (`auth_key_check_queue`). */
  maxQueued: number;
  /** How long a check may wait before it starts (`auth_key_check_timeout_seconds`). */
  timeoutMs: number;
}

interface Waiting {
  start: () => void;
  timer: NodeJS.Timeout;
}

/**
 * A bounded queue in front of the slow key checks (scrypt: ~16 MiB and tens of ms of a thread each).
 * At most `concurrency` run; the next `maxQueued` wait their turn, in order, for at most `timeoutMs`.
 * A check that cannot run (the queue is full, or its wait ran out) is `503 OT_ERR_AUTH_BUSY` naming the
 * limit and its setting, never "invalid key": the key may well be valid. Requests with the same key
 * share one check (a busy client's cache expiring).
 */
export class KeyCheckQueue<T> {
  private running = 0;
  private readonly waiting: Waiting[] = [];
  private readonly pending = new Map<string, Promise<T>>();

  constructor(private readonly limits: KeyCheckLimits) {}

  /** Checks waiting now (for tests and metrics). */
  get queued(): number {
    return this.waiting.length;
  }

  run(key: string, check: () => Promise<T>): Promise<T> {
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.schedule(check).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  private async schedule(check: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) await this.turn();
    this.running += 1;
    try {
      return await check();
    } finally {
      this.running -= 1;
      this.waiting.shift()?.start();
    }
  }

  /** Resolves when a running check hands over its place. */
  private turn(): Promise<void> {
    const { maxQueued, timeoutMs } = this.limits;
    if (this.waiting.length >= maxQueued) {
      return Promise.reject(busy(`${maxQueued} key checks are already waiting (auth_key_check_queue)`, 1));
    }
    return new Promise<void>((resolve, reject) => {
      const entry: Waiting = {
        start: () => {
          clearTimeout(entry.timer);
          resolve();
        },
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(entry), 1);
          reject(busy(`no key check slot within ${timeoutMs / 1000} s (auth_key_check_timeout_seconds)`, Math.ceil(timeoutMs / 1000)));
        }, timeoutMs),
      };
      this.waiting.push(entry);
    });
  }
}

function busy(reason: string, retryAfter: number): AppError {
  return new AppError(ErrorCode.AUTH_BUSY, `The server is busy checking keys: ${reason}; try again (your key was not refused)`, {
    field: 'authorization',
    retryAfter,
  });
}
