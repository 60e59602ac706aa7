import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One secret of a job's spec, by its dotted path (`environment.token`): stored apart from `jobs.spec` so
 * that what the API shows and lists of a job never carries it; the worker hands it to the job runner.
 */
@Entity('job_secrets')
export class JobSecretEntity {
  @PrimaryColumn({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @PrimaryColumn({ type: 'varchar', length: 128 })
  path!: string;

  @Column({ type: 'text' })
  value!: string;
}
