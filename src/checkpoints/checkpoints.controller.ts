import { Controller, Get, Param, ParseUUIDPipe, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiParam, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { ZodResponse } from '../core/zod-api.decorators';
import { CheckpointDto, checkpointDto } from './checkpoints.dto';
import { CheckpointsService } from './checkpoints.service';

@ApiTags('jobs')
@ApiBearerAuth()
@Controller('v1/jobs')
export class CheckpointsController {
  constructor(private readonly checkpoints: CheckpointsService) {}

  @Get(':id/checkpoints')
  @ApiOperation({
    summary: 'The job’s complete checkpoints, oldest first',
    description: 'Folders `step-<n>/` under the job’s work folder; ones still being written are not listed. Empty for a job that saved none.',
  })
  @ZodResponse(200, CheckpointDto.array())
  @ApiErrors(400, 401, 404)
  async list(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<CheckpointDto[]> {
    return (await this.checkpoints.list(caller, id)).map((c) => checkpointDto(id, c));
  }

  @Get(':id/checkpoints/:step/download')
  @ApiOperation({
    summary: 'Download a checkpoint as a tar stream',
    description:
      'An uncompressed tar of the folder, entries under `step-<n>/` (`model/` is a Hugging Face folder any tool loads). ' +
      'Streamed as it is read, so no length is sent. Errors: `OT_ERR_CHECKPOINT_NOT_FOUND` when the step does not exist (or was pruned).',
  })
  @ApiParam({ name: 'step', description: 'A step number, or `latest`', example: 'latest' })
  @ApiProduces('application/x-tar')
  @ApiResponse({ status: 200, content: { 'application/x-tar': { schema: { type: 'string', format: 'binary' } } } })
  @ApiErrors(400, 401, 404)
  async download(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Param('step') step: string, @Res() reply: FastifyReply): Promise<void> {
    const { info, stream } = await this.checkpoints.open(caller, id, step);
    await reply
      .header('content-type', 'application/x-tar')
      .header('content-disposition', `attachment; filename="job-${id}-step-${info.step}.tar"`)
      .header('x-checkpoint-step', String(info.step))
      .send(stream);
  }
}
