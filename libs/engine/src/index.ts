// Public API of @opentinker/engine. Both halves (numerics and I/O) append their exports here.
export { EngineError, isEngineError, type EngineErrorCode } from './errors';
export {
  type ModelConfig,
  type ModelPresetName,
  validateModelConfig,
  toHfConfigJson,
  headDim,
  modelPreset,
  MODEL_PRESETS,
  TINY_CHAR_SPECIAL_TOKENS,
} from './model/model-config';
export {
  type NamedWeights,
  type WeightTensor,
  type WeightSpec,
  type WeightKind,
  weightSpecs,
  layerWeightName,
  countParameters,
  validateWeights,
  initWeights,
} from './model/weights';
