import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export const TINKER_SESSION_STATES = ['active', 'finished', 'expired'] as const;
export type TinkerSessionState = (typeof TINKER_SESSION_STATES)[number];

/**
 * A Tinker SDK session (`create_session`): the training clients and samplers one `ServiceClient`
 * makes. Active while heartbeats come; `finished` by `sessions/{id}/finish`, `expired` when they stop.
 */
@Entity('tinker_sessions')
@Index('idx_tinker_sessions_owner', ['ownerId', 'state'])
@Index('idx_tinker_sessions_heartbeat', ['state', 'heartbeatAt'])
export class TinkerSessionEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  @Column({ type: 'varchar', length: 16 })
  state!: TinkerSessionState;

  @Column({ name: 'sdk_version', type: 'varchar', length: 64 })
  sdkVersion!: string;

  @Column({ type: 'simple-json' })
  tags!: string[];

  @Column({ name: 'user_metadata', type: 'simple-json', nullable: true })
  userMetadata!: Record<string, unknown> | null;

  /** The `X-Idempotency-Key` of the request that created it: a retry of that request gets this session back. */
  @Column({ name: 'idempotency_key', type: 'varchar', length: 200, nullable: true })
  idempotencyKey!: string | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'heartbeat_at', type: 'bigint', transformer: epochMs })
  heartbeatAt!: number;

  @Column({ name: 'ended_at', type: 'bigint', nullable: true, transformer: epochMs })
  endedAt!: number | null;

  @Column({ name: 'end_reason', type: 'text', nullable: true })
  endReason!: string | null;
}
