/**
 * The few protobuf wire-format pieces the metric writers need (TensorBoard's `Event`, W&B's `Record`):
 * an encoder for varint, 64-bit, 32-bit and length-delimited fields, and a decoder of the same wire
 * types, which the writers' tests use to read back what they wrote. Field numbers and types are those
 * of the `.proto` files named where each message is built.
 */

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

/** Builds one message; nested messages are built with their own writer and added with {@link message}. */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  private tag(field: number, wire: number): void {
    this.varintRaw(BigInt((field << 3) | wire));
  }

  private varintRaw(value: bigint): void {
    // Negative int64 values are written as their two's complement (10 bytes), as protobuf does.
    let v = BigInt.asUintN(64, value);
    const bytes: number[] = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      bytes.push(byte);
    } while (v !== 0n);
    this.parts.push(Buffer.from(bytes));
  }

  /** int32, int64, uint*, bool and enum fields; zero is skipped (proto3 default). */
  varint(field: number, value: number | bigint | boolean): this {
    const v = typeof value === 'boolean' ? (value ? 1n : 0n) : BigInt(value);
    if (v === 0n) return this;
    this.tag(field, WIRE_VARINT);
    this.varintRaw(v);
    return this;
  }

  double(field: number, value: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(value);
    this.tag(field, WIRE_I64);
    this.parts.push(b);
    return this;
  }

  /** A `float` field: always written, since a metric of 0 is a value (a set oneof member is never skipped). */
  float(field: number, value: number): this {
    const b = Buffer.alloc(4);
    b.writeFloatLE(value);
    this.tag(field, WIRE_I32);
    this.parts.push(b);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LEN);
    this.varintRaw(BigInt(value.length));
    this.parts.push(Buffer.from(value));
    return this;
  }

  /** A string field; the empty string is skipped (proto3 default). */
  string(field: number, value: string): this {
    if (value === '') return this;
    return this.bytes(field, Buffer.from(value, 'utf8'));
  }

  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** One decoded field: varints as bigint, fixed64/fixed32 and length-delimited fields as their raw bytes. */
export interface ProtoField {
  field: number;
  wire: number;
  varint?: bigint;
  raw?: Buffer;
}

/** Splits a message into its fields, in order; throws on a truncated or malformed buffer. */
export function decodeFields(buf: Buffer): ProtoField[] {
  const out: ProtoField[] = [];
  let pos = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('protobuf: truncated varint');
      const byte = buf[pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new Error('protobuf: varint too long');
    }
  };
  const take = (n: number): Buffer => {
    if (pos + n > buf.length) throw new Error('protobuf: truncated field');
    const b = buf.subarray(pos, pos + n);
    pos += n;
    return b;
  };
  while (pos < buf.length) {
    const key = Number(readVarint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === WIRE_VARINT) out.push({ field, wire, varint: readVarint() });
    else if (wire === WIRE_I64) out.push({ field, wire, raw: take(8) });
    else if (wire === WIRE_I32) out.push({ field, wire, raw: take(4) });
    else if (wire === WIRE_LEN) out.push({ field, wire, raw: take(Number(readVarint())) });
    else throw new Error(`protobuf: unsupported wire type ${wire}`);
  }
  return out;
}
