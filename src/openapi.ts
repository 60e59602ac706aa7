import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { CreateEpisodeRequest, CreateEpisodeResponse, InfoResponse, ProtocolError, StepRequest, StepResponse, TasksQuery, TasksResponse } from '@opentinker/env-sdk';
import type { z } from 'zod';
import { API_SCHEMAS } from './core/openapi-schemas';

export const API_VERSION = '0.1.0';

/** The OpenAPI document, with stable key order so the committed copy diffs cleanly. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('OpenTinker')
    .setDescription(
      'Agentic reinforcement learning as a self-hosted service. Every /v1 route needs an API key: `Authorization: Bearer otk_…` ' +
        'or `X-API-Key: otk_…` (also as `tml-otk_…`, the form the Tinker SDK takes). ' +
        'Errors are `{ statusCode, code, message, field? }` with a stable `code`.',
    )
    .setVersion(API_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'otk_…' })
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  document.components ??= {};
  // The protocol's paths first: converting their schemas names the components they use.
  Object.assign(document.paths, protocolPaths());
  document.components.schemas = { ...document.components.schemas, ...API_SCHEMAS.all() };
  return sortKeys(document) as OpenAPIObject;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const answer = (schema: z.ZodType) => json(API_SCHEMAS.schema(schema, 'output'));

/**
 * The environment protocol as the server exposes it for each loaded environment. These routes are
 * plain Fastify routes (not Nest controllers), shared with `opentinker env serve`; their requests and
 * answers are the env SDK's schemas, which the routes check with.
 */
function protocolPaths(): Record<string, unknown> {
  const base = '/v1/environments/{id}/protocol';
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Environment id' };
  const episodeId = { name: 'episode_id', in: 'path', required: true, schema: { type: 'string', maxLength: 64 } };
  const errors = Object.fromEntries(
    [
      ['400', 'Invalid request (the body names the field)'],
      ['401', 'Missing or invalid API key'],
      ['404', 'Unknown episode'],
      ['409', 'Step before reset or after done'],
      ['429', 'Too many open episodes, or too many failed authentications'],
      ['504', 'The environment call timed out'],
    ].map(([status, description]) => [status, { description, ...answer(ProtocolError) }]),
  );
  const op = (summary: string, ok: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    tags: ['environment protocol'],
    summary,
    security: [{ bearer: [] }],
    responses: { ...ok, ...errors },
    ...extra,
  });
  const body = (schema: z.ZodType) => ({ required: true, ...json(API_SCHEMAS.schema(schema, 'input')) });
  return {
    [`${base}/v1/info`]: {
      get: op('Environment protocol: describe the environment', { '200': { description: 'Info', ...answer(InfoResponse) } }, { parameters: [id], operationId: 'EnvProtocol_info' }),
    },
    [`${base}/v1/tasks`]: {
      get: op(
        'Environment protocol: page through tasks',
        { '200': { description: 'Tasks', ...answer(TasksResponse) } },
        { operationId: 'EnvProtocol_tasks', parameters: [id, ...API_SCHEMAS.queryParameters(TasksQuery)] },
      ),
    },
    [`${base}/v1/episodes`]: {
      post: op(
        'Environment protocol: start an episode',
        { '201': { description: 'First messages', ...answer(CreateEpisodeResponse) } },
        { operationId: 'EnvProtocol_createEpisode', parameters: [id], requestBody: body(CreateEpisodeRequest) },
      ),
    },
    [`${base}/v1/episodes/{episode_id}/step`]: {
      post: op(
        'Environment protocol: answer the policy’s action',
        { '200': { description: 'Step result', ...answer(StepResponse) } },
        { operationId: 'EnvProtocol_step', parameters: [id, episodeId], requestBody: body(StepRequest) },
      ),
    },
    [`${base}/v1/episodes/{episode_id}`]: {
      delete: op('Environment protocol: close an episode', { '204': { description: 'Closed' } }, { operationId: 'EnvProtocol_closeEpisode', parameters: [id, episodeId] }),
    },
  };
}
