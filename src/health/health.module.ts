// src/health owns liveness, readiness and the Prometheus metrics.
import { Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { QueueModule } from '../scheduler/queue.module';
import { HealthController } from './health.controller';
import { PrometheusService } from './prometheus.service';

@Module({
  imports: [JobsDataModule, QueueModule],
  controllers: [HealthController],
  providers: [PrometheusService],
  exports: [PrometheusService],
})
export class HealthModule {}
