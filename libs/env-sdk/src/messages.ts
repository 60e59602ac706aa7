import { z } from 'zod';

/** A chat message as the policy sees it (the OpenAPI component `EnvMessage`). */
export const Message = z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() }).meta({ id: 'EnvMessage' });
export type Message = z.output<typeof Message>;

/** JSON-serialisable values, for `info` and tasks that cross the HTTP protocol. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object: what `info`, configs sent over HTTP and `JsonValue` tasks are made of. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Any JSON value. What crosses the protocol was parsed from JSON, so only its place is checked, never
 * its content (a task may be large, and walking it would prove nothing).
 */
export const JsonValue = z.unknown() as unknown as z.ZodType<JsonValue>;
/** A JSON object (not an array, not null), its values unchecked as for {@link JsonValue}. */
export const JsonObject = z.record(z.string(), JsonValue) as unknown as z.ZodType<JsonObject>;
