// The embedded database's one connection: statements of a platform's ack go ahead of queued agent
// work, and a queue of statements leaves the event loop a turn between two of them.
import { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prioritizeAcks, whileAcknowledging } from '../../src/adapters/storage/ack-priority.js';

let pglite: PGlite;
beforeAll(async () => {
  // On disk, as the service opens it (an in-memory PGlite takes other turns of the event loop).
  pglite = await PGlite.create(join(await mkdtemp(join(tmpdir(), 'hippo-ack-')), 'pglite'));
});
afterAll(async () => {
  await pglite.close();
});

describe('prioritizeAcks', () => {
  it('runs an ack-path statement before agent statements queued earlier, and lets the event loop in between', async () => {
    const gated = prioritizeAcks(pglite);
    const order: string[] = [];
    const agentWork = Array.from({ length: 20 }, (_unused, index) => gated.query('SELECT $1::int AS n', [index]).then(() => void order.push(`agent ${index}`)));
    // An I/O turn scheduled now (a request arriving) must not wait for all twenty.
    setImmediate(() => order.push('event loop'));
    const response = new ServerResponse(new IncomingMessage(new Socket()));
    const ack = whileAcknowledging(response, () => gated.query('SELECT 1 AS acked').then(() => void order.push('ack')));
    await Promise.all([...agentWork, ack]);
    expect(order.indexOf('ack')).toBeLessThanOrEqual(2);
    expect(order.slice(0, 5)).toContain('event loop');
    expect(order.filter((entry) => entry.startsWith('agent'))).toEqual(Array.from({ length: 20 }, (_unused, index) => `agent ${index}`));
  });

  it('treats work that outlives the acknowledged response as ordinary work', async () => {
    const gated = prioritizeAcks(pglite);
    const response = new ServerResponse(new IncomingMessage(new Socket()));
    const order: string[] = [];
    const queuedBefore = Array.from({ length: 5 }, () => gated.query('SELECT 3').then(() => void order.push('agent')));
    const late = whileAcknowledging(response, () => {
      response.emit('finish'); // acked: what it starts now waits its turn
      return gated.query('SELECT 2').then(() => void order.push('after the ack'));
    });
    await Promise.all([late, ...queuedBefore]);
    expect(order.at(-1)).toBe('after the ack');
    // Transactions pass the same gate and keep their own handle inside.
    const total = await gated.transaction(async (tx) => (await tx.query<{ n: number }>('SELECT 40 + 2 AS n')).rows[0]?.n);
    expect(total).toBe(42);
  });
});
