// Entry point `@opentinker/engine/models`: model configs, presets and sizes without TensorFlow.js, for
// processes that describe models but never run them (the API checks job specs with these).
export { type ModelConfig, type ModelPresetName, MODEL_PRESETS, modelPreset, validateModelConfig, headDim } from './model/model-config';
export { countParameters, weightSpecs } from './model/weights';
export { FULL_FINE_TUNING_BYTES_PER_PARAMETER, fullFineTuningRefusal } from './model/model-size';
