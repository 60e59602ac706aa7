import { z } from 'zod';

/**
 * Stable error codes. Clients branch on these, so a code never changes meaning once shipped; the HTTP
 * status each maps to lives in one place, {@link ERROR_STATUS}.
 */
export enum ErrorCode {
  VALIDATION = 'OT_ERR_VALIDATION',
  BAD_JSON = 'OT_ERR_BAD_JSON',
  /** A JSON body nests objects and arrays deeper than the operator's `json_max_depth`. */
  JSON_TOO_DEEP = 'OT_ERR_JSON_TOO_DEEP',
  BODY_TOO_LARGE = 'OT_ERR_BODY_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE = 'OT_ERR_UNSUPPORTED_MEDIA_TYPE',
  UNAUTHENTICATED = 'OT_ERR_UNAUTHENTICATED',
  FORBIDDEN = 'OT_ERR_FORBIDDEN',
  AUTH_RATE_LIMITED = 'OT_ERR_AUTH_RATE_LIMITED',
  /** The slow key checks (keys an operator chose) are all taken and the wait ran out: retry, the key was not refused. */
  AUTH_BUSY = 'OT_ERR_AUTH_BUSY',
  NOT_FOUND = 'OT_ERR_NOT_FOUND',
  ROUTE_NOT_FOUND = 'OT_ERR_ROUTE_NOT_FOUND',
  METHOD_NOT_ALLOWED = 'OT_ERR_METHOD_NOT_ALLOWED',
  CONFLICT = 'OT_ERR_CONFLICT',
  JOB_NOT_CANCELLABLE = 'OT_ERR_JOB_NOT_CANCELLABLE',
  ARTIFACT_UNAVAILABLE = 'OT_ERR_ARTIFACT_UNAVAILABLE',
  CONFIG_INVALID = 'OT_ERR_CONFIG_INVALID',
  NOT_READY = 'OT_ERR_NOT_READY',
  NOT_A_SESSION = 'OT_ERR_NOT_A_SESSION',
  SESSION_CLOSED = 'OT_ERR_SESSION_CLOSED',
  CALL_CONFLICT = 'OT_ERR_CALL_CONFLICT',
  INTERNAL = 'OT_ERR_INTERNAL',
  CHECKPOINT_NOT_FOUND = 'OT_ERR_CHECKPOINT_NOT_FOUND',
  MODEL_NOT_FOUND = 'OT_ERR_MODEL_NOT_FOUND',
  MODEL_AMBIGUOUS = 'OT_ERR_MODEL_AMBIGUOUS',
  MODEL_LOAD_FAILED = 'OT_ERR_MODEL_LOAD_FAILED',
  MODEL_UNAVAILABLE = 'OT_ERR_MODEL_UNAVAILABLE',
  CONTEXT_LENGTH_EXCEEDED = 'OT_ERR_CONTEXT_LENGTH_EXCEEDED',
  /** An uploaded model folder was refused: a link, a path leaving the folder, a file a model folder does not hold, or not loadable. */
  MODEL_INVALID = 'OT_ERR_MODEL_INVALID',
  MODEL_TOO_LARGE = 'OT_ERR_MODEL_TOO_LARGE',
  MODEL_IN_USE = 'OT_ERR_MODEL_IN_USE',
  DATASET_INVALID = 'OT_ERR_DATASET_INVALID',
  DATASET_TOO_LARGE = 'OT_ERR_DATASET_TOO_LARGE',
  DATASET_IN_USE = 'OT_ERR_DATASET_IN_USE',
  RESULTS_NOT_FOUND = 'OT_ERR_RESULTS_NOT_FOUND',
  /** A request set something only the server's operator sets (a host path, a sandbox uid). */
  HOST_ONLY = 'OT_ERR_HOST_ONLY',
  /** A request asked for more of a resource than the operator allows (sandbox memory, priority, episodes). */
  LIMIT_EXCEEDED = 'OT_ERR_LIMIT_EXCEEDED',
  /** No registered worker could ever run the job (more GPUs or CPU slots than any worker has). */
  UNSCHEDULABLE = 'OT_ERR_UNSCHEDULABLE',
  /** A remote environment URL outside the operator's allow-list. */
  URL_NOT_ALLOWED = 'OT_ERR_URL_NOT_ALLOWED',
  /** The user's datasets and checkpoints already fill their storage quota. */
  QUOTA_EXCEEDED = 'OT_ERR_QUOTA_EXCEEDED',
  /** The user already has as many queued jobs as the operator allows (`max_queued_jobs_per_user`). */
  QUEUED_JOBS_LIMIT = 'OT_ERR_QUEUED_JOBS_LIMIT',
  /** The thing asked about existed and is over (a finished or expired Tinker session). */
  GONE = 'OT_ERR_GONE',
  /** Too much waiting already: send again later (Tinker requests over `tinker_max_open_requests`). */
  BUSY = 'OT_ERR_BUSY',
}

export const ERROR_STATUS: Record<ErrorCode, number> = {
  [ErrorCode.VALIDATION]: 400,
  [ErrorCode.BAD_JSON]: 400,
  [ErrorCode.JSON_TOO_DEEP]: 400,
  [ErrorCode.BODY_TOO_LARGE]: 413,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.AUTH_RATE_LIMITED]: 429,
  [ErrorCode.AUTH_BUSY]: 503,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.ROUTE_NOT_FOUND]: 404,
  [ErrorCode.METHOD_NOT_ALLOWED]: 405,
  [ErrorCode.CONFLICT]: 409,
  [ErrorCode.JOB_NOT_CANCELLABLE]: 409,
  [ErrorCode.ARTIFACT_UNAVAILABLE]: 409,
  [ErrorCode.CONFIG_INVALID]: 500,
  [ErrorCode.NOT_READY]: 503,
  [ErrorCode.NOT_A_SESSION]: 409,
  [ErrorCode.SESSION_CLOSED]: 409,
  [ErrorCode.CALL_CONFLICT]: 409,
  [ErrorCode.INTERNAL]: 500,
  [ErrorCode.CHECKPOINT_NOT_FOUND]: 404,
  [ErrorCode.MODEL_NOT_FOUND]: 404,
  [ErrorCode.MODEL_AMBIGUOUS]: 400,
  [ErrorCode.MODEL_LOAD_FAILED]: 422,
  [ErrorCode.MODEL_UNAVAILABLE]: 503,
  [ErrorCode.CONTEXT_LENGTH_EXCEEDED]: 400,
  [ErrorCode.MODEL_INVALID]: 400,
  [ErrorCode.MODEL_TOO_LARGE]: 413,
  [ErrorCode.MODEL_IN_USE]: 409,
  [ErrorCode.DATASET_INVALID]: 400,
  [ErrorCode.DATASET_TOO_LARGE]: 413,
  [ErrorCode.DATASET_IN_USE]: 409,
  [ErrorCode.RESULTS_NOT_FOUND]: 404,
  [ErrorCode.HOST_ONLY]: 400,
  [ErrorCode.LIMIT_EXCEEDED]: 400,
  [ErrorCode.UNSCHEDULABLE]: 400,
  [ErrorCode.URL_NOT_ALLOWED]: 400,
  [ErrorCode.QUOTA_EXCEEDED]: 413,
  [ErrorCode.QUEUED_JOBS_LIMIT]: 429,
  [ErrorCode.GONE]: 410,
  [ErrorCode.BUSY]: 429,
};

export interface AppErrorOptions {
  /** Path of the offending input, dotted (`resources.gpus`), when one field is to blame. */
  field?: string;
  details?: unknown;
  /** Seconds a client should wait before retrying (sent as `Retry-After`). */
  retryAfter?: number;
  cause?: unknown;
}

/** An error the API reports to clients as `{ statusCode, code, message, field }`. */
export class AppError extends Error {
  readonly field?: string;
  readonly details?: unknown;
  readonly retryAfter?: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.field = options.field;
    this.details = options.details;
    this.retryAfter = options.retryAfter;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static notFound(what: string, id: string): AppError {
    return new AppError(ErrorCode.NOT_FOUND, `${what} ${id} not found`, { field: 'id' });
  }
}

/** The JSON body of every error response (the OpenAPI component `ErrorDto`). */
export const ErrorBody = z
  .object({
    statusCode: z.number().int().meta({ example: 400 }),
    code: z.enum(ErrorCode).meta({ id: 'ErrorCode' }),
    message: z.string(),
    field: z.string().optional().describe('Dotted path of the offending input').meta({ example: 'resources.gpus' }),
    details: z.unknown().optional().describe('Every problem found, when there are several'),
  })
  .meta({ id: 'ErrorDto' });
export type ErrorBody = z.output<typeof ErrorBody>;
