import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../core/api-errors.decorator';
import { EnvironmentRegistry } from './environment-registry.service';
import type { PluginRecord } from './plugin-loader';

class EnvironmentSummaryDto {
  @ApiProperty({ nullable: true, type: String, example: 'math' }) id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: '@opentinker/env-math' }) package!: string | null;
  @ApiProperty({ nullable: true, type: String }) version!: string | null;
  @ApiProperty({ enum: ['dependency', 'plugins-dir'] }) source!: 'dependency' | 'plugins-dir';
  @ApiProperty() first_party!: boolean;
  @ApiProperty({ enum: ['loaded', 'failed'] }) status!: 'loaded' | 'failed';
  @ApiProperty({ nullable: true, type: String, description: 'Why the package failed to load' }) error!: string | null;
  @ApiProperty({ nullable: true, type: String }) description!: string | null;
  @ApiProperty({ nullable: true, enum: ['single', 'multi'] }) turn_mode!: 'single' | 'multi' | null;
  @ApiProperty({ nullable: true, enum: ['dataset', 'generator'] }) task_source!: 'dataset' | 'generator' | null;

  static of(r: PluginRecord): EnvironmentSummaryDto {
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
}

class TaskCountsDto {
  @ApiProperty({ nullable: true, type: Number, description: 'null: endless generator' }) train!: number | null;
  @ApiProperty({ nullable: true, type: Number }) test!: number | null;
}

class EnvironmentDetailDto extends EnvironmentSummaryDto {
  @ApiProperty({ description: 'JSON Schema of the config', type: 'object', additionalProperties: true }) config_schema!: Record<string, unknown>;
  @ApiProperty({ description: 'The config with every default', type: 'object', additionalProperties: true, nullable: true }) default_config!: unknown;
  @ApiProperty({ type: TaskCountsDto, nullable: true, description: 'Under the default config; null when it cannot be instantiated here' })
  tasks!: TaskCountsDto | null;
  @ApiProperty({ nullable: true, type: String, description: 'Why the default config could not be instantiated' }) tasks_error!: string | null;
}

@ApiTags('environments')
@ApiBearerAuth()
@Controller('v1/environments')
export class EnvironmentsController {
  constructor(private readonly registry: EnvironmentRegistry) {}

  @Get()
  @ApiOperation({ summary: 'Environment packages found at boot, including failed third-party ones and why' })
  @ApiResponse({ status: 200, type: [EnvironmentSummaryDto] })
  @ApiErrors(401)
  list(): EnvironmentSummaryDto[] {
    return this.registry.list().map(EnvironmentSummaryDto.of);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One environment: config schema, defaults, turn mode, task counts' })
  @ApiResponse({ status: 200, type: EnvironmentDetailDto })
  @ApiErrors(401, 404)
  async get(@Param('id') id: string): Promise<EnvironmentDetailDto> {
    const record = this.registry.record(id);
    const summary = EnvironmentSummaryDto.of(record);
    if (!record.environment) return { ...summary, config_schema: {}, default_config: null, tasks: null, tasks_error: record.error };
    const { configSchema, defaults } = this.registry.describe(record.environment);
    const counts = await this.registry.taskCounts(id);
    return { ...summary, config_schema: configSchema, default_config: defaults, ...counts };
  }
}
