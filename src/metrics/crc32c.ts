/**
 * CRC-32C (Castagnoli), the checksum of TensorFlow's record files, and its "masked" form, which
 * TFRecord framing stores so that a CRC of data that itself holds CRCs stays well distributed.
 */

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = TABLE[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** `((crc >> 15) | (crc << 17)) + 0xa282ead8`, as TensorFlow's `crc32c::Mask`. */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}
