// The chat outbox both adapters send through (adapters/chat/outbox.ts): order per session,
// Retry-After, superseded edits, claims across replicas, retention. Not on test/support/slack-rig.ts:
// nothing here speaks to Slack, so a test database and senders of its own are the whole set-up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PermanentPlatformError, type OutboxDelivery } from '../../src/adapters/chat/outbox-sender.js';
import { Outbox } from '../../src/adapters/chat/outbox.js';
import { OutboxStore } from '../../src/adapters/storage/outbox-store.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { PlatformError } from '../../src/core/errors.js';
import type { ThreadAddress } from '../../src/core/store.js';
import { createLogger } from '../../src/log.js';
import { createTestDatabase, recordStatements, type TestDatabase } from '../support/database.js';
import { arrive, startSession } from '../support/sessions.js';
import { waitFor } from '../support/wait.js';

let database: TestDatabase;
const log = createLogger('silent');
let threads = 0;

function slackThread(): ThreadAddress {
  threads += 1;
  return { platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: `${Date.now()}.${threads}` };
}

async function newSession(address = slackThread()): Promise<string> {
  return (await startSession(createPrismaStores(database.prisma), address, { title: 'outbox test' })).id;
}

async function statusOf(key: string) {
  return database.prisma.outboxItem.findUniqueOrThrow({ where: { idempotencyKey: key } });
}

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

describe('Outbox', () => {
  it('stores a key once and sends it once, recording the platform message id', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const sent: string[] = [];
    expect(await outbox.enqueue({ idempotencyKey: 'once:1', sessionId, platform: 'p-once', operation: 'post', payload: { text: 'hi' } })).toEqual({ inserted: true });
    expect(await outbox.enqueue({ idempotencyKey: 'once:1', sessionId, platform: 'p-once', operation: 'post', payload: { text: 'again' } })).toEqual({ inserted: false });
    const sender = outbox.startSender('p-once', async (item) => {
      sent.push(`${item.idempotencyKey}:${JSON.stringify(item.payload)}`);
      return { platformMessageId: '111.1' };
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('once:1')).status === 'sent' ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sender.stop();
    expect(sent).toEqual(['once:1:{"text":"hi"}']);
    expect(await outbox.messageIdOf('once:1')).toBe('111.1');
  });

  it('sends in order per session, honours Retry-After, and lets other sessions pass', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const [slow, fast] = [await newSession(), await newSession()];
    const order: string[] = [];
    let limited = false;
    const times = new Map<string, number>();
    for (const key of ['a1', 'a2']) await outbox.enqueue({ idempotencyKey: `order:${key}`, sessionId: slow, platform: 'p-order', operation: 'post', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'order:b1', sessionId: fast, platform: 'p-order', operation: 'post', payload: {} });
    const started = Date.now();
    const sender = outbox.startSender('p-order', async (item) => {
      if (item.idempotencyKey === 'order:a1' && !limited) {
        limited = true;
        throw new PlatformError('test', 'post', 'ratelimited', 400);
      }
      order.push(item.idempotencyKey);
      times.set(item.idempotencyKey, Date.now() - started);
      return { platformMessageId: item.idempotencyKey };
    }, { pollMs: 20 });
    await waitFor(() => (order.length === 3 ? true : undefined));
    await sender.stop();
    expect(order).toEqual(['order:b1', 'order:a1', 'order:a2']);
    expect(times.get('order:a1')).toBeGreaterThanOrEqual(350);
    expect((await statusOf('order:a1')).attempts).toBe(2);
  });

  it('resolves the target of an edit and sends only the newest pending edit of a card', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const deliveries: OutboxDelivery[] = [];
    await outbox.enqueue({ idempotencyKey: 'card:1', sessionId, platform: 'p-card', operation: 'post', payload: { n: 0 } });
    for (const n of [1, 2, 3]) {
      await outbox.enqueue({ idempotencyKey: `card:1:u${n}`, sessionId, platform: 'p-card', operation: 'update', targetKey: 'card:1', replacesPending: true, payload: { n } });
    }
    const sender = outbox.startSender('p-card', async (item) => {
      deliveries.push(item);
      return item.operation === 'post' ? { platformMessageId: '999.5' } : {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('card:1:u3')).status === 'sent' ? true : undefined));
    await sender.stop();
    expect(deliveries.map((item) => [item.idempotencyKey, item.targetMessageId])).toEqual([
      ['card:1', null],
      ['card:1:u3', '999.5'],
    ]);
    expect((await statusOf('card:1:u1')).status).toBe('superseded');
  });

  it('lets a final write supersede the pending edits of its target and an untried target, and sends it without one', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const deliveries: OutboxDelivery[] = [];
    await outbox.enqueue({ idempotencyKey: 'st:1', sessionId, platform: 'p-final', operation: 'stream', payload: { n: 0 } });
    await outbox.enqueue({ idempotencyKey: 'st:1:u1', sessionId, platform: 'p-final', operation: 'stream-update', targetKey: 'st:1', replacesPending: true, payload: { n: 1 } });
    await outbox.enqueue({ idempotencyKey: 'st:1:final', sessionId, platform: 'p-final', operation: 'finish', targetKey: 'st:1', supersedes: ['stream-update'], supersedesUntriedTarget: true, payload: { n: 2 } });
    expect((await statusOf('st:1')).status).toBe('superseded');
    expect((await statusOf('st:1:u1')).status).toBe('superseded');
    // A target that was tried is kept (it may have reached the platform): the final edits it.
    await outbox.enqueue({ idempotencyKey: 'st:2', sessionId, platform: 'p-final', operation: 'stream', payload: { n: 0 } });
    await database.prisma.outboxItem.update({ where: { idempotencyKey: 'st:2' }, data: { attempts: 1 } });
    await outbox.enqueue({ idempotencyKey: 'st:2:final', sessionId, platform: 'p-final', operation: 'finish', targetKey: 'st:2', supersedes: ['stream-update'], supersedesUntriedTarget: true, payload: { n: 3 } });
    expect((await statusOf('st:2')).status).toBe('pending');
    // An operation that is not optional still fails without its target.
    await outbox.enqueue({ idempotencyKey: 'st:3:edit', sessionId, platform: 'p-final', operation: 'stream-update', targetKey: 'st:never', payload: { n: 4 } });
    const sender = outbox.startSender('p-final', async (item) => {
      deliveries.push(item);
      return item.operation === 'stream' ? { platformMessageId: 'm2' } : {};
    }, { pollMs: 20, optionalTargetOperations: ['finish'] });
    await waitFor(async () => ((await statusOf('st:3:edit')).status === 'failed' ? true : undefined));
    await sender.stop();
    expect(deliveries.map((item) => [item.idempotencyKey, item.targetMessageId])).toEqual([['st:1:final', null], ['st:2', null], ['st:2:final', 'm2']]);
  });

  it('supersedes the pending edits of its target with `supersedes` alone, and an untried target with `supersedesUntriedTarget` alone', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    await outbox.enqueue({ idempotencyKey: 'sup:1', sessionId, platform: 'p-sup', operation: 'stream', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'sup:1:u1', sessionId, platform: 'p-sup', operation: 'stream-update', targetKey: 'sup:1', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'sup:1:final', sessionId, platform: 'p-sup', operation: 'finish', targetKey: 'sup:1', supersedes: ['stream-update'], payload: {} });
    expect([(await statusOf('sup:1')).status, (await statusOf('sup:1:u1')).status, (await statusOf('sup:1:final')).status]).toEqual(['pending', 'superseded', 'pending']);
    // And `supersedesUntriedTarget` alone drops the untried target.
    await outbox.enqueue({ idempotencyKey: 'sup:2', sessionId, platform: 'p-sup', operation: 'stream', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'sup:2:final', sessionId, platform: 'p-sup', operation: 'finish', targetKey: 'sup:2', supersedesUntriedTarget: true, payload: {} });
    expect((await statusOf('sup:2')).status).toBe('superseded');
  });

  it('stores several writes in order in one call, skipping keys that exist', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    await outbox.enqueue({ idempotencyKey: 'all:2', sessionId, platform: 'p-all', operation: 'post', payload: { n: 2 } });
    const entries = [1, 2, 3].map((n) => ({ idempotencyKey: `all:${n}`, sessionId, platform: 'p-all', operation: 'post', payload: { n: n * 10 } }));
    expect(await outbox.enqueueAll(entries)).toBe(2);
    const sent: string[] = [];
    const sender = outbox.startSender('p-all', async (item) => {
      sent.push(`${item.idempotencyKey}:${JSON.stringify(item.payload)}`);
      return {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('all:3')).status === 'sent' ? true : undefined));
    await sender.stop();
    expect(sent).toEqual(['all:2:{"n":2}', 'all:1:{"n":10}', 'all:3:{"n":30}']);
  });

  it('drops an untried item together with the write that cancels it, and keeps the undo of a sent one', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const react = (key: string) => ({ idempotencyKey: `react:${key}`, sessionId, platform: 'p-cancel', operation: 'react', payload: {} });
    const unreact = (key: string) => ({ idempotencyKey: `unreact:${key}`, sessionId, platform: 'p-cancel', operation: 'unreact', payload: {}, cancels: `react:${key}` });
    await outbox.enqueue(react('sent'));
    const sent: string[] = [];
    const sender = outbox.startSender('p-cancel', async (item) => {
      sent.push(item.idempotencyKey);
      return {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('react:sent')).status === 'sent' ? true : undefined));
    await sender.stop();
    await outbox.enqueue(react('unsent'));
    expect(await outbox.enqueueAll([unreact('unsent'), unreact('sent'), unreact('never-queued')])).toBe(2);
    expect((await statusOf('react:unsent')).status).toBe('superseded');
    expect(await database.prisma.outboxItem.count({ where: { idempotencyKey: 'unreact:unsent' } })).toBe(0);
    const again = outbox.startSender('p-cancel', async (item) => {
      sent.push(item.idempotencyKey);
      return {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('unreact:never-queued')).status === 'sent' ? true : undefined));
    await again.stop();
    expect(sent).toEqual(['react:sent', 'unreact:sent', 'unreact:never-queued']);
  });

  it('never holds items without a session back, while the later items of a session wait for its head', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    await outbox.enqueue({ idempotencyKey: 'free:blocked-head', sessionId, platform: 'p-free', operation: 'post', payload: {} });
    await database.prisma.outboxItem.update({ where: { idempotencyKey: 'free:blocked-head' }, data: { nextAttemptAt: new Date(Date.now() + 60_000) } });
    await outbox.enqueue({ idempotencyKey: 'free:behind', sessionId, platform: 'p-free', operation: 'post', payload: {} });
    for (const n of [1, 2]) await outbox.enqueue({ idempotencyKey: `free:none:${n}`, sessionId: null, platform: 'p-free', operation: 'post', payload: {} });
    const sent: string[] = [];
    const sender = outbox.startSender('p-free', async (item) => {
      sent.push(item.idempotencyKey);
      return {};
    }, { pollMs: 20 });
    await waitFor(() => (sent.length >= 2 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sender.stop();
    // Both session-less items go in one round; the session's second item waits for its head.
    expect(sent).toEqual(['free:none:1', 'free:none:2']);
    expect((await statusOf('free:behind')).status).toBe('pending');
  });

  it('stores a write tied to a steer only while that steer is still queued', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const address = slackThread();
    const sessionId = await newSession(address);
    const stores = createPrismaStores(database.prisma);
    await arrive(stores, address, { key: 'steer:queued', authorId: 'U1', text: 'hi' });
    await arrive(stores, address, { key: 'steer:gone', authorId: 'U1', text: 'hi' });
    expect(await stores.steers.withdraw('steer:gone')).toBe(true);
    const eyes = (key: string) => ({ idempotencyKey: `eyes:${key}`, sessionId, platform: 'p-steer', operation: 'react', payload: {}, whileSteerQueued: key });
    expect(await outbox.enqueue(eyes('steer:queued'))).toEqual({ inserted: true });
    expect(await outbox.enqueue(eyes('steer:gone'))).toEqual({ inserted: false });
    expect(await outbox.enqueue(eyes('steer:unknown'))).toEqual({ inserted: false });
  });

  it('stores writes enqueued together in one statement, each with its own outcome', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const address = slackThread();
    const sessionId = await newSession(address);
    const stores = createPrismaStores(database.prisma);
    for (const n of [1, 2, 3, 4]) await arrive(stores, address, { key: `burst:steer:${n}`, authorId: 'U1', text: `steer ${n}` });
    expect(await stores.steers.withdraw('burst:steer:3')).toBe(true);
    await outbox.enqueue({ idempotencyKey: 'burst:eyes:4', sessionId, platform: 'p-burst', operation: 'react', payload: {} });
    const eyes = (n: number) => ({ idempotencyKey: `burst:eyes:${n}`, sessionId, platform: 'p-burst', operation: 'react', payload: { n }, whileSteerQueued: `burst:steer:${n}` });
    const statements = recordStatements(database.pool!);
    const outcomes = await Promise.all([
      outbox.enqueue(eyes(1)), // goes at once; the rest wait for it and go together
      outbox.enqueue(eyes(2)),
      outbox.enqueue(eyes(3)), // its steer was withdrawn
      outbox.enqueue(eyes(4)), // its key exists
      outbox.enqueue(eyes(2)), // the same key again: it waits for the next statement
      outbox.enqueue({ idempotencyKey: 'burst:post', sessionId, platform: 'p-burst', operation: 'post', payload: { text: 'plain' } }),
    ]);
    statements.stop();
    expect(statements.texts).toHaveLength(3);
    expect(outcomes.map((outcome) => outcome.inserted)).toEqual([true, true, false, false, false, true]);
    const rows = await database.prisma.outboxItem.findMany({ where: { platform: 'p-burst' }, orderBy: { id: 'asc' } });
    expect(rows.map((row) => [row.idempotencyKey, row.payload])).toEqual([
      ['burst:eyes:4', {}], ['burst:eyes:1', { n: 1 }], ['burst:eyes:2', { n: 2 }], ['burst:post', { text: 'plain' }],
    ]);
  });

  it('fails a bad write of a batch alone and stores the others', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const post = (key: string, session: string) => outbox.enqueue({ idempotencyKey: key, sessionId: session, platform: 'p-split', operation: 'post', payload: {} });
    const outcomes = await Promise.allSettled([post('split:1', sessionId), post('split:2', sessionId), post('split:no-session', 'no-such-session'), post('split:3', sessionId)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const rows = await database.prisma.outboxItem.findMany({ where: { platform: 'p-split' }, orderBy: { id: 'asc' } });
    expect(rows.map((row) => row.idempotencyKey)).toEqual(['split:1', 'split:2', 'split:3']);
  });

  it('fails an item at once on a permanent error and moves on', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    const sent: string[] = [];
    await outbox.enqueue({ idempotencyKey: 'perm:1', sessionId, platform: 'p-perm', operation: 'post', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'perm:2', sessionId, platform: 'p-perm', operation: 'react', targetKey: 'perm:1', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'perm:3', sessionId, platform: 'p-perm', operation: 'post', payload: {} });
    const sender = outbox.startSender('p-perm', async (item) => {
      if (item.idempotencyKey === 'perm:1') throw new PermanentPlatformError('test', 'post', 'channel_not_found');
      sent.push(item.idempotencyKey);
      return {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('perm:3')).status === 'sent' ? true : undefined));
    await sender.stop();
    expect(sent).toEqual(['perm:3']);
    expect(await statusOf('perm:1')).toMatchObject({ status: 'failed', lastError: 'channel_not_found', attempts: 1 });
    expect(await statusOf('perm:2')).toMatchObject({ status: 'failed', lastError: 'target perm:1 was never sent' });
  });

  it('never sends a key twice when two replicas drain the same table', async () => {
    const outboxes = [new Outbox(new OutboxStore(database.prisma, database.pool), log), new Outbox(new OutboxStore(database.prisma, database.pool), log)];
    const sessions = await Promise.all(Array.from({ length: 5 }, () => newSession()));
    const sent: string[] = [];
    for (const [index, sessionId] of sessions.entries()) {
      for (let n = 0; n < 4; n += 1) {
        await outboxes[0]?.enqueue({ idempotencyKey: `race:${index}:${n}`, sessionId, platform: 'p-race', operation: 'post', payload: {} });
      }
    }
    const deliver = async (item: OutboxDelivery) => {
      sent.push(item.idempotencyKey);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return {};
    };
    const senders = outboxes.map((outbox) => outbox.startSender('p-race', deliver, { pollMs: 10 }));
    await waitFor(() => (sent.length >= 20 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await Promise.all(senders.map((sender) => sender.stop()));
    expect(sent).toHaveLength(20);
    expect(new Set(sent).size).toBe(20);
    for (const index of sessions.keys()) {
      expect(sent.filter((key) => key.startsWith(`race:${index}:`))).toEqual([0, 1, 2, 3].map((n) => `race:${index}:${n}`));
    }
  });

  it('takes over a claim whose lease expired (a sender that crashed mid-send)', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    await outbox.enqueue({ idempotencyKey: 'lease:1', sessionId, platform: 'p-lease', operation: 'post', payload: {} });
    await database.prisma.outboxItem.update({
      where: { idempotencyKey: 'lease:1' },
      data: { status: 'sending', attempts: 1, nextAttemptAt: new Date(Date.now() - 1_000) },
    });
    const sent: number[] = [];
    const sender = outbox.startSender('p-lease', async (item) => {
      sent.push(item.attempt);
      return {};
    }, { pollMs: 20 });
    await waitFor(async () => ((await statusOf('lease:1')).status === 'sent' ? true : undefined));
    await sender.stop();
    expect(sent).toEqual([2]);
  });

  it('deletes delivered items after the retention period, keeping failed ones for inspection', async () => {
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sessionId = await newSession();
    await outbox.enqueue({ idempotencyKey: 'old:1', sessionId, platform: 'p-old', operation: 'post', payload: {} });
    await outbox.enqueue({ idempotencyKey: 'old:2', sessionId, platform: 'p-old', operation: 'post', payload: {} });
    const sender = outbox.startSender('p-old', async (item) => {
      if (item.idempotencyKey === 'old:2') throw new PermanentPlatformError('test', 'post', 'is_archived');
      return {};
    }, { pollMs: 20, retentionMs: 0 });
    await waitFor(async () => ((await database.prisma.outboxItem.count({ where: { platform: 'p-old' } })) === 1 ? true : undefined));
    await sender.stop();
    expect(await statusOf('old:2')).toMatchObject({ status: 'failed' });
  });
});
