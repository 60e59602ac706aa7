import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { iso } from '../core/database/columns';
import { DevicesService } from './devices.service';

class DeviceDto {
  @ApiProperty({ example: 'gpu:0', description: '`gpu:<index>` or `cpu:<slot>`' }) id!: string;
  @ApiProperty({ enum: ['gpu', 'cpu'] }) kind!: 'gpu' | 'cpu';
  @ApiProperty({ example: 'NVIDIA H100 80GB HBM3' }) name!: string;
  @ApiProperty({ nullable: true, type: Number }) memory_mb!: number | null;
  @ApiProperty({ nullable: true, type: String, description: "The job holding the device (another user's job shows as `busy`, without its id)" })
  job_id!: string | null;
  @ApiProperty({ description: 'Whether a job holds the device' }) busy!: boolean;
}

class WorkerDevicesDto {
  @ApiProperty() worker_id!: string;
  @ApiProperty() hostname!: string;
  @ApiProperty({ format: 'date-time' }) last_seen_at!: string;
  @ApiProperty({ type: [DeviceDto] }) devices!: DeviceDto[];
}

@ApiTags('devices')
@ApiBearerAuth()
@Controller('v1/devices')
export class DevicesController {
  constructor(private readonly devices: DevicesService) {}

  @Get()
  @ApiOperation({ summary: "Each live worker's devices and the job holding each" })
  @ApiResponse({ status: 200, type: [WorkerDevicesDto] })
  @ApiErrors(401)
  async list(@CurrentUser() caller: Principal): Promise<WorkerDevicesDto[]> {
    return (await this.devices.list(caller)).map((w) => ({
      worker_id: w.workerId,
      hostname: w.hostname,
      last_seen_at: iso(w.lastSeenAt)!,
      devices: w.devices.map((d) => ({ id: d.id, kind: d.kind, name: d.name, memory_mb: d.memoryMb, job_id: d.jobId, busy: d.busy })),
    }));
  }
}
