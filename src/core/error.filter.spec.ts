import { BadRequestException, HttpException, NotFoundException } from '@nestjs/common';
import { AppError, ErrorCode } from './app-error';
import { mapError } from './error.filter';
import { HostPaths } from './host-paths';

describe('mapError', () => {
  it('keeps the code, field and retry hint of app errors', () => {
    const { body, headers } = mapError(new AppError(ErrorCode.AUTH_RATE_LIMITED, 'slow down', { field: 'authorization', retryAfter: 12.2 }));
    expect(body).toEqual({ statusCode: 429, code: 'OT_ERR_AUTH_RATE_LIMITED', message: 'slow down', field: 'authorization' });
    expect(headers).toEqual({ 'retry-after': '13' });
  });

  it('maps Fastify body errors, also when Nest wrapped them', () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
    expect(mapError(tooLarge).body.code).toBe('OT_ERR_BODY_TOO_LARGE');
    const wrapped = new HttpException('bad json', 400, { cause: { code: 'FST_ERR_CTP_INVALID_JSON_BODY' } });
    expect(mapError(wrapped).body).toMatchObject({ statusCode: 400, code: 'OT_ERR_BAD_JSON' });
  });

  it('maps Nest HTTP exceptions by status and hides unexpected errors', () => {
    expect(mapError(new NotFoundException()).body.code).toBe('OT_ERR_ROUTE_NOT_FOUND');
    expect(mapError(new BadRequestException('x')).body.code).toBe('OT_ERR_VALIDATION');
    const hidden = mapError(new Error('database password is hunter2'));
    expect(hidden.body).toEqual({ statusCode: 500, code: 'OT_ERR_INTERNAL', message: 'Internal server error' });
  });

  it("names the server's folders instead of spelling them out, in the message, the field and the details", () => {
    const paths = new HostPaths([['/srv/opentinker', '$OPENTINKER_HOME']]);
    const error = new AppError(ErrorCode.MODEL_LOAD_FAILED, 'model.path "/srv/opentinker/jobs/1/model": no config.json', {
      field: 'model',
      details: [{ path: 'model', message: '/srv/opentinker/jobs/1/model/config.json missing' }],
    });
    expect(mapError(error, paths).body).toEqual({
      statusCode: 422,
      code: 'OT_ERR_MODEL_LOAD_FAILED',
      message: 'model.path "$OPENTINKER_HOME/jobs/1/model": no config.json',
      field: 'model',
      details: [{ path: 'model', message: '$OPENTINKER_HOME/jobs/1/model/config.json missing' }],
    });
    const nest = new BadRequestException('cannot open /srv/opentinker/x');
    expect(mapError(nest, paths).body.message).toBe('cannot open $OPENTINKER_HOME/x');
  });
});
