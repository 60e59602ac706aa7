import { Body, Controller, Get, Header, Headers, HttpCode, Param, ParseUUIDPipe, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { openEventStream } from '../core/event-stream-reply';
import { ArtifactDto, EventsQuery, JobDto, JobPageDto, jobPageJson, ListJobsQuery, LogsQuery, MetricPointDto, MetricsQuery } from './jobs.dto';
import { JobsService } from './jobs.service';
import { JobStreamService } from './job-stream.service';
import { JOB_KINDS } from './kinds/job-kinds';

const specRefs = JOB_KINDS.map((k) => ({ $ref: `#/components/schemas/JobSpec_${k.kind}` }));
/** Without a mapping, OpenAPI says a discriminator value is the schema's name (`JobSpec_sleep`), not the kind. */
const specMapping = Object.fromEntries(JOB_KINDS.map((k) => [k.kind, `#/components/schemas/JobSpec_${k.kind}`]));

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
  @ApiBody({ schema: { oneOf: specRefs, discriminator: { propertyName: 'kind', mapping: specMapping } } })
  @ApiResponse({ status: 201, type: JobDto })
  @ApiErrors(400, 401, 413)
  async submit(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<JobDto> {
    return JobDto.of(await this.jobs.submit(caller, body));
  }

  @Get()
  @ApiOperation({
    summary: 'List jobs, newest first (yours; all for admins)',
    description: 'Items are job summaries: every field of a job but its spec (GET /v1/jobs/:id has it).',
  })
  @ApiResponse({ status: 200, type: JobPageDto })
  @ApiErrors(400, 401)
  // The busiest read route: the page is written from each job's kept JSON (JobSummaryCache), so Fastify sends the string as it is.
  @Header('content-type', 'application/json; charset=utf-8')
  async list(@CurrentUser() caller: Principal, @Query() q: ListJobsQuery): Promise<string> {
    const { items, total } = await this.jobs.list(caller, q);
    return jobPageJson(items, q.page, q.limit, total);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One job' })
  @ApiResponse({ status: 200, type: JobDto })
  @ApiErrors(400, 401, 404)
  async get(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<JobDto> {
    return JobDto.of(await this.jobs.get(caller, id));
  }

  @Post(':id/cancel')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Cancel a job',
    description: 'A queued job is cancelled at once; a running one is stopped by its worker (state becomes cancelled shortly).',
  })
  @ApiResponse({ status: 202, type: JobDto })
  @ApiErrors(400, 401, 404, 409)
  async cancel(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<JobDto> {
    return JobDto.of(await this.jobs.cancel(caller, id));
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
    @Query() q: EventsQuery,
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
  async logs(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Query() q: LogsQuery, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const text = await this.jobs.logs(caller, id, q.tail);
    reply.header('content-type', 'text/plain; charset=utf-8');
    return text;
  }

  @Get(':id/metrics')
  @ApiOperation({ summary: 'Metric points (step, name, value), ordered by step' })
  @ApiResponse({ status: 200, type: [MetricPointDto] })
  @ApiErrors(400, 401, 404)
  async metrics(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Query() q: MetricsQuery): Promise<MetricPointDto[]> {
    return (await this.jobs.metrics(caller, id, q)).map(MetricPointDto.of);
  }

  @Get(':id/artifacts')
  @ApiOperation({ summary: 'Files the job published' })
  @ApiResponse({ status: 200, type: [ArtifactDto] })
  @ApiErrors(400, 401, 404)
  async artifacts(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<ArtifactDto[]> {
    return (await this.jobs.artifacts(caller, id)).map(ArtifactDto.of);
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
