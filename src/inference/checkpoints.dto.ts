import { ApiProperty } from '@nestjs/swagger';
import type { CheckpointInfo } from './checkpoint-store';

export class CheckpointFileDto {
  @ApiProperty({ example: 'model/model.safetensors', description: 'Path inside the checkpoint folder' }) path!: string;
  @ApiProperty({ description: 'Bytes' }) size!: number;
}

export class CheckpointDto {
  @ApiProperty({ example: 100 }) step!: number;
  @ApiProperty({ format: 'date-time', description: 'When it was written (trainer_state.json, else the folder time)' }) created_at!: string;
  @ApiProperty({ description: 'Bytes of all its files' }) size_bytes!: number;
  @ApiProperty({ description: 'Has a Hugging Face model folder (`model/`), which chat completions serve' }) has_model!: boolean;
  @ApiProperty({ description: 'Has a PEFT LoRA adapter (`adapter/`)' }) has_adapter!: boolean;
  @ApiProperty({ example: 'job:4f0c8b1e-0000-4000-8000-000000000000/step-100', description: 'What a job spec’s model.path may name to start from it' })
  model_path!: string;
  @ApiProperty({ type: [CheckpointFileDto] }) files!: CheckpointFileDto[];

  static of(jobId: string, c: CheckpointInfo): CheckpointDto {
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
}
