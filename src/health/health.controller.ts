import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { z } from 'zod';
import { AppConfig } from '../config/app-config';
import { Public } from '../auth/auth.decorators';
import { ZodResponse } from '../core/zod-api.decorators';
import { JOB_QUEUE } from '../scheduler/job-queue';
import type { JobQueue } from '../scheduler/job-queue';
import { WorkersRepository } from '../scheduler/workers.repository';
import { PrometheusService } from './prometheus.service';

const LivenessDto = z.object({ status: z.literal('ok') }).meta({ id: 'LivenessDto' });

const CheckDto = z.object({ ok: z.boolean(), detail: z.string() }).meta({ id: 'CheckDto' });
type CheckDto = z.output<typeof CheckDto>;

const ReadinessDto = z.object({ status: z.enum(['ok', 'unavailable']), database: CheckDto, queue: CheckDto, workers: CheckDto }).meta({ id: 'ReadinessDto' });
type ReadinessDto = z.output<typeof ReadinessDto>;

@ApiTags('health')
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly workers: WorkersRepository,
    private readonly prometheus: PrometheusService,
  ) {}

  @Get('health')
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ZodResponse(200, LivenessDto)
  health(): z.output<typeof LivenessDto> {
    return { status: 'ok' };
  }

  @Get('health/ready')
  @HttpCode(200)
  @ApiOperation({ summary: 'Readiness: database and queue reachable, at least one live worker' })
  @ZodResponse(200, ReadinessDto)
  @ZodResponse(503, ReadinessDto)
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<ReadinessDto> {
    const check = async (fn: () => Promise<string>): Promise<CheckDto> => {
      try {
        return { ok: true, detail: await fn() };
      } catch (error) {
        return { ok: false, detail: (error as Error).message };
      }
    };
    const database = await check(async () => {
      await this.dataSource.query('SELECT 1');
      return this.config.usesPostgres ? 'postgres' : 'sqlite';
    });
    const queue = await check(async () => {
      await this.queue.ping();
      return `${this.queue.name}, ${await this.queue.depth()} waiting`;
    });
    const workers = await check(async () => {
      const alive = await this.workers.alive(Date.now() - this.config.values.lease_seconds * 1000);
      if (alive.length === 0) throw new Error('no live worker');
      return `${alive.length} live`;
    });
    const ok = database.ok && queue.ok && workers.ok;
    reply.status(ok ? 200 : 503);
    return { status: ok ? 'ok' : 'unavailable', database, queue, workers };
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Prometheus metrics' })
  @ApiProduces('text/plain')
  @ApiResponse({ status: 200, content: { 'text/plain': { schema: { type: 'string' } } } })
  async metrics(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    reply.header('content-type', this.prometheus.registry.contentType);
    return this.prometheus.registry.metrics();
  }
}
