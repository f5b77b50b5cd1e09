// Writes that arrive while the database is busy with earlier ones go together in one statement:
// under a burst, many acks or many 👀 cost one round trip and one commit instead of one each
// (bench/RESULTS.md, B4). With a free slot a write goes at once, alone, so a quiet process waits
// for nothing.

/** How a batch is stored: one output per input, in order. */
export type StoreBatch<In, Out> = (inputs: In[]) => Promise<Out[]>;

export interface WriteBatchOptions<In> {
  /** Statements in flight at once (each carrying a batch). */
  maxInFlight: number;
  /** Writes per statement. */
  maxBatch: number;
  /**
   * Writes with the same key never share a statement and never run at once: a redelivery waits
   * for the statement that carries the first delivery, so each output belongs to one input and a
   * late copy never overtakes the original (whose statement keeps its arrival order).
   */
  keyOf?: (input: In) => string;
  /**
   * After a batch of several failed: true to store each write alone (one bad write, a conflict
   * between concurrent batches), false when every write would fail the same (the database is away).
   */
  splitAfter: (error: unknown) => boolean;
}

interface Waiting<In, Out> {
  input: In;
  resolve(out: Out): void;
  reject(error: unknown): void;
}

/** Batches the writes given to `add` into statements of `store`. */
export class WriteBatch<In, Out> {
  private waiting: Array<Waiting<In, Out>> = [];
  private inFlight = 0;
  /** Keys of the writes in statements now running. */
  private readonly runningKeys = new Set<string>();

  constructor(
    private readonly store: StoreBatch<In, Out>,
    private readonly options: WriteBatchOptions<In>,
  ) {}

  /** Stores `input` with whatever else is waiting; resolves with its own output. */
  add(input: In): Promise<Out> {
    const result = new Promise<Out>((resolve, reject) => this.waiting.push({ input, resolve, reject }));
    this.pump();
    return result;
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.take();
      if (batch.length === 0) return; // every waiting write waits for its key's running statement
      const keys = this.keysOf(batch);
      for (const key of keys) this.runningKeys.add(key);
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        for (const key of keys) this.runningKeys.delete(key);
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private keysOf(batch: Array<Waiting<In, Out>>): string[] {
    const { keyOf } = this.options;
    return keyOf ? batch.map((write) => keyOf(write.input)) : [];
  }

  /** The next batch: waiting writes in arrival order, up to maxBatch, one per key, none whose key is running. */
  private take(): Array<Waiting<In, Out>> {
    const { keyOf, maxBatch } = this.options;
    if (!keyOf) return this.waiting.splice(0, maxBatch);
    const batch: Array<Waiting<In, Out>> = [];
    const rest: Array<Waiting<In, Out>> = [];
    const keys = new Set<string>();
    for (const write of this.waiting) {
      const key = keyOf(write.input);
      if (batch.length < maxBatch && !keys.has(key) && !this.runningKeys.has(key)) {
        keys.add(key);
        batch.push(write);
      } else rest.push(write);
    }
    this.waiting = rest;
    return batch;
  }

  private async send(batch: Array<Waiting<In, Out>>): Promise<void> {
    try {
      const outs = await this.store(batch.map((write) => write.input));
      batch.forEach((write, index) => {
        write.resolve(outs[index] as Out);
      });
    } catch (error) {
      if (batch.length === 1 || !this.options.splitAfter(error)) {
        for (const write of batch) write.reject(error);
        return;
      }
      // In arrival order, each alone: one bad write fails by itself.
      for (const write of batch) {
        await this.store([write.input]).then(([out]) => write.resolve(out as Out), write.reject);
      }
    }
  }
}
