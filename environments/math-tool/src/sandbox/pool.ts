import { EnvironmentError } from '@opentinker/env-sdk';

/**
 * A counting semaphore with a FIFO queue: at most `size` runs at once, the others wait their turn.
 */
export class RunPool {
  private active = 0;
  private readonly waiting: Array<{ grant: () => void; fail: (e: Error) => void }> = [];
  private closed = false;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError('pool size must be a positive integer');
  }

  /** Runs currently holding a slot. */
  get running(): number {
    return this.active;
  }

  /** Runs waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `work` when a slot is free. Rejects with `ENV_UNAVAILABLE` once the pool is closed. */
  async use<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /** Refuses new work and fails queued work; running work finishes (its owner stops it). */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(closedError());
  }

  private acquire(): Promise<void> {
    if (this.closed) return Promise.reject(closedError());
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((grant, fail) => this.waiting.push({ grant, fail }));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next.grant();
    else this.active--;
  }
}

function closedError(): EnvironmentError {
  return new EnvironmentError('ENV_UNAVAILABLE', 'The Python sandbox was closed');
}
