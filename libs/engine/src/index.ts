// Public API of @opentinker/engine. Both halves (numerics and I/O) append their exports here.
export { EngineError, isEngineError, type EngineErrorCode } from './errors';
export { type ModelConfig, type ModelPresetName, validateModelConfig, toHfConfigJson, headDim, modelPreset, MODEL_PRESETS, TINY_CHAR_SPECIAL_TOKENS } from './model/model-config';
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
// I/O half: safetensors, 16-bit floats.
export {
  type SafetensorsDtype,
  type SafetensorsFloatDtype,
  type SafetensorsTensorInfo,
  type SafetensorsHeader,
  type SafetensorsData,
  type SafetensorsTensor,
  type SafetensorsWriteTensor,
  MAX_SAFETENSORS_HEADER_BYTES,
  dtypeBytes,
  parseSafetensorsPrefix,
  parseSafetensorsHeader,
  decodeTensorBytes,
  toFloat32,
  encodeSafetensors,
  decodeSafetensors,
  SafetensorsFile,
  readSafetensors,
  writeSafetensors,
} from './io/safetensors';
export {
  float16BitsToFloat32,
  float32ToFloat16Bits,
  bfloat16BitsToFloat32,
  float32ToBfloat16Bits,
  decodeFloat16,
  encodeFloat16,
  decodeBfloat16,
  encodeBfloat16,
} from './io/half-precision';
// Numerics half: backends, the transformer, log-probs.
export { type BackendName, type BackendInfo, type InitBackendOptions, initBackend, currentBackend } from './backend';
export {
  type EngineSettings,
  type EngineSettingKey,
  type EngineSettingDefinition,
  ENGINE_SETTINGS,
  parseEngineSetting,
  engineSettingsFromEnv,
  engineBackendOptions,
} from './settings';
export { registerEngineGradients } from './kernels/gradients';
export { type WasmMatMul, useWasmMatMul, wasmMatMul } from './kernels/wasm-batch-matmul';
export { type NativeStatus, type NativeDtype, type MachineLimits, loadEngineAddon, measureMachineLimits, nativeMemory, setNativeThreads } from './native/addon';
export { NativeTensor, MappedFile } from './native/native-tensor';
export { registerWasmMissingKernels } from './kernels/wasm-missing-kernels';
export { type TokenBatch, type PadOptions, padBatch, validateTokenBatch } from './model/token-batch';
export { type DatumTokens, type DatumBatch, datumBatch } from './model/datum-batch';
export { FULL_FINE_TUNING_BYTES_PER_PARAMETER, fullFineTuningRefusal } from './model/model-size';
export { type TrainingPassBytes, type TrainingPassPlan, trainingPassBytes, scoringPassBytes, maxScoringRows, maxTrainingRows, preferredTrainingRows } from './model/memory-plan';
export { type WasmHeapUsage, wasmHeapUsage, WASM_HEAP_MAX } from './kernels/wasm-heap';
export { type ModelOptions, type ModelWeights, type ScoreOptions, type TokenScores, Model, DEFAULT_ADAPTER, VALUE_WEIGHT, VALUE_BIAS } from './model/transformer';
export {
  type LoraOptions,
  type LoraStateBytes,
  type TinkerLoraParts,
  LORA_TARGETS,
  LORA_HEAD_MODULE,
  TINKER_LORA_ALPHA,
  loraModules,
  loraStateBytes,
  loraTargetableModules,
  tinkerLoraTargets,
} from './model/lora';
export { AdapterSnapshot, type AdapterRef } from './model/lora-state';
export { KvCache, type KvLayer } from './model/kv-cache';
export { type LossCoefficients, type CurrentScores, crossEntropyCoefficients } from './train/logprobs';
// I/O half: tokenizers, chat templates, stop strings.
export { type Tokenizer, type EncodeOptions, type DecodeOptions } from './tokenizer/tokenizer';
export { ByteTokenizer, type ByteTokenizerOptions } from './tokenizer/byte-tokenizer';
export { HfTokenizer } from './tokenizer/hf-tokenizer';
export { byteToUnicode, unicodeToByte } from './tokenizer/byte-level-alphabet';
export { ChatTemplate, CHATML_TEMPLATE, type ChatMessage, type ChatRenderOptions } from './tokenizer/chat-template';
export { StopStringScanner, cutAtStop, findEarliestStop, stopStringHook, type StopMatch } from './tokenizer/stop-strings';
export { type SamplingOptions, type SampledSequence, sample } from './sampling/sampler';
export { nativeDecodeProfile, setNativeDecoding } from './sampling/native-decoding';
export { type TokenAlternative, topAlternatives, logSumExp } from './sampling/top-alternatives';
export { type PromptLogprobs, promptLogprobs } from './sampling/prompt-logprobs';
export { type TokenSamplingParams, type DrawnToken, drawToken } from './sampling/sample-token';
export { Prng, type PrngState } from './util/prng';
export { type TrainerOptions, type CoefficientSource, type MicroBatchResult, type SharedPrefixPasses, type StepOptions, type StepResult, Trainer } from './train/trainer';
export { type AdamWOptions, type AdamWState, type AdamWStepOptions, AdamW, defaultDecay } from './train/adamw';
export { writeOptimizerState, readOptimizerState } from './io/optimizer-state';
export { globalNorm, clipFactor } from './train/grad-clip';
export { type LrSchedule, warmupCosineSchedule, warmupConstantSchedule } from './train/lr-schedule';
// I/O half: Hugging Face model folders, PEFT LoRA adapters.
export { type SerializableTokenizer, isSerializableTokenizer } from './tokenizer/tokenizer';
export { tokenizerFromJson } from './tokenizer/tokenizer-from-json';
export {
  type HfTensorEntry,
  type HfModelDirInfo,
  type HfModelDir,
  type HfModelToSave,
  type SaveHfModelOptions,
  type SavedHfModel,
  SUPPORTED_ARCHITECTURES,
  DEFAULT_MAX_SHARD_BYTES,
  checkArchitecture,
  inspectHfModelDir,
  loadHfModelDir,
  mapHfModelWeights,
  saveHfModelDir,
} from './io/hf-model-dir';
export {
  type LoraAdapterConfig,
  type LoraFactors,
  type LoraAdapter,
  loraScaling,
  peftKey,
  isTargetModule,
  validateLoraAdapterConfig,
  validateLoraWeights,
  saveLoraAdapter,
  loadLoraAdapter,
} from './io/peft-adapter';
// I/O half: `opentinker model info|sample|score`.
export {
  type ModelInfoReport,
  type ModelSampleOptions,
  type ModelSampleReport,
  type ModelScoreOptions,
  type ModelScoreReport,
  type ScoredToken,
  type TokenRef,
  type CommandOutput,
  modelInfo,
  modelSample,
  modelScore,
  formatModelInfo,
  formatModelScore,
  registerModelCommands,
} from './cli/model.command';
