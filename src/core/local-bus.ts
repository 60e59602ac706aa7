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

  /** A call finished (the API request waiting on it answers now). */
  callDone(callId: number): void {
    this.emitter.emit(`call-done:${callId}`);
  }

  onCallDone(callId: number, listener: () => void): () => void {
    this.emitter.on(`call-done:${callId}`, listener);
    return () => this.emitter.off(`call-done:${callId}`, listener);
  }

  /** Every open call of a job was failed at once (its runner ended): whoever waits on one of them looks now. */
  jobCallsFailed(jobId: string): void {
    this.emitter.emit(`calls-failed:${jobId}`);
  }

  onJobCallsFailed(jobId: string, listener: () => void): () => void {
    this.emitter.on(`calls-failed:${jobId}`, listener);
    return () => this.emitter.off(`calls-failed:${jobId}`, listener);
  }
}
