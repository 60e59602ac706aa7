import { Controller, Get, Param, ParseUUIDPipe, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { JobResultsService } from './job-results.service';

@ApiTags('jobs')
@ApiBearerAuth()
@Controller('v1/jobs')
export class JobResultsController {
  constructor(private readonly service: JobResultsService) {}

  @Get(':id/results')
  @ApiOperation({
    // Generated clients name their method by it: kept as it was before this route joined the jobs routes.
    operationId: 'Inference_results',
    summary: "An inference job's results as JSON lines",
    description:
      'One JSON object per episode: task_index, sample, task, messages, response, reward, turn_rewards, finish, info, ground_truth ' +
      '(when the task has one), result / winner (when the environment reports them), error (environment failures), tokens { prompt, generated }. ' +
      'While the job runs, the lines written so far; 404 `OT_ERR_RESULTS_NOT_FOUND` before the first batch or for other kinds of job.',
  })
  @ApiProduces('application/x-ndjson')
  @ApiResponse({ status: 200, description: 'JSON lines', content: { 'application/x-ndjson': { schema: { type: 'string' } } } })
  @ApiErrors(400, 401, 404, 409)
  async results(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Res() reply: FastifyReply): Promise<void> {
    const stream = await this.service.open(caller, id);
    await reply.header('content-type', 'application/x-ndjson; charset=utf-8').send(stream);
  }
}
