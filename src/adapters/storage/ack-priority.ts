// PGlite is one connection: every statement and transaction waits its turn in one FIFO queue, so
// a platform's ack (Slack wants its 200 within 3 s, and the steer row must be written first) can
// wait behind a burst of agent work. The gate below sits in front of PGlite and lets statements
// sent while a platform request is being acknowledged go first. Postgres has a pool and needs none.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';
import type { PGlite } from '@electric-sql/pglite';

const acking = new AsyncLocalStorage<{ open: boolean }>();

/**
 * Runs `handle` as ack-path work: database statements it (or work it starts) sends before
 * `response` has finished go ahead of other work. Work it starts that outlives the response
 * (an agent run woken by the message) queues normally from then on.
 */
export function whileAcknowledging<T>(response: ServerResponse, handle: () => T): T {
  const scope = { open: true };
  const close = () => void (scope.open = false);
  response.once('finish', close);
  response.once('close', close);
  return acking.run(scope, handle);
}

/** True inside whileAcknowledging, until its response has finished. */
export function onAckPath(): boolean {
  return acking.getStore()?.open === true;
}

/**
 * One operation at a time; waiting ack-path operations go before the others, each in arrival
 * order. Between two operations the event loop gets a turn: PGlite runs a statement synchronously
 * and resolves it in a microtask, so a queue of agent statements would otherwise run back to back
 * for a second or more without the HTTP server even reading the requests waiting to be acked.
 */
class PriorityGate {
  private busy = false;
  private readonly urgent: Array<() => void> = [];
  private readonly normal: Array<() => void> = [];

  async run<T>(urgent: boolean, operation: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => (urgent ? this.urgent : this.normal).push(resolve));
    this.busy = true;
    try {
      return await operation();
    } finally {
      if (this.urgent.length + this.normal.length === 0) this.busy = false;
      // setImmediate runs after the loop has polled for I/O: requests that arrived meanwhile
      // have queued their ack-path statements by then, and go first.
      else setImmediate(() => this.handOver());
    }
  }

  private handOver(): void {
    const next = this.urgent.shift() ?? this.normal.shift();
    if (next) next(); // stays busy
    else this.busy = false;
  }
}

/**
 * The PGlite methods Prisma's PGlite adapter calls (query, exec, transaction), each one passing the
 * gate. A transaction holds the gate until it ends, as PGlite's own lock does, so nothing that
 * was correct before can interleave now. Statements inside a transaction use its own handle.
 */
export function prioritizeAcks(pglite: PGlite): PGlite {
  const gate = new PriorityGate();
  const gated: Pick<PGlite, 'query' | 'exec' | 'transaction'> = {
    query: (...args) => gate.run(onAckPath(), () => pglite.query(...args)),
    exec: (...args) => gate.run(onAckPath(), () => pglite.exec(...args)),
    transaction: (callback) => gate.run(onAckPath(), () => pglite.transaction(callback)),
  };
  // Everything else (rarely touched by the adapter) is the instance's own.
  return new Proxy(pglite, {
    get: (target, property) => {
      if (property === 'query' || property === 'exec' || property === 'transaction') return gated[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
