import { Controller, Get, Header, Headers, HttpCode, Param, ParseUUIDPipe, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { z } from 'zod';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { openEventStream } from '../core/event-stream-reply';
import { JsonText, ZodBody, ZodQuery, ZodResponse } from '../core/zod-api.decorators';
import { ArtifactDto, artifactDto, EventsQuery, JobDto, jobDto, JobPageDto, jobPageJson, ListJobsQuery, LogsQuery, MetricPointDto, metricPointDto, MetricsQuery } from './jobs.dto';
import { JobsService } from './jobs.service';
import { JobStreamService } from './job-stream.service';
import { JobSpecBody } from '../kinds/job-kinds';
import type { ParsedJobSpec } from '../kinds/job-kinds';

@ApiTags('jobs')
@ApiBearerAuth()
@Controller('v1/jobs')
export class JobsController {
  constructor(
    private readonly jobs: JobsService,
    private readonly stream: JobStreamService,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Submit a job',
    description: 'The body is the job spec; `kind` selects its schema. Unknown keys are refused with their path; defaults are stored.',
  })
  @ZodResponse(201, JobDto)
  @ApiErrors(400, 401, 413)
  async submit(@CurrentUser() caller: Principal, @ZodBody(JobSpecBody) spec: ParsedJobSpec['spec']): Promise<JobDto> {
    return jobDto(await this.jobs.submit(caller, spec));
  }

  @Get()
  @ApiOperation({
    summary: 'List jobs, newest first (yours; all for admins)',
    description: 'Items are job summaries: every field of a job but its spec (GET /v1/jobs/:id has it).',
  })
  @ZodResponse(200, JobPageDto)
  @ApiErrors(400, 401)
  // The busiest read route: the page is written from each job's kept JSON (JobSummaryCache), so Fastify sends the string as it is.
  @Header('content-type', 'application/json; charset=utf-8')
  async list(@CurrentUser() caller: Principal, @ZodQuery(ListJobsQuery) q: ListJobsQuery): Promise<JsonText<JobPageDto>> {
    const { items, total } = await this.jobs.list(caller, q);
    return jobPageJson(items, q.page, q.limit, total);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One job' })
  @ZodResponse(200, JobDto)
  @ApiErrors(400, 401, 404)
  async get(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<JobDto> {
    return jobDto(await this.jobs.get(caller, id));
  }

  @Post(':id/cancel')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Cancel a job',
    description: 'A queued job is cancelled at once; a running one is stopped by its worker (state becomes cancelled shortly).',
  })
  @ZodResponse(202, JobDto)
  @ApiErrors(400, 401, 404, 409)
  async cancel(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<JobDto> {
    return jobDto(await this.jobs.cancel(caller, id));
  }

  @Get(':id/events')
  @ApiOperation({
    summary: 'Stream the job’s events (Server-Sent Events)',
    description:
      'Event types: state, progress, metrics, log, artifact; a final `end` event closes the stream once the job has ended. ' +
      'Each event has an id; reconnect with Last-Event-ID (or ?after=) to resume.',
  })
  @ApiProduces('text/event-stream')
  @ApiHeader({ name: 'Last-Event-ID', required: false })
  @ApiResponse({ status: 200, description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } })
  @ApiErrors(400, 401, 404)
  async events(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @ZodQuery(EventsQuery) q: z.output<typeof EventsQuery>,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.jobs.get(caller, id);
    const fromHeader = Number(lastEventId);
    const after = Number.isInteger(fromHeader) && fromHeader >= 0 ? fromHeader : (q.after ?? 0);
    const events = openEventStream(reply);
    try {
      await this.stream.stream(id, after, { write: events.write, closed: events.closed });
    } finally {
      events.end();
    }
  }

  @Get(':id/logs')
  @ApiOperation({ summary: 'The job runner’s output (stdout and stderr)' })
  @ApiProduces('text/plain')
  @ApiResponse({ status: 200, content: { 'text/plain': { schema: { type: 'string' } } } })
  @ApiErrors(400, 401, 404)
  async logs(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @ZodQuery(LogsQuery) q: z.output<typeof LogsQuery>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    const text = await this.jobs.logs(caller, id, q.tail);
    reply.header('content-type', 'text/plain; charset=utf-8');
    return text;
  }

  @Get(':id/metrics')
  @ApiOperation({ summary: 'Metric points (step, name, value), ordered by step' })
  @ZodResponse(200, MetricPointDto.array())
  @ApiErrors(400, 401, 404)
  async metrics(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @ZodQuery(MetricsQuery) q: z.output<typeof MetricsQuery>): Promise<MetricPointDto[]> {
    return (await this.jobs.metrics(caller, id, q)).map(metricPointDto);
  }

  @Get(':id/artifacts')
  @ApiOperation({ summary: 'Files the job published' })
  @ZodResponse(200, ArtifactDto.array())
  @ApiErrors(400, 401, 404)
  async artifacts(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<ArtifactDto[]> {
    return (await this.jobs.artifacts(caller, id)).map(artifactDto);
  }

  @Get(':id/artifacts/:name')
  @ApiOperation({ summary: 'Download an artifact' })
  @ApiProduces('application/octet-stream')
  @ApiResponse({ status: 200, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } })
  @ApiErrors(400, 401, 404, 409)
  async artifact(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Param('name') name: string, @Res() reply: FastifyReply): Promise<void> {
    const { artifact, stream } = await this.jobs.openArtifact(caller, id, name);
    const safe = artifact.name.replace(/[^A-Za-z0-9._-]/g, '_');
    await reply
      .header('content-type', 'application/octet-stream')
      .header('content-length', String(artifact.size))
      .header('content-disposition', `attachment; filename="${safe}"`)
      .send(stream);
  }
}
