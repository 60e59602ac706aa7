/** `@opentinker/env-sdk/testing`: the conformance kit every environment package runs. */
export { conformanceChecks, describeConformance, GARBAGE_ACTIONS } from './conformance';
export type { ConformanceCheck, ConformanceOptions } from './conformance';
