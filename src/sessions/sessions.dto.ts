import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { iso } from '../core/database/columns';
import { SESSION_OPS } from './session-call.entity';
import type { SessionCallEntity, SessionCallState, SessionOp } from './session-call.entity';

export class WaitQuery {
  @ApiPropertyOptional({ description: 'Seconds to wait for the answer before replying 202 with the call still open', minimum: 0, maximum: 300, default: 60 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(300)
  wait_seconds: number = 60;
}

export class ListCallsQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit: number = 100;
}

export class SessionCallRequest {
  @ApiProperty({
    description: 'Your id for this call, unique within the session: a retry with the same id returns the first call (never runs it twice)',
    example: 'step-0001',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  @Matches(/^[A-Za-z0-9._:-]+$/, { message: 'call_id may contain letters, digits and . _ : -' })
  call_id!: string;

  @ApiProperty({ enum: SESSION_OPS })
  @IsIn(SESSION_OPS)
  op!: SessionOp;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'train_step: {tasks | indices | batch_size}; validate: {tasks | indices | size}; sample: {messages, max_tokens, temperature, top_p, seed}; save_checkpoint, close: {}',
    example: { batch_size: 8 },
  })
  @IsOptional()
  @IsObject()
  args?: Record<string, unknown>;
}

export class SessionCallDto {
  @ApiProperty() call_id!: string;
  @ApiProperty({ enum: SESSION_OPS }) op!: SessionOp;
  @ApiProperty({ type: 'object', additionalProperties: true }) args!: Record<string, unknown>;
  @ApiProperty({ enum: ['pending', 'running', 'succeeded', 'failed'] }) state!: SessionCallState;
  @ApiProperty({ description: 'What the operation returned (metrics, checkpoint, text)', nullable: true, type: 'object', additionalProperties: true })
  result!: unknown;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty() created_at!: string;
  @ApiProperty({ nullable: true, type: String }) started_at!: string | null;
  @ApiProperty({ nullable: true, type: String }) finished_at!: string | null;

  static of(c: SessionCallEntity): SessionCallDto {
    return {
      call_id: c.callId,
      op: c.op,
      args: c.args,
      state: c.state,
      result: c.result ?? null,
      error: c.error,
      created_at: iso(c.createdAt)!,
      started_at: iso(c.startedAt),
      finished_at: iso(c.finishedAt),
    };
  }
}
