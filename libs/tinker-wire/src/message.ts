import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { TinkerWireError } from './errors';

/**
 * Bytes parsed as one message of `schema`, unknown fields dropped (a newer SDK's additions are skipped,
 * and a body cannot make the parser keep arbitrary data). Any parse failure, including a stack
 * overflow from deeply nested unknown groups, becomes `TINKER_WIRE_BAD_PROTOBUF`.
 *
 * @example
 * ```ts
 * const output = decodeMessage(ForwardBackwardOutputSchema, bytes);
 * ```
 */
export function decodeMessage<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(schema, bytes, { readUnknownFields: false });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new TinkerWireError('TINKER_WIRE_BAD_PROTOBUF', `not a ${schema.name} message: ${why}`, 'body');
  }
}
