import { z } from 'zod';
import { defineJobKind } from '../spec/job-kind';
import { environmentSpec, modelSpec, rolloutSpec } from '../../rollout/rl-spec';
import { trainKind } from '../train/train.kind';

const train = trainKind.spec.shape;

const sessionSpecFields = z.object({
  environment: environmentSpec,
  model: modelSpec,
  algorithm: train.algorithm,
  optim: train.optim,
  rollout: rolloutSpec.default(rolloutSpec.parse({})),
  batch_size: z.number().int().min(1).max(65536).default(16).describe('Tasks per train_step when the call names none'),
  val_batch_size: z.number().int().min(1).max(1_000_000).default(64).describe('Test tasks per validate when the call names none'),
  val_temperature: z.number().min(0).max(10).default(0),
  max_checkpoints: z.number().int().min(1).max(1000).default(3),
  idle_timeout_seconds: z.number().int().min(5).max(86_400).default(600).describe('The session closes itself (and frees its devices) after this long without a call'),
  seed: z.number().int().min(0).default(0),
});

/** A session job's spec after defaults. */
export type SessionSpec = z.output<typeof sessionSpecFields>;

/**
 * A client-driven training session (OpenTinker's loop for users who own their data loop): the job runner
 * holds the policy and answers calls (`train_step`, `validate`, `save_checkpoint`, `sample`, `close`) made
 * through `POST /v1/jobs/:id/calls`. Not resumable: the session state lives in the runner.
 */
export const sessionKind = defineJobKind({
  kind: 'session',
  description: 'Client-driven training session: the server holds the policy and answers train_step / validate / sample calls',
  capabilities: { checkpoints: true, trains: true, calls: true },
  spec: sessionSpecFields,
  runner: async () => (await import('./session.runner.js')).runSession,
});
