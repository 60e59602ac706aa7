import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

/**
 * A sampling client's session (`{session_id}:sample:{sampling_session_seq_id}`): the base alone, a saved
 * sampler checkpoint (`model_path`), or an unnamed snapshot of a training client
 * (`save_weights_and_get_sampling_client`, `source_model_id`).
 */
@Entity('tinker_samplers')
@Index('idx_tinker_samplers_session', ['sessionId'])
export class TinkerSamplerEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 36 })
  sessionId!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ type: 'integer' })
  seq!: number;

  @Column({ name: 'base_model', type: 'varchar', length: 512 })
  baseModel!: string;

  @Column({ name: 'model_path', type: 'text', nullable: true })
  modelPath!: string | null;

  @Column({ name: 'source_model_id', type: 'varchar', length: 128, nullable: true })
  sourceModelId!: string | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
