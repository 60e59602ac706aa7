/** What was kept of a program's output. */
export interface CappedOutput {
  /** At most `maxChars` characters (code points) from the start of the output, decoded as UTF-8. */
  text: string;
  /** Whether the output was longer than `text`. */
  truncated: boolean;
  /** Bytes the program wrote (counted up to the byte budget). */
  totalBytes: number;
  /** Whether the program wrote more than the byte budget (the runner stops it then). */
  overBudget: boolean;
}

/**
 * Collects a stream's output with a fixed memory bound: keeps the first bytes that can hold
 * `maxChars` characters, counts the rest, and reports when `maxBytes` is passed so the caller can stop
 * the writer. Never buffers more than about `4 * maxChars` bytes, however much is written.
 */
export class OutputCollector {
  private readonly keepBytes: number;
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;

  constructor(
    private readonly maxChars: number,
    private readonly maxBytes: number,
  ) {
    // A UTF-8 character is at most 4 bytes; one more character's worth tells "exactly full" from "more".
    this.keepBytes = 4 * (maxChars + 1);
  }

  /** Adds a chunk; returns false once the byte budget is exceeded. */
  push(chunk: Buffer): boolean {
    this.total += chunk.length;
    if (this.kept < this.keepBytes) {
      const take = Math.min(chunk.length, this.keepBytes - this.kept);
      this.chunks.push(take === chunk.length ? chunk : Buffer.from(chunk.subarray(0, take)));
      this.kept += take;
    }
    return this.total <= this.maxBytes;
  }

  get overBudget(): boolean {
    return this.total > this.maxBytes;
  }

  /** The kept text and whether anything was cut. */
  finish(): CappedOutput {
    const bytes = Buffer.concat(this.chunks, this.kept);
    let text = bytes.toString('utf8');
    const cutBytes = this.total > this.kept;
    // A multi-byte character split at the cut decodes as U+FFFD: drop it.
    if (cutBytes) text = text.replace(/\uFFFD+$/, '');
    const chars = Array.from(text);
    const truncated = cutBytes || chars.length > this.maxChars;
    if (chars.length > this.maxChars) text = chars.slice(0, this.maxChars).join('');
    return { text, truncated, totalBytes: this.total, overBudget: this.overBudget };
  }
}
