import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type {} from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/auth.decorators';
import { AppError, ErrorCode } from '../core/app-error';
import type { DashboardAssetTable } from './dashboard-assets';

export const DASHBOARD_ASSETS = Symbol('DASHBOARD_ASSETS');

/**
 * The page may load scripts, styles and data only from this server: no CDN, no inline code, nothing
 * that an injected job name or log line could turn into script.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The web dashboard: `/` and its static files. The files are public (they hold no data); every API
 * call the page makes carries the user's key. Not part of the API, so not in the OpenAPI document.
 */
@ApiExcludeController()
@Public()
@Controller()
export class DashboardController {
  constructor(@Inject(DASHBOARD_ASSETS) private readonly table: DashboardAssetTable) {}

  @Get()
  index(@Res() reply: FastifyReply): FastifyReply {
    if (!this.table.publicDir) {
      throw new AppError(ErrorCode.NOT_READY, `The dashboard is unavailable: ${this.table.problems.join('; ')}`);
    }
    return this.send(reply, this.table.publicDir, 'index.html')
      .header('content-security-policy', DASHBOARD_CSP)
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY');
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() reply: FastifyReply): FastifyReply {
    const asset = this.table.assets.get(file);
    if (!asset) throw new AppError(ErrorCode.ROUTE_NOT_FOUND, `No dashboard file ${file}`);
    return this.send(reply, asset.root, asset.file);
  }

  private send(reply: FastifyReply, root: string, file: string): FastifyReply {
    // Revalidate every time (ETag / Last-Modified answer 304): after an upgrade the page and its
    // modules change together, and a stale module mixed with a new page breaks the dashboard.
    return reply.header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').sendFile(file, root, { cacheControl: false });
  }
}
