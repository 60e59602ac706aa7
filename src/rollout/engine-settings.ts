import { engineBackendOptions, type EngineSettings, type InitBackendOptions } from '@opentinker/engine/settings';

/** The engine settings of this process; until `configureEngine`, the engine reads its own variables. */
let options: InitBackendOptions = {};

/**
 * Sets the engine settings this process starts its engine with, taken from the worker's or the API's
 * configuration (a job runner gets them in its start message, a model server in its load message)
 * rather than from the environment. Call it before the engine starts (`ensureEngineBackend`). Free of
 * TensorFlow.js, so a runner whose job needs no model does not load it.
 */
export function configureEngine(settings: EngineSettings): void {
  options = engineBackendOptions(settings);
}

/** The `initBackend` options of this process. */
export function engineOptions(): InitBackendOptions {
  return options;
}
