import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { iso } from '../core/columns';
import { ZodResponse } from '../core/zod-api.decorators';
import { DevicesService } from './devices.service';

const DeviceDto = z
  .object({
    id: z.string().describe('`gpu:<index>` or `cpu:<slot>`').meta({ example: 'gpu:0' }),
    kind: z.enum(['gpu', 'cpu']),
    name: z.string().meta({ example: 'NVIDIA H100 80GB HBM3' }),
    memory_mb: z.number().nullable(),
    job_id: z.string().nullable().describe("The job holding the device (another user's job shows as `busy`, without its id)"),
    busy: z.boolean().describe('Whether a job or a model server holds the device'),
    held_by: z
      .enum(['job', 'model_server'])
      .nullable()
      .describe('What holds the device: a job, or a model server answering chat completions (which model, and for whom, is not shown); null when free'),
  })
  .meta({ id: 'DeviceDto' });

const WorkerDevicesDto = z.object({ worker_id: z.string(), hostname: z.string(), last_seen_at: z.iso.datetime(), devices: z.array(DeviceDto) }).meta({ id: 'WorkerDevicesDto' });
type WorkerDevicesDto = z.output<typeof WorkerDevicesDto>;

@ApiTags('devices')
@ApiBearerAuth()
@Controller('v1/devices')
export class DevicesController {
  constructor(private readonly devices: DevicesService) {}

  @Get()
  @ApiOperation({ summary: "Each live worker's devices and what holds each (a job or a model server)" })
  @ZodResponse(200, WorkerDevicesDto.array())
  @ApiErrors(401)
  async list(@CurrentUser() caller: Principal): Promise<WorkerDevicesDto[]> {
    return (await this.devices.list(caller)).map((w) => ({
      worker_id: w.workerId,
      hostname: w.hostname,
      last_seen_at: iso(w.lastSeenAt)!,
      devices: w.devices.map((d) => ({ id: d.id, kind: d.kind, name: d.name, memory_mb: d.memoryMb, job_id: d.jobId, busy: d.busy, held_by: d.heldBy })),
    }));
  }
}
