import type { EnvironmentError } from '@opentinker/env-sdk';
import { AppError, ErrorCode } from '../core/app-error';

/**
 * An environment's refusal of a tenant's config as an API error: a host-only key is `OT_ERR_HOST_ONLY`,
 * a value above the operator's ceiling `OT_ERR_LIMIT_EXCEEDED`, any other bad value `OT_ERR_VALIDATION`;
 * the field is the config key under `prefix` (`environment.config.memory_mb`).
 */
export function environmentConfigError(error: EnvironmentError, prefix: string): AppError {
  const field = `${prefix}${error.field ?? 'config'}`;
  const code = error.code === 'ENV_CONFIG_FORBIDDEN' ? ErrorCode.HOST_ONLY : error.code === 'ENV_CONFIG_LIMIT' ? ErrorCode.LIMIT_EXCEEDED : ErrorCode.VALIDATION;
  return new AppError(code, error.message, { field });
}
