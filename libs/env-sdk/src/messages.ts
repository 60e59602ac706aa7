/** A chat message as the policy sees it. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** JSON-serialisable values, for `info` and tasks that cross the HTTP protocol. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object: what `info`, configs sent over HTTP and `JsonValue` tasks are made of. */
export type JsonObject = { [key: string]: JsonValue };
