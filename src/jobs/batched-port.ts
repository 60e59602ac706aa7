/** The part of a `MessagePort` or `Worker` that {@link BatchedPort} posts through. */
interface Postable {
  postMessage(value: unknown, transfer?: readonly ArrayBuffer[]): void;
}

/**
 * Posts everything sent during one turn of the event loop as one message (an array), at the end of the
 * turn (`setImmediate`). Each message wakes the receiving thread, and on these VMs that wake-up cost
 * more than the copy: `postMessage` was a tenth of the API thread's time under list load, one per request.
 */
export class BatchedPort<T> {
  private items: T[] = [];
  private transfer: ArrayBuffer[] = [];
  private scheduled = false;

  constructor(private readonly port: Postable) {}

  /** Queues `item`; `transfer` (if any) is moved to the other thread with it. */
  send(item: T, transfer?: ArrayBuffer): void {
    this.items.push(item);
    if (transfer) this.transfer.push(transfer);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    const items = this.items;
    const transfer = this.transfer;
    this.items = [];
    this.transfer = [];
    this.scheduled = false;
    this.port.postMessage(items, transfer);
  }
}
