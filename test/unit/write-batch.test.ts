// Writes that arrive while the database is busy share the next statement (storage/write-batch.ts),
// and which failures split a batch (storage/storage-errors.ts).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isTransientDatabaseError, isWriteConflict } from '../../src/adapters/storage/storage-errors.js';
import { WriteBatch } from '../../src/adapters/storage/write-batch.js';

/** A store whose statements finish when the test says so; each call is recorded. */
function heldStore(fail: (inputs: string[]) => Error | undefined = () => undefined) {
  const calls: string[][] = [];
  const finishers: Array<() => void> = [];
  const store = (inputs: string[]) => {
    calls.push(inputs);
    return new Promise<string[]>((resolve, reject) => {
      finishers.push(() => {
        const error = fail(inputs);
        if (error) reject(error);
        else resolve(inputs.map((input) => `stored ${input}`));
      });
    });
  };
  const finishAll = async () => {
    while (finishers.length > 0) {
      finishers.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { calls, store, finishAll };
}

function pgError(code: string, message: string): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error');
  error.code = code;
  return error;
}

describe('WriteBatch', () => {
  it('sends a write at once when a slot is free, and the writes that arrive meanwhile together', async () => {
    const { calls, store, finishAll } = heldStore();
    const batch = new WriteBatch(store, { maxInFlight: 2, maxBatch: 3, splitAfter: () => true });
    const results = ['a', 'b', 'c', 'd', 'e', 'f'].map((input) => batch.add(input));
    // Two slots: a and b alone; the rest wait for a slot, three at most per statement.
    expect(calls).toEqual([['a'], ['b']]);
    await finishAll();
    expect(calls).toEqual([['a'], ['b'], ['c', 'd', 'e'], ['f']]);
    expect(await Promise.all(results)).toEqual(['stored a', 'stored b', 'stored c', 'stored d', 'stored e', 'stored f']);
  });

  it('keeps writes with the same key out of one statement', async () => {
    const { calls, store, finishAll } = heldStore();
    const batch = new WriteBatch(store, { maxInFlight: 1, maxBatch: 10, keyOf: (input: string) => input.slice(0, 1), splitAfter: () => true });
    const results = ['a1', 'b1', 'a2', 'c1', 'a3'].map((input) => batch.add(input));
    await finishAll();
    expect(calls).toEqual([['a1'], ['b1', 'a2', 'c1'], ['a3']]);
    expect(await Promise.all(results)).toEqual(['stored a1', 'stored b1', 'stored a2', 'stored c1', 'stored a3']);
  });

  it('holds a write back while a statement with its key runs, so a redelivery never overtakes the original', async () => {
    const { calls, store, finishAll } = heldStore();
    const batch = new WriteBatch(store, { maxInFlight: 3, maxBatch: 10, keyOf: (input: string) => input.slice(0, 1), splitAfter: () => true });
    const results = ['a1', 'a2', 'b1'].map((input) => batch.add(input));
    // A slot is free, but a1 is running: a2 waits for it; b1 goes past.
    expect(calls).toEqual([['a1'], ['b1']]);
    await finishAll();
    expect(calls).toEqual([['a1'], ['b1'], ['a2']]);
    expect(await Promise.all(results)).toEqual(['stored a1', 'stored a2', 'stored b1']);
  });

  it('stores each write of a failed batch alone when told to split, so one bad write fails by itself', async () => {
    const { calls, store, finishAll } = heldStore((inputs) => (inputs.includes('bad') ? new Error('refused') : undefined));
    const batch = new WriteBatch(store, { maxInFlight: 1, maxBatch: 10, splitAfter: () => true });
    const results = Promise.allSettled(['first', 'x', 'bad', 'y'].map((input) => batch.add(input)));
    await finishAll();
    await finishAll();
    expect(calls).toEqual([['first'], ['x', 'bad', 'y'], ['x'], ['bad'], ['y']]);
    expect((await results).map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  });

  it('fails every write of a batch at once when the failure would meet each of them', async () => {
    const { calls, store, finishAll } = heldStore((inputs) => (inputs.length > 1 ? new Error('database away') : undefined));
    const batch = new WriteBatch(store, { maxInFlight: 1, maxBatch: 10, splitAfter: () => false });
    const results = Promise.allSettled(['first', 'x', 'y'].map((input) => batch.add(input)));
    await finishAll();
    expect(calls).toEqual([['first'], ['x', 'y']]);
    expect((await results).map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });
});

describe('which database failures split a batch', () => {
  it('tells a conflict between statements from a database that is away', () => {
    const deadlock = pgError('40P01', 'deadlock detected');
    const serialization = pgError('40001', 'could not serialize access');
    const terminated = pgError('57P01', 'terminating connection due to administrator command');
    const refused = new Error('database "hippo" is not currently accepting connections');
    const tooLarge = pgError('54000', 'index row size 6016 exceeds btree version 4 maximum 2704');
    // Through a wrapper's cause, as Prisma and our stores carry them.
    const wrapped = new Error('database: deadlock detected', { cause: deadlock });
    expect([deadlock, serialization, wrapped].map(isWriteConflict)).toEqual([true, true, true]);
    expect([terminated, refused, tooLarge].map(isWriteConflict)).toEqual([false, false, false]);
    expect([deadlock, serialization, terminated, refused, wrapped].map(isTransientDatabaseError)).toEqual([true, true, true, true, true]);
    expect(isTransientDatabaseError(tooLarge)).toBe(false);
  });
});
