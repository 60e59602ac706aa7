import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { ApiErrors } from '../core/api-errors.decorator';
import { ZodResponse } from '../core/zod-api.decorators';
import { EnvironmentRegistry } from './environment-registry.service';
import type { PluginRecord } from './plugin-loader';

const summaryShape = {
  id: z.string().nullable().meta({ example: 'math' }),
  package: z.string().nullable().meta({ example: '@opentinker/env-math' }),
  version: z.string().nullable(),
  source: z.enum(['dependency', 'plugins-dir']),
  first_party: z.boolean(),
  status: z.enum(['loaded', 'failed']),
  error: z.string().nullable().describe('Why the package failed to load'),
  description: z.string().nullable(),
  turn_mode: z.enum(['single', 'multi']).nullable(),
  task_source: z.enum(['dataset', 'generator']).nullable(),
};

const EnvironmentSummaryDto = z.object(summaryShape).meta({ id: 'EnvironmentSummaryDto' });
type EnvironmentSummaryDto = z.output<typeof EnvironmentSummaryDto>;

function environmentSummaryDto(r: PluginRecord): EnvironmentSummaryDto {
  const env = r.environment;
  return {
    id: r.id,
    package: r.packageName,
    version: r.version,
    source: r.source,
    first_party: r.firstParty,
    status: r.status,
    error: r.error,
    description: env?.description ?? null,
    turn_mode: env?.turnMode ?? null,
    task_source: env?.taskSource ?? null,
  };
}

const TaskCountsDto = z.object({ train: z.number().int().nullable().describe('null: endless generator'), test: z.number().int().nullable() }).meta({ id: 'TaskCountsDto' });

const EnvironmentDetailDto = z
  .object({
    ...summaryShape,
    config_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the config'),
    default_config: z.unknown().describe('The config with every default; null when the package failed to load'),
    tasks: TaskCountsDto.nullable().describe('Under the default config; null when it cannot be instantiated here'),
    tasks_error: z.string().nullable().describe('Why the default config could not be instantiated'),
  })
  .meta({ id: 'EnvironmentDetailDto' });
type EnvironmentDetailDto = z.output<typeof EnvironmentDetailDto>;

@ApiTags('environments')
@ApiBearerAuth()
@Controller('v1/environments')
export class EnvironmentsController {
  constructor(private readonly registry: EnvironmentRegistry) {}

  @Get()
  @ApiOperation({ summary: 'Environment packages found at boot, including failed third-party ones and why' })
  @ZodResponse(200, EnvironmentSummaryDto.array())
  @ApiErrors(401)
  list(): EnvironmentSummaryDto[] {
    return this.registry.list().map(environmentSummaryDto);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One environment: config schema, defaults, turn mode, task counts' })
  @ZodResponse(200, EnvironmentDetailDto)
  @ApiErrors(401, 404)
  async get(@Param('id') id: string): Promise<EnvironmentDetailDto> {
    const record = this.registry.record(id);
    const summary = environmentSummaryDto(record);
    if (!record.environment) return { ...summary, config_schema: {}, default_config: null, tasks: null, tasks_error: record.error };
    const { configSchema, defaults } = this.registry.describe(record.environment);
    const counts = await this.registry.taskCounts(id);
    return { ...summary, config_schema: configSchema, default_config: defaults, ...counts };
  }
}
