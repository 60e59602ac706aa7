import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../core/api-errors.decorator';
import { ZodResponse } from '../core/zod-api.decorators';
import { JobKindDto, jobKindDto } from './jobs.dto';
import { JOB_KINDS } from '../kinds/job-kinds';

@ApiTags('jobs')
@ApiBearerAuth()
@Controller('v1/job-kinds')
export class JobKindsController {
  @Get()
  @ApiOperation({
    summary: 'The kinds of job this server runs, and what their jobs can do',
    description: 'In the order the server lists them; `POST /v1/jobs` takes a spec of any of them (`kind`). Clients decide by capability, never by kind name.',
  })
  @ZodResponse(200, JobKindDto.array())
  @ApiErrors(401)
  list(): JobKindDto[] {
    return JOB_KINDS.map(jobKindDto);
  }
}
