import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';

/**
 * In-process wake-up signals (a job was queued, a job has new events). Only a hint to poll now rather
 * than at the next tick: the database stays the truth, so processes on other machines still converge.
 */
@Injectable()
export class LocalBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  jobQueued(): void {
    this.emitter.emit('queued');
  }

  onJobQueued(listener: () => void): () => void {
    this.emitter.on('queued', listener);
    return () => this.emitter.off('queued', listener);
  }

  jobEvents(jobId: string): void {
    this.emitter.emit(`job:${jobId}`);
  }

  onJobEvents(jobId: string, listener: () => void): () => void {
    this.emitter.on(`job:${jobId}`, listener);
    return () => this.emitter.off(`job:${jobId}`, listener);
  }
}
