import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { detectDevices } from './device-detector';
import { DevicePool } from './device-pool';

/**
 * This process's one {@link DevicePool} (its GPUs, `gpus`, and CPU slots, `cpu_slots`): the worker
 * places jobs on it and the API's model servers take their devices from it, so a model server and a
 * job never count the same CPU slot. Detected once, on first use.
 */
@Injectable()
export class DevicePoolService {
  private pool?: Promise<DevicePool>;

  constructor(private readonly config: AppConfig) {}

  get(): Promise<DevicePool> {
    const v = this.config.values;
    this.pool ??= detectDevices(v.gpus, v.cpu_slots).then((devices) => new DevicePool(devices));
    return this.pool;
  }
}
