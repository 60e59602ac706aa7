/**
 * Orders each training client's requests by `seq_id`. The SDK numbers a training client's requests 1,
 * 2, 3 … and submits them without waiting, a forward_backward cut into chunks as consecutive seq_ids
 * sent concurrently (first chunk last), so they reach the runner out of order. A lane holds what came
 * early until its turn. A request the API refused still used its seq_id (the API records a `skip` for
 * it); a seq_id that never arrives at all (a submission lost on the way) holds the lane for
 * `gapMs`, then the lane moves on to the next one it has.
 */
export interface LaneItem {
  seq: number;
}

export class RequestLane<T extends LaneItem> {
  /** The seq_id whose turn it is. */
  private next: number;
  private readonly waiting = new Map<number, T>();
  /** Since when the lane has held requests but not the one whose turn it is (ms), or null. */
  private stalledSince: number | null = null;

  constructor(firstSeq = 1) {
    this.next = firstSeq;
  }

  /** The seq_id whose turn it is. */
  get turn(): number {
    return this.next;
  }

  get size(): number {
    return this.waiting.size;
  }

  /**
   * Adds a request. One whose seq_id already had its turn (a late arrival after a gap was skipped, or a
   * repeat) is returned as refused; it is not queued.
   */
  add(item: T, now: number): 'queued' | 'late' | 'repeat' {
    if (item.seq < this.next) return 'late';
    if (this.waiting.has(item.seq)) return 'repeat';
    this.waiting.set(item.seq, item);
    if (item.seq !== this.next && this.stalledSince === null) this.stalledSince = now;
    return 'queued';
  }

  /**
   * The request whose turn it is, taken off the lane, or null. After `gapMs` without it while later
   * ones wait, the turn passes to the earliest waiting one (`skipped` says which seq_ids were given up).
   */
  take(now: number, gapMs: number): { item: T; skipped: number[] } | null {
    let skipped: number[] = [];
    if (!this.waiting.has(this.next) && this.waiting.size > 0 && this.stalledSince !== null && now - this.stalledSince >= gapMs) {
      const earliest = Math.min(...this.waiting.keys());
      skipped = Array.from({ length: earliest - this.next }, (_, i) => this.next + i);
      this.next = earliest;
    }
    const item = this.waiting.get(this.next);
    if (!item) return null;
    this.waiting.delete(this.next);
    this.next += 1;
    this.stalledSince = this.waiting.size > 0 && !this.waiting.has(this.next) ? now : null;
    return { item, skipped };
  }

  /** When a stalled lane gives up on its missing seq_id (ms), or null when it is not stalled. */
  gapDeadline(gapMs: number): number | null {
    return this.stalledSince === null || this.waiting.has(this.next) ? null : this.stalledSince + gapMs;
  }

  /** Empties the lane, returning what waited. */
  drain(): T[] {
    const items = [...this.waiting.values()];
    this.waiting.clear();
    this.stalledSince = null;
    return items;
  }
}
