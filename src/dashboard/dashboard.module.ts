// src/dashboard owns the web UI and the route that serves it.
import { Inject, Logger, Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { AppConfig } from '../config/app-config';
import { resolveDashboardAssets, type DashboardAssetTable } from './dashboard-assets';
import { DASHBOARD_ASSETS, DashboardController } from './dashboard.controller';

/** The web dashboard served at `/` (API role only), from `src/dashboard/public` in the installation's folder. */
@Module({
  controllers: [DashboardController],
  providers: [{ provide: DASHBOARD_ASSETS, useFactory: (config: AppConfig) => resolveDashboardAssets(config.install.root), inject: [AppConfig] }],
})
export class DashboardModule implements OnModuleInit {
  private readonly logger = new Logger('Dashboard');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(DASHBOARD_ASSETS) private readonly table: DashboardAssetTable,
  ) {}

  onModuleInit(): void {
    for (const problem of this.table.problems) this.logger.warn(`Dashboard: ${problem}`);
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    // Only `reply.sendFile` is wanted (serve: false): the controller decides which files exist.
    // Queued, not awaited: awaiting boots Fastify's plugin tree before Nest has installed its error
    // handler, and body-parser errors then bypass the exception filter (raw FST_ERR_* codes).
    void fastify.register(fastifyStatic, { root: this.table.publicDir ?? this.table.hostRoot, serve: false });
  }
}
