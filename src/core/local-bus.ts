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

  /** A session call was recorded (the worker running that session hands it out now). */
  sessionCall(jobId: string): void {
    this.emitter.emit(`call:${jobId}`);
  }

  onSessionCall(jobId: string, listener: () => void): () => void {
    this.emitter.on(`call:${jobId}`, listener);
    return () => this.emitter.off(`call:${jobId}`, listener);
  }

  /** A session call finished (API requests waiting on it answer now). */
  sessionCallDone(jobId: string): void {
    this.emitter.emit(`call-done:${jobId}`);
  }

  onSessionCallDone(jobId: string, listener: () => void): () => void {
    this.emitter.on(`call-done:${jobId}`, listener);
    return () => this.emitter.off(`call-done:${jobId}`, listener);
  }
}
