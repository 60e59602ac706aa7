import { Body, Controller, Get, Param, ParseUUIDPipe, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { ListCallsQuery, SessionCallDto, SessionCallRequest, WaitQuery } from './sessions.dto';
import { SessionsService } from './sessions.service';

/** 200 once a call has its answer; 202 while it is still open (poll GET …/calls/:call_id). */
function statusFor(dto: SessionCallDto): number {
  return dto.state === 'pending' || dto.state === 'running' ? 202 : 200;
}

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/jobs/:id/calls')
export class SessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @Post()
  @ApiOperation({
    summary: 'Call a training session (train_step, validate, save_checkpoint, sample, close)',
    description: 'Idempotent by call_id. Waits up to wait_seconds for the answer: 200 with the result, or 202 with the call still open.',
  })
  @ApiResponse({ status: 200, type: SessionCallDto, description: 'Answered (state succeeded or failed)' })
  @ApiResponse({ status: 202, type: SessionCallDto, description: 'Still pending or running' })
  @ApiErrors(400, 401, 404, 409)
  async call(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @Body() body: SessionCallRequest,
    @Query() q: WaitQuery,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionCallDto> {
    const dto = SessionCallDto.of(await this.sessions.call(caller, id, body, q.wait_seconds));
    reply.status(statusFor(dto));
    return dto;
  }

  @Get()
  @ApiOperation({ summary: 'The session’s calls, newest first' })
  @ApiResponse({ status: 200, type: [SessionCallDto] })
  @ApiErrors(400, 401, 404)
  async list(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @Query() q: ListCallsQuery): Promise<SessionCallDto[]> {
    return (await this.sessions.list(caller, id, q.limit)).map(SessionCallDto.of);
  }

  @Get(':call_id')
  @ApiOperation({ summary: 'One call; waits up to wait_seconds for its answer' })
  @ApiResponse({ status: 200, type: SessionCallDto })
  @ApiResponse({ status: 202, type: SessionCallDto, description: 'Still pending or running' })
  @ApiErrors(400, 401, 404)
  async get(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @Param('call_id') callId: string,
    @Query() q: WaitQuery,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionCallDto> {
    const dto = SessionCallDto.of(await this.sessions.get(caller, id, callId, q.wait_seconds));
    reply.status(statusFor(dto));
    return dto;
  }
}
