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

  /** Set when the worker shut down cleanly, so it is not mistaken for a crashed one. */
  @Column({ name: 'stopped_at', type: 'bigint', nullable: true, transformer: epochMs })
  stoppedAt!: number | null;
}
