import { Controller, Get, Param, ParseUUIDPipe, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { z } from 'zod';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { ZodBody, ZodQuery, ZodResponse } from '../core/zod-api.decorators';
import { ListCallsQuery, SessionCallDto, sessionCallDto, SessionCallRequest, WaitQuery } from './sessions.dto';
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
  @ZodResponse(200, SessionCallDto, 'Answered (state succeeded or failed)')
  @ZodResponse(202, SessionCallDto, 'Still pending or running')
  @ApiErrors(400, 401, 404, 409)
  async call(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @ZodBody(SessionCallRequest) body: SessionCallRequest,
    @ZodQuery(WaitQuery) q: z.output<typeof WaitQuery>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionCallDto> {
    const dto = sessionCallDto(await this.sessions.call(caller, id, body, q.wait_seconds));
    reply.status(statusFor(dto));
    return dto;
  }

  @Get()
  @ApiOperation({ summary: 'The session’s calls, newest first' })
  @ZodResponse(200, SessionCallDto.array())
  @ApiErrors(400, 401, 404)
  async list(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @ZodQuery(ListCallsQuery) q: z.output<typeof ListCallsQuery>): Promise<SessionCallDto[]> {
    return (await this.sessions.list(caller, id, q.limit)).map(sessionCallDto);
  }

  @Get(':call_id')
  @ApiOperation({ summary: 'One call; waits up to wait_seconds for its answer' })
  @ZodResponse(200, SessionCallDto)
  @ZodResponse(202, SessionCallDto, 'Still pending or running')
  @ApiErrors(400, 401, 404)
  async get(
    @CurrentUser() caller: Principal,
    @Param('id', ParseUUIDPipe) id: string,
    @Param('call_id') callId: string,
    @ZodQuery(WaitQuery) q: z.output<typeof WaitQuery>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionCallDto> {
    const dto = sessionCallDto(await this.sessions.get(caller, id, callId, q.wait_seconds));
    reply.status(statusFor(dto));
    return dto;
  }
}
