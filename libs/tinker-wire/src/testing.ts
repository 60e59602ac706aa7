import { isTinkerWireError } from './errors';

/** The code of the TinkerWireError `fn` throws, undefined when it returns, a description when it throws anything else (specs only). */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return isTinkerWireError(e) ? e.code : `not a TinkerWireError: ${String(e)}`;
  }
  return undefined;
}
