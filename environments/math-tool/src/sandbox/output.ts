/** What was kept of a program's output. */
export interface CappedOutput {
  /**
   * The whole output decoded as UTF-8 when it fits in `maxChars` characters (code points); when it
   * does not, its first `headChars` characters.
   */
  text: string;
  /** When truncated: the last `tailChars` characters (an error message or a final result lives there). */
  tail: string;
  /** Whether the output was longer than what is kept. */
  truncated: boolean;
  /** Bytes the program wrote (counted up to the point it was stopped). */
  totalBytes: number;
  /** Whether the program wrote more than the byte budget (the runner stops it then). */
  overBudget: boolean;
}

/** How a character budget splits between the start and the end of a long output (3/4 and 1/4). */
export function splitBudget(maxChars: number): { headChars: number; tailChars: number } {
  const tailChars = Math.floor(maxChars / 4);
  return { headChars: maxChars - tailChars, tailChars };
}

/**
 * Collects a stream's output with a fixed memory bound: keeps the first and the last bytes that can
 * hold `maxChars` characters, counts the rest, and reports when `maxBytes` is passed so the caller can
 * stop the writer. Never holds more than about `8 * maxChars` bytes, however much is written.
 */
export class OutputCollector {
  private readonly keepBytes: number;
  private readonly headChunks: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
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
    if (this.headBytes < this.keepBytes) {
      const take = Math.min(chunk.length, this.keepBytes - this.headBytes);
      this.headChunks.push(take === chunk.length ? chunk : Buffer.from(chunk.subarray(0, take)));
      this.headBytes += take;
    }
    if (this.total > this.keepBytes) {
      const joined = this.tail.length === 0 ? chunk : Buffer.concat([this.tail, chunk]);
      this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - this.keepBytes)));
    }
    return this.total <= this.maxBytes;
  }

  get overBudget(): boolean {
    return this.total > this.maxBytes;
  }

  /** The kept text, cut to `maxChars` characters (start and end) when longer. */
  finish(): CappedOutput {
    const { headChars, tailChars } = splitBudget(this.maxChars);
    const base = { totalBytes: this.total, overBudget: this.overBudget };
    const head = Buffer.concat(this.headChunks, this.headBytes).toString('utf8');
    if (this.total <= this.keepBytes) {
      const chars = Array.from(head);
      if (chars.length <= this.maxChars) return { text: head, tail: '', truncated: false, ...base };
      return { text: chars.slice(0, headChars).join(''), tail: tailChars > 0 ? chars.slice(-tailChars).join('') : '', truncated: true, ...base };
    }
    // A multi-byte character split at a cut decodes as U+FFFD: drop it.
    const headText = Array.from(head.replace(/\uFFFD+$/, ''))
      .slice(0, headChars)
      .join('');
    const tailText =
      tailChars > 0
        ? Array.from(this.tail.toString('utf8').replace(/^\uFFFD+/, ''))
            .slice(-tailChars)
            .join('')
        : '';
    return { text: headText, tail: tailText, truncated: true, ...base };
  }
}
