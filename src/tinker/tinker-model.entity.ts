import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

/**
 * A training client (the SDK's model, a training run of the REST API): a LoRA adapter on a base model,
 * held by its session's runner for that base. Its id is `{session_id}:train:{model_seq_id}`, the form
 * the SDK computes itself when it creates a client from a checkpoint.
 */
@Entity('tinker_models')
@Index('idx_tinker_models_owner', ['ownerId', 'createdAt'])
@Index('idx_tinker_models_session', ['sessionId'])
export class TinkerModelEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 36 })
  sessionId!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  /** The runner job that holds it (its checkpoints live in that job's folder). */
  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  /** `model_seq_id`: the client is `train-<seq>` inside its runner. */
  @Column({ type: 'integer' })
  seq!: number;

  /** The base as the client named it. */
  @Column({ name: 'base_model', type: 'varchar', length: 512 })
  baseModel!: string;

  @Column({ name: 'lora_rank', type: 'integer' })
  loraRank!: number;

  @Column({ type: 'simple-json' })
  lora!: { train_attn: boolean; train_mlp: boolean; train_unembed: boolean; seed: number | null };

  /** The checkpoint it was created from (`create_training_client_from_state`), if any. */
  @Column({ name: 'loaded_from', type: 'text', nullable: true })
  loadedFrom!: string | null;

  @Column({ name: 'user_metadata', type: 'simple-json', nullable: true })
  userMetadata!: Record<string, unknown> | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'last_request_at', type: 'bigint', transformer: epochMs })
  lastRequestAt!: number;
}
