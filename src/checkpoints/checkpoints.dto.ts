import { z } from 'zod';
import type { CheckpointInfo } from './checkpoint-store';

const CheckpointFileDto = z
  .object({
    path: z.string().describe('Path inside the checkpoint folder').meta({ example: 'model/model.safetensors' }),
    size: z.number().int().describe('Bytes'),
  })
  .meta({ id: 'CheckpointFileDto' });

export const CheckpointDto = z
  .object({
    step: z.number().int().meta({ example: 100 }),
    created_at: z.iso.datetime().describe('When it was written (trainer_state.json, else the folder time)'),
    size_bytes: z.number().int().describe('Bytes of all its files'),
    has_model: z.boolean().describe('Has a Hugging Face model folder (`model/`), which chat completions serve'),
    has_adapter: z.boolean().describe('Has a PEFT LoRA adapter (`adapter/`)'),
    model_path: z.string().describe('What a job spec’s model.path may name to start from it').meta({ example: 'job:4f0c8b1e-0000-4000-8000-000000000000/step-100' }),
    files: z.array(CheckpointFileDto),
  })
  .meta({ id: 'CheckpointDto' });
export type CheckpointDto = z.output<typeof CheckpointDto>;

export function checkpointDto(jobId: string, c: CheckpointInfo): CheckpointDto {
  return {
    step: c.step,
    created_at: new Date(c.createdAt).toISOString(),
    size_bytes: c.sizeBytes,
    has_model: c.hasModel,
    has_adapter: c.hasAdapter,
    model_path: `job:${jobId}/step-${c.step}`,
    files: c.files.map((f) => ({ path: f.path, size: f.size })),
  };
}
