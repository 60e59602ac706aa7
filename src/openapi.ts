import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { API_SCHEMAS } from './core/openapi-schemas';

export const API_VERSION = '0.1.0';

/** The OpenAPI document, with stable key order so the committed copy diffs cleanly. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('OpenTinker')
    .setDescription(
      'Agentic reinforcement learning as a self-hosted service. Every /v1 route needs `Authorization: Bearer otk_…`. ' +
        'Errors are `{ statusCode, code, message, field? }` with a stable `code`.',
    )
    .setVersion(API_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'otk_…' })
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  document.components ??= {};
  document.components.schemas = { ...document.components.schemas, ...API_SCHEMAS.all(), ...PROTOCOL_SCHEMAS };
  Object.assign(document.paths, protocolPaths());
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

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ content: { 'application/json': { schema } } });

const PROTOCOL_SCHEMAS = {
  EnvMessage: {
    type: 'object',
    required: ['role', 'content'],
    properties: { role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] }, content: { type: 'string' } },
  },
  EnvProtocolError: {
    type: 'object',
    required: ['statusCode', 'code', 'message'],
    properties: { statusCode: { type: 'integer' }, code: { type: 'string', example: 'ENV_STEP_AFTER_DONE' }, message: { type: 'string' }, field: { type: 'string' } },
  },
  EnvInfo: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      version: { type: 'string' },
      protocol_version: { type: 'string', example: '1' },
      description: { type: 'string' },
      turn_mode: { type: 'string', enum: ['single', 'multi'] },
      task_source: { type: 'string', enum: ['dataset', 'generator'] },
      config_schema: { type: 'object', additionalProperties: true },
      config: { type: 'object', additionalProperties: true },
      tasks: { type: 'object', properties: { train: { type: 'integer', nullable: true }, test: { type: 'integer', nullable: true } } },
    },
  },
  EnvTasks: {
    type: 'object',
    properties: { split: { type: 'string' }, offset: { type: 'integer' }, total: { type: 'integer', nullable: true }, tasks: { type: 'array', items: {} } },
  },
  EnvCreateEpisode: {
    type: 'object',
    required: ['seed'],
    additionalProperties: false,
    description: 'Either `task`, or `split` + `index` of one of the server’s tasks',
    properties: {
      task: {},
      split: { type: 'string', enum: ['train', 'test'] },
      index: { type: 'integer', minimum: 0 },
      seed: { type: 'integer' },
      config: { type: 'object', additionalProperties: true },
    },
  },
  EnvEpisode: {
    type: 'object',
    properties: { episode_id: { type: 'string' }, messages: { type: 'array', items: ref('EnvMessage') }, task: {} },
  },
  EnvStep: { type: 'object', required: ['action'], additionalProperties: false, properties: { action: { type: 'string' } } },
  EnvStepResult: {
    type: 'object',
    properties: {
      observation: { type: 'string' },
      observation_role: { type: 'string', enum: ['user', 'tool'] },
      reward: { type: 'number' },
      done: { type: 'boolean' },
      info: { type: 'object', additionalProperties: true },
    },
  },
};

/**
 * The environment protocol as the server exposes it for each loaded environment. These routes are
 * plain Fastify routes (not Nest controllers), so they are described here by hand.
 */
function protocolPaths(): Record<string, unknown> {
  const base = '/v1/environments/{id}/protocol';
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Environment id' };
  const episodeId = { name: 'episode_id', in: 'path', required: true, schema: { type: 'string' } };
  const errors = Object.fromEntries(
    [
      ['400', 'Invalid request (the body names the field)'],
      ['401', 'Missing or invalid API key'],
      ['404', 'Unknown episode'],
      ['409', 'Step before reset or after done'],
      ['429', 'Too many open episodes, or too many failed authentications'],
      ['504', 'The environment call timed out'],
    ].map(([status, description]) => [status, { description, ...json(ref('EnvProtocolError')) }]),
  );
  const op = (summary: string, ok: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    tags: ['environment protocol'],
    summary,
    security: [{ bearer: [] }],
    responses: { ...ok, ...errors },
    ...extra,
  });
  return {
    [`${base}/v1/info`]: {
      get: op('Environment protocol: describe the environment', { '200': { description: 'Info', ...json(ref('EnvInfo')) } }, { parameters: [id], operationId: 'EnvProtocol_info' }),
    },
    [`${base}/v1/tasks`]: {
      get: op(
        'Environment protocol: page through tasks',
        { '200': { description: 'Tasks', ...json(ref('EnvTasks')) } },
        {
          operationId: 'EnvProtocol_tasks',
          parameters: [
            id,
            { name: 'split', in: 'query', schema: { type: 'string', enum: ['train', 'test'], default: 'train' } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          ],
        },
      ),
    },
    [`${base}/v1/episodes`]: {
      post: op(
        'Environment protocol: start an episode',
        { '201': { description: 'First messages', ...json(ref('EnvEpisode')) } },
        {
          operationId: 'EnvProtocol_createEpisode',
          parameters: [id],
          requestBody: { required: true, ...json(ref('EnvCreateEpisode')) },
        },
      ),
    },
    [`${base}/v1/episodes/{episode_id}/step`]: {
      post: op(
        'Environment protocol: answer the policy’s action',
        { '200': { description: 'Step result', ...json(ref('EnvStepResult')) } },
        {
          operationId: 'EnvProtocol_step',
          parameters: [id, episodeId],
          requestBody: { required: true, ...json(ref('EnvStep')) },
        },
      ),
    },
    [`${base}/v1/episodes/{episode_id}`]: {
      delete: op('Environment protocol: close an episode', { '204': { description: 'Closed' } }, { operationId: 'EnvProtocol_closeEpisode', parameters: [id, episodeId] }),
    },
  };
}
