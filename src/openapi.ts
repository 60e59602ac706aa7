import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { jobSpecJsonSchemas } from './jobs/kinds/job-kinds';

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
  document.components.schemas = { ...document.components.schemas, ...(jobSpecJsonSchemas() as object) };
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
