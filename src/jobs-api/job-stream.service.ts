import { Injectable } from '@nestjs/common';
import { LocalBus } from '../core/local-bus';
import { JobEventsRepository } from '../jobs/job-events.repository';
import { FINAL_STATES } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';

const POLL_MS = 500;
const PING_MS = 15_000;
const BATCH = 500;

export interface EventSink {
  /** Writes one SSE frame; returns false once the client is gone. */
  write(frame: string): boolean;
  closed(): boolean;
}

/**
 * Streams a job's events as Server-Sent Events: everything after `afterId`, then new events as they
 * are recorded (woken by the local bus, else polled, so events from workers in other processes arrive
 * too), until the job has ended and every event has been sent.
 */
@Injectable()
export class JobStreamService {
  constructor(
    private readonly jobs: JobsRepository,
    private readonly events: JobEventsRepository,
    private readonly bus: LocalBus,
  ) {}

  async stream(jobId: string, afterId: number, sink: EventSink): Promise<void> {
    let wake: (() => void) | undefined;
    const unsubscribe = this.bus.onJobEvents(jobId, () => wake?.());
    let lastPing = Date.now();
    try {
      for (;;) {
        const job = await this.jobs.findById(jobId);
        const batch = await this.events.after(jobId, afterId, BATCH);
        for (const e of batch) {
          const frame = `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ ...(e.data as object), time: new Date(e.createdAt).toISOString() })}\n\n`;
          if (!sink.write(frame)) return;
          afterId = e.id;
        }
        if (batch.length === BATCH) continue;
        if (!job || FINAL_STATES.includes(job.state)) {
          // Read once more: the final state event may have landed after the batch above.
          if ((await this.events.after(jobId, afterId, 1)).length > 0) continue;
          sink.write(`event: end\ndata: ${JSON.stringify({ state: job?.state ?? null })}\n\n`);
          return;
        }
        if (sink.closed()) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
        if (Date.now() - lastPing > PING_MS) {
          if (!sink.write(': ping\n\n')) return;
          lastPing = Date.now();
        }
      }
    } finally {
      unsubscribe();
    }
  }
}
