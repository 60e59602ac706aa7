import 'reflect-metadata';
import { INestApplicationContext, LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { AppErrorFilter } from './core/error.filter';
import { jsonBodyParser } from './core/json-body';
import { PrometheusService } from './health/prometheus.service';
import { buildOpenApiDocument } from './openapi';
import { AuthService } from './auth/auth.service';
import { UsersService } from './auth/users.service';
import { EnvironmentRegistry } from './registry/environment-registry.service';
import { envProtocolRoutes } from './registry/env-protocol.routes';

export interface CreateOptions {
  /** The settings, with where the installation's files are (`config.install`). */
  config: AppConfig;
  /** Run a worker in this process (the default for `serve`). */
  worker: boolean;
  logger?: LoggerService | LogLevel[] | false;
}

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

export function logLevels(config: AppConfig): LogLevel[] {
  return LEVELS.slice(0, LEVELS.indexOf(config.values.log_level) + 1);
}

/** The HTTP application: API (and, unless disabled, a worker) in one process. */
export async function createApi(options: CreateOptions): Promise<NestFastifyApplication> {
  const { config } = options;
  const adapter = new FastifyAdapter({
    bodyLimit: config.values.body_limit_bytes,
    routerOptions: { maxParamLength: 200 },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, { api: true, worker: options.worker }), adapter, {
    logger: options.logger ?? logLevels(config),
    bufferLogs: false,
  });
  app.useGlobalFilters(new AppErrorFilter(config.hostPaths));
  const fastify = app.getHttpAdapter().getInstance();
  app.useBodyParser('application/json', { bodyLimit: config.values.body_limit_bytes }, jsonBodyParser(fastify, config.values.json_max_depth));
  const prometheus = app.get(PrometheusService);
  fastify.addHook('onResponse', (request, reply, done) => {
    prometheus.observe(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.enableShutdownHooks();

  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', yamlDocumentUrl: 'openapi.yaml' });
  await app.init();
  await exposeEnvironments(app);
  return app;
}

/**
 * Serves every loaded environment over the environment protocol at `/v1/environments/<id>/protocol`,
 * behind API-key auth, so a remote trainer can use the server's plugins like any environment server.
 */
async function exposeEnvironments(app: NestFastifyApplication): Promise<void> {
  const registry = app.get(EnvironmentRegistry);
  const auth = app.get(AuthService);
  const fastify = app.getHttpAdapter().getInstance();
  for (const record of registry.list()) {
    if (record.status !== 'loaded' || !record.id) continue;
    const id = record.id;
    await fastify.register(envProtocolRoutes, {
      prefix: `/v1/environments/${id}/protocol`,
      store: registry.store(id),
      authorize: (headers, address) => auth.authenticate(headers, address).then((p) => p.userId),
      hostPaths: app.get(AppConfig).hostPaths,
    });
  }
}

/** Creates the admin on first start; returns the new key when one was generated (print it once). */
export async function ensureAdmin(app: INestApplicationContext): Promise<string | undefined> {
  return (await app.get(UsersService).ensureAdmin()).key;
}

/** A worker without HTTP: `opentinker worker`. */
export async function createWorker(options: CreateOptions): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(AppModule.forRoot(options.config, { api: false, worker: true }), { logger: options.logger ?? logLevels(options.config) });
  app.enableShutdownHooks();
  await app.init();
  return app;
}
