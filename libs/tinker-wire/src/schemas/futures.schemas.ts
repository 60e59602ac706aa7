import { z } from 'zod';
import { Count, Id } from './common.schemas';
import {
  LoadWeightsResponse,
  CreateModelResponse,
  OptimStepResponse,
  SaveWeightsExternalResponse,
  SaveWeightsForSamplerResponseInternal,
  SaveWeightsResponse,
} from './training.schemas';

/**
 * Futures. A submission answers {@link UntypedAPIFuture} at once; the SDK then polls
 * `POST /api/v1/retrieve_future` ({@link FutureRetrieveRequest}) with a 45 s client timeout and no
 * pause between polls, so a server holds each poll until the result is ready or ~30 s passed. A poll
 * is answered, with HTTP 200 (see docs/tinker.md for the status codes the SDK reads):
 *
 * - {@link TryAgainResponse} while the request waits or runs;
 * - {@link RequestFailedResponse} when it failed (`category: "user"` for the caller's mistakes);
 * - the result: JSON for the results below, protobuf (`Content-Type: application/x-protobuf`) for
 *   forward/forward_backward and sample results, which the SDK reads by that header.
 *
 * A JSON result must not have an `error` key, `type: "try_again"` or `status: "complete_metadata"`:
 * the SDK tests for those first.
 */

/** The answer to every submission. `sample_sequence_ids` (asample only, one per sample in output order) is required by SDK 0.26+. */
export const UntypedAPIFuture = z.object({
  request_id: Id,
  model_id: Id.nullish(),
  sample_sequence_ids: z.array(Id).nullish(),
});
export type UntypedAPIFuture = z.output<typeof UntypedAPIFuture>;

/** `POST /api/v1/retrieve_future`. `allow_metadata_only` lets the server answer {@link MetadataOnlyResponse} first for a large result. */
export const FutureRetrieveRequest = z.object({ request_id: Id, allow_metadata_only: z.boolean().default(false) });
export type FutureRetrieveRequest = z.output<typeof FutureRetrieveRequest>;

/** Not done yet: the SDK polls again at once. `queue_state` other than `active` is shown to the user as a pause, with the reason. */
export const TryAgainResponse = z.object({
  type: z.literal('try_again'),
  request_id: Id,
  queue_state: z.enum(['active', 'paused_capacity', 'paused_rate_limit']),
  queue_state_reason: z.string().nullish(),
});
export type TryAgainResponse = z.output<typeof TryAgainResponse>;

/** Failed: the SDK raises `tinker.RequestFailedError` with this category (an unknown category reads as `unknown`). */
export const RequestFailedResponse = z.object({ error: z.string(), category: z.enum(['unknown', 'server', 'user']) });
export type RequestFailedResponse = z.output<typeof RequestFailedResponse>;

/** Optional: the result's size before the result, when the poll allowed it; the SDK reserves memory and polls again without `allow_metadata_only`. */
export const MetadataOnlyResponse = z.object({ status: z.literal('complete_metadata'), response_payload_size: Count });
export type MetadataOnlyResponse = z.output<typeof MetadataOnlyResponse>;

/** `POST /api/v1/cancel_future` (SDK 0.26+, only when the dynamic config has `sample_cancel_enabled`): stop an abandoned sample. */
export const CancelFutureRequest = z.object({ request_id: Id });
export type CancelFutureRequest = z.output<typeof CancelFutureRequest>;

/** The JSON results a future can have, by request type (the SDK's `X-Tinker-Request-Type` on each poll). */
export const JSON_FUTURE_RESULTS = {
  CreateModel: CreateModelResponse,
  OptimStep: OptimStepResponse,
  SaveWeights: SaveWeightsResponse,
  SaveWeightsForSampler: SaveWeightsForSamplerResponseInternal,
  LoadWeights: LoadWeightsResponse,
  SaveWeightsExternal: SaveWeightsExternalResponse,
} as const;

/** Request types whose result is protobuf: `ForwardBackwardOutput` for the first two, `SampleResponse` for `Sample`. */
export const PROTOBUF_FUTURE_RESULTS = ['ForwardBackward', 'Forward', 'Sample'] as const;

/** Any JSON answer to a poll other than a result. */
export const FuturePendingOrFailed = z.union([TryAgainResponse, RequestFailedResponse, MetadataOnlyResponse]);
export type FuturePendingOrFailed = z.output<typeof FuturePendingOrFailed>;
