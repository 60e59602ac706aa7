/**
 * GPT-2's byte-to-unicode table, which byte-level BPE vocabularies (GPT-2, Llama 3, Qwen2) use to
 * write every byte as a printable character: printable Latin-1 bytes map to themselves, the other 68
 * bytes to U+0100 onwards (a space becomes `Ġ`, a newline `Ċ`).
 */
function build(): { byteToChar: string[]; charToByte: Map<string, number> } {
  const order: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) order.push(b);
  for (let b = 0xa1; b <= 0xac; b++) order.push(b);
  for (let b = 0xae; b <= 0xff; b++) order.push(b);
  const printable = new Set(order);
  const byteToChar = new Array<string>(256);
  for (const b of order) byteToChar[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.has(b)) {
      byteToChar[b] = String.fromCharCode(256 + n++);
    }
  }
  const charToByte = new Map(byteToChar.map((c, b) => [c, b]));
  return { byteToChar, charToByte };
}

const table = build();

/**
 * The printable character standing for a byte.
 *
 * @example
 * ```ts
 * byteToUnicode(0x20); // 'Ġ'
 * byteToUnicode(0x41); // 'A'
 * ```
 */
export function byteToUnicode(byte: number): string {
  return table.byteToChar[byte];
}

/** The byte a byte-level character stands for, or undefined. */
export function unicodeToByte(char: string): number | undefined {
  return table.charToByte.get(char);
}
