import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export interface DeviceInfo {
  /** `gpu:<index>` or `cpu:<slot>`. */
  id: string;
  kind: 'gpu' | 'cpu';
  name: string;
  memoryMb: number | null;
}

@Entity('workers')
export class WorkerEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  hostname!: string;

  @Column({ type: 'integer' })
  pid!: number;

  @Column({ type: 'simple-json' })
  devices!: DeviceInfo[];

  @Column({ name: 'started_at', type: 'bigint', transformer: epochMs })
  startedAt!: number;

  @Column({ name: 'last_seen_at', type: 'bigint', transformer: epochMs })
  lastSeenAt!: number;

  /**
   * Devices of this worker's machine that the API's model servers hold (in a `serve` whose embedded
   * worker this is): written whenever a model server takes or gives back devices, shown by `GET /v1/devices`.
   */
  @Column({ name: 'model_server_devices', type: 'simple-json', nullable: true })
  modelServerDevices!: string[] | null;

  /** Set when the worker shut down cleanly, so it is not mistaken for a crashed one. */
  @Column({ name: 'stopped_at', type: 'bigint', nullable: true, transformer: epochMs })
  stoppedAt!: number | null;
}
