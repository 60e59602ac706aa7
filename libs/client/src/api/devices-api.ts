import type { Transport } from '../transport';
import type { WorkerDevices } from '../types';
import type { RequestOptions } from './request-options';

/**
 * Live workers and their devices (`GET /v1/devices`).
 *
 * @example
 * ```ts
 * for (const worker of await client.devices.list()) {
 *   const busy = worker.devices.filter((d) => d.job_id).length;
 *   console.log(`${worker.hostname}: ${busy}/${worker.devices.length} devices busy`);
 * }
 * ```
 */
export class DevicesApi {
  constructor(private readonly t: Transport) {}

  list(options: RequestOptions = {}): Promise<WorkerDevices[]> {
    return this.t.call(this.t.api.GET('/v1/devices', { signal: options.signal }), options.signal);
  }
}
