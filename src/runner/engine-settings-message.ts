import { ENGINE_SETTINGS, type EngineSettings } from '@opentinker/engine/settings';
import { z } from 'zod';

/**
 * The engine's settings as a process hands them to a child it starts (a worker to its job runners, the
 * API to its model servers): the engine's own definitions (`@opentinker/engine/settings`) as one zod
 * object, checked where the message arrives.
 */
export const EngineSettingsMessage = z
  .object(
    Object.fromEntries(
      ENGINE_SETTINGS.map((def) => [def.key, def.type === 'enum' ? z.enum(def.values as [string, ...string[]]) : z.number().int().min(def.min).max(def.max).optional()]),
    ),
  )
  .strict() as unknown as z.ZodType<EngineSettings>;
