import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { ConflictError } from '../../src/core/errors.js';
import type { ChatMessage } from '../../src/core/messages.js';
import type { Accepted, DocumentAuthor, MemoryScope, SessionRecord, StoredMessage, Stores, ThreadAddress } from '../../src/core/store.js';
import { createLogger } from '../../src/log.js';
import { createTestDatabase, recordStatements, type TestDatabase } from '../support/database.js';

interface Harness {
  stores: Stores;
  database: Database;
}

let threadCounter = 0;

/** A thread no other test uses. */
function thread(overrides: Partial<ThreadAddress> = {}): ThreadAddress {
  threadCounter += 1;
  return { platform: 'slack', workspaceId: 'T1', channelId: `C${String(threadCounter)}`, threadKey: `${String(threadCounter)}.0001`, ...overrides };
}

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const toolResult = (id: string, content: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content });
const system = (content: string): ChatMessage => ({ role: 'system', content });

function assistantCalling(...ids: string[]): ChatMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'search', arguments: `{"query":"${id}"}` } })),
  };
}

function entry(seq: number, message: ChatMessage, flags: Partial<Pick<StoredMessage, 'isInit' | 'isMarker' | 'memoryRunId'>> = {}): StoredMessage {
  return { seq, message, isInit: false, isMarker: false, memoryRunId: null, ...flags };
}

function isStored(item: ChatMessage | StoredMessage): item is StoredMessage {
  return typeof item.isInit === 'boolean';
}

const marker = (seq: number): StoredMessage => entry(seq, user('<memory-checkpoint n="1"/>'), { isMarker: true });

function describeStores(getHarness: () => Harness): void {
  const stores = (): Stores => getHarness().stores;
  const prisma = () => getHarness().database.prisma;

  async function open(address = thread(), scope: MemoryScope = 'channel'): Promise<SessionRecord> {
    return (await stores().sessions.open(address, { title: 'a task', scope })).session;
  }

  /** Opens a session and appends `messages` at seq 0, 1, … of its first segment. */
  async function sessionWith(entries: Array<ChatMessage | StoredMessage>, address = thread()): Promise<{ session: SessionRecord; segmentId: string }> {
    const session = await open(address);
    const { segment } = await stores().context.load(session.id);
    for (const [seq, item] of entries.entries()) {
      await stores().context.append(segment.id, isStored(item) ? { ...item, seq } : entry(seq, item));
    }
    return { session, segmentId: segment.id };
  }

  describe('sessions', () => {
    it('opens a thread once and finds it again', async () => {
      const address = thread({ platform: 'discord', workspaceId: 'G1' });
      const first = await stores().sessions.open(address, { title: 'plan the launch', scope: 'channel', startedBy: 'U1' });
      const second = await stores().sessions.open(address, { title: 'other title', scope: 'channel', startedBy: 'U2' });
      expect(first.created).toBe(true);
      expect(second).toEqual({ session: first.session, created: false });
      expect(first.session).toMatchObject({ ...address, title: 'plan the launch', startedBy: 'U1', paused: false, pauseRequested: false, resetRequested: false });
      expect(await stores().sessions.find(address)).toEqual(first.session);
      expect(await stores().sessions.get(first.session.id)).toEqual(first.session);
      expect(await stores().sessions.find(thread())).toBeNull();
      const { segment, messages } = await stores().context.load(first.session.id);
      expect(segment).toMatchObject({ sessionId: first.session.id, ordinal: 1, lastStep: 0, carriedMessages: 0 });
      expect(messages).toEqual([]);
    });

    it('returns the same session to concurrent opens of one thread', async () => {
      const address = thread();
      const results = await Promise.all(Array.from({ length: 6 }, () => stores().sessions.open(address, { title: 't', scope: 'channel' })));
      expect(new Set(results.map((result) => result.session.id)).size).toBe(1);
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect(await prisma().segment.count({ where: { sessionId: results[0]?.session.id ?? '' } })).toBe(1);
    });

    it('shares a channel space between the threads of one channel only', async () => {
      const first = await open(thread({ channelId: 'C-shared', threadKey: '1.1' }));
      const second = await open(thread({ channelId: 'C-shared', threadKey: '2.2' }));
      const otherChannel = await open(thread({ channelId: 'C-other', threadKey: '1.1' }));
      const otherWorkspace = await open(thread({ workspaceId: 'T2', channelId: 'C-shared', threadKey: '1.1' }));
      expect(second.memorySpaceId).toBe(first.memorySpaceId);
      expect(otherChannel.memorySpaceId).not.toBe(first.memorySpaceId);
      expect(otherWorkspace.memorySpaceId).not.toBe(first.memorySpaceId);
      const space = await prisma().memorySpace.findUniqueOrThrow({ where: { id: first.memorySpaceId } });
      expect(space).toMatchObject({ platform: 'slack', workspaceId: 'T1', scope: 'channel', scopeKey: 'C-shared' });
    });

    it('gives each thread its own space under the thread scope and one per workspace under the workspace scope', async () => {
      const threadA = await open(thread({ channelId: 'C-t', threadKey: '1.1' }), 'thread');
      const threadB = await open(thread({ channelId: 'C-t', threadKey: '2.2' }), 'thread');
      expect(threadA.memorySpaceId).not.toBe(threadB.memorySpaceId);
      expect(await prisma().memorySpace.findUniqueOrThrow({ where: { id: threadA.memorySpaceId } })).toMatchObject({ scope: 'thread', scopeKey: 'C-t/1.1' });

      const channelA = await open(thread({ workspaceId: 'W-ws', channelId: 'C-a' }), 'workspace');
      const channelB = await open(thread({ workspaceId: 'W-ws', channelId: 'C-b' }), 'workspace');
      const elsewhere = await open(thread({ workspaceId: 'W-other', channelId: 'C-a' }), 'workspace');
      expect(channelA.memorySpaceId).toBe(channelB.memorySpaceId);
      expect(elsewhere.memorySpaceId).not.toBe(channelA.memorySpaceId);
      expect(await prisma().memorySpace.findUniqueOrThrow({ where: { id: channelA.memorySpaceId } })).toMatchObject({ scope: 'workspace', scopeKey: '' });
    });

    it('never lets a space cross people who did not share the conversation, whatever the scope', async () => {
      // Two people's DMs with Hippo (Discord: guild "@me") under the workspace scope.
      const dmAda = await open(thread({ platform: 'discord', workspaceId: '@me', channelId: 'D-ada', threadKey: 'D-ada', visibility: 'direct' }), 'workspace');
      const dmBob = await open(thread({ platform: 'discord', workspaceId: '@me', channelId: 'D-bob', threadKey: 'D-bob', visibility: 'direct' }), 'workspace');
      const dmAdaAgain = await open(thread({ platform: 'discord', workspaceId: '@me', channelId: 'D-ada', threadKey: 'D-ada-2', visibility: 'direct' }), 'workspace');
      expect(dmAda.memorySpaceId).not.toBe(dmBob.memorySpaceId);
      expect(dmAdaAgain.memorySpaceId).toBe(dmAda.memorySpaceId);
      // A private channel and a public one of the same workspace.
      const publicA = await open(thread({ workspaceId: 'W-priv', channelId: 'C-public-a' }), 'workspace');
      const publicB = await open(thread({ workspaceId: 'W-priv', channelId: 'C-public-b', visibility: 'public' }), 'workspace');
      const secret = await open(thread({ workspaceId: 'W-priv', channelId: 'C-secret', visibility: 'private' }), 'workspace');
      expect(publicA.memorySpaceId).toBe(publicB.memorySpaceId);
      expect(secret.memorySpaceId).not.toBe(publicA.memorySpaceId);
      // The channel scope keeps a DM to itself too, and the thread scope per thread.
      const dmChannelScope = await open(thread({ workspaceId: 'T1', channelId: 'D-carol', threadKey: '1.1', visibility: 'direct' }), 'channel');
      expect(await prisma().memorySpace.findUniqueOrThrow({ where: { id: dmChannelScope.memorySpaceId } })).toMatchObject({ scopeKey: 'dm:D-carol' });
    });

    it('sets only the flags it is given', async () => {
      const session = await open();
      await stores().sessions.setFlags(session.id, { pauseRequested: true });
      await stores().sessions.setFlags(session.id, { paused: true, pauseRequested: false });
      expect(await stores().sessions.get(session.id)).toMatchObject({ pauseRequested: false, paused: true, resetRequested: false });
    });
  });

  describe('context', () => {
    it('returns every message exactly as appended, with its flags', async () => {
      const init = system('You are Hippo.');
      const call: ChatMessage = { ...assistantCalling('call_1', 'call_2'), reasoning_content: 'think', provider_extra: { z: 1, a: [2] } };
      const { session } = await sessionWith([
        entry(0, init, { isInit: true }),
        user('hello'),
        call,
        toolResult('call_1', 'one'),
        entry(4, user('<memory-checkpoint n="1"/>'), { isMarker: true }),
      ]);
      const { messages } = await stores().context.load(session.id);
      expect(messages.map((message) => message.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(messages[0]).toEqual(entry(0, init, { isInit: true }));
      expect(JSON.stringify(messages[2]?.message)).toBe(JSON.stringify(call));
      expect(messages[4]).toMatchObject({ isMarker: true, isInit: false });
      const rows = await prisma().contextMessage.findMany({ where: { segment: { sessionId: session.id } }, orderBy: { seq: 'asc' } });
      expect(rows[2]).toMatchObject({ role: 'assistant', toolCallIds: ['call_1', 'call_2'], content: JSON.stringify(call) });
      expect(rows[2]?.searchText).toContain('search {"query":"call_1"}');
      expect(rows[3]).toMatchObject({ role: 'tool', toolCallId: 'call_1', searchText: 'one' });
    });

    it('refuses a second message at a taken position', async () => {
      const { segmentId } = await sessionWith([user('first')]);
      await expect(stores().context.append(segmentId, entry(0, user('second writer')))).rejects.toThrow();
      await stores().context.append(segmentId, entry(1, assistant('fine')));
    });

    it('writes a new segment\'s init messages in one statement; a retry finds them, another writer\'s are refused', async () => {
      const { session, segmentId } = await sessionWith([]);
      const init = [entry(0, system('You are Hippo.'), { isInit: true }), entry(1, user('MAIN.md: nothing yet'), { isInit: true })];
      await stores().context.appendInit(segmentId, init);
      await stores().context.appendInit(segmentId, init);
      await expect(stores().context.appendInit(segmentId, [init[0]!, entry(1, user('MAIN.md: other'), { isInit: true })])).rejects.toThrow(ConflictError);
      expect((await stores().context.load(session.id)).messages).toEqual(init);
    });

    it('writes an answer with its context size and its call\'s usage row together, and neither when its position is taken', async () => {
      const { session, segmentId } = await sessionWith([user('question')]);
      const usage = { sessionId: session.id, segmentId, memoryRunId: null, role: 'worker' as const, model: 'm', promptTokens: 321, cachedTokens: 300, completionTokens: 7, latencyMs: 12.4, error: null };
      await stores().context.append(segmentId, entry(1, assistant('answer')), { contextTokens: 321, usage });
      // A retry of that write (its answer lost with a connection) finds its own row: still one usage row.
      await stores().context.append(segmentId, entry(1, assistant('answer')), { contextTokens: 321, usage });
      // Another writer's answer at a taken position: refused, and its usage row with it.
      await expect(stores().context.append(segmentId, entry(1, assistant('other')), { contextTokens: 999, usage: { ...usage, promptTokens: 999 } })).rejects.toThrow(ConflictError);
      const calls = await prisma().modelCall.findMany({ where: { sessionId: session.id } });
      expect(calls.map((call) => [call.role, call.promptTokens, call.cachedTokens, call.completionTokens, call.latencyMs, call.segmentId])).toEqual([['worker', 321, 300, 7, 12, segmentId]]);
      expect((await stores().context.load(session.id)).segment).toMatchObject({ contextTokens: 321, contextTokensSeq: 1 });
    });

    it('stores started-call marks as it stores call ids: a NUL, which Postgres cannot hold, as U+FFFD', async () => {
      const { session, segmentId } = await sessionWith([user('question')]);
      await stores().context.append(segmentId, { ...entry(1, assistantCalling('a\u0000')), startedToolCalls: ['a\u0000'] });
      await stores().context.append(segmentId, { ...entry(2, assistantCalling('b\u0000')) });
      await stores().context.markToolCallStarted(segmentId, 2, 'b\u0000');
      await stores().context.markToolCallStarted(segmentId, 2, 'b\u0000');
      const { messages } = await stores().context.load(session.id);
      expect(messages.map((message) => message.startedToolCalls ?? [])).toEqual([[], ['a\uFFFD'], ['b\uFFFD']]);
    });

    it('loads the current segment\'s messages in position order, also after an earlier one was updated', async () => {
      const call = assistantCalling('c1');
      const { session, segmentId } = await sessionWith([system('init'), user('question'), call, user('more'), user('and more')]);
      // The update writes a new row version at the end of the table: storage order is not position order.
      await stores().context.markToolCallStarted(segmentId, 2, 'c1');
      await stores().context.markToolCallStarted(segmentId, 0, 'x');
      const { segment, messages } = await stores().context.load(session.id);
      expect(segment.id).toBe(segmentId);
      expect(messages.map((message) => message.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(messages[2]?.startedToolCalls).toEqual(['c1']);
      const empty = await sessionWith([]);
      expect((await stores().context.load(empty.session.id)).messages).toEqual([]);
      await expect(stores().context.load('no-such-session')).rejects.toThrow('session no-such-session does not exist');
    });

    it('updates the segment counters', async () => {
      const { session, segmentId } = await sessionWith([]);
      await stores().context.updateSegment(segmentId, { lastStep: 9, summarizerRounds: 2 });
      await stores().context.updateSegment(segmentId, { contextTokens: 1234 });
      expect((await stores().context.load(session.id)).segment).toMatchObject({ lastStep: 9, summarizerRounds: 2, deciderRounds: 0, contextTokens: 1234 });
    });

    it('starts the next segment with its messages and ends the current one', async () => {
      const { session, segmentId } = await sessionWith([system('old init'), user('old work')]);
      await stores().context.updateSegment(segmentId, { lastStep: 12 });
      await stores().sessions.setFlags(session.id, { resetRequested: true });
      const carried = { ...entry(1, assistant('carried answer')), awaitingDelivery: true };
      const next = await stores().context.startSegment(session.id, { fromSegmentId: segmentId, messages: [entry(0, system('new init'), { isInit: true }), carried], carriedMessages: 1, startTokens: 120, lastStep: 3 });
      expect(next).toMatchObject({ sessionId: session.id, ordinal: 2, lastStep: 3, summarizerRounds: 0, deciderRounds: 0, carriedMessages: 1, contextTokens: 120, contextTokensSeq: 2 });
      // One transaction: the pending reset is cleared with it, and a carried copy is never owed (R17).
      expect((await stores().sessions.get(session.id))?.resetRequested).toBe(false);
      expect((await stores().deliveries.pending(session.id)).answers).toEqual([]);
      // A second reset of the segment that already ended is refused (R8), and changes nothing.
      await expect(stores().context.startSegment(session.id, { fromSegmentId: segmentId, messages: [], carriedMessages: 0, startTokens: 1, lastStep: 0 })).rejects.toThrow('no longer current');
      expect(await prisma().segment.count({ where: { sessionId: session.id } })).toBe(2);
      const { segment, messages } = await stores().context.load(session.id);
      expect(segment).toEqual(next);
      expect(messages.map((message) => [message.seq, message.message.content, message.isInit])).toEqual([[0, 'new init', true], [1, 'carried answer', false]]);
      const previous = await prisma().segment.findUniqueOrThrow({ where: { id: segmentId } });
      expect(previous.endedAt).toBeInstanceOf(Date);
      expect(await prisma().contextMessage.count({ where: { segmentId } })).toBe(2);
    });
  });

  describe('steers', () => {
    const render = (steer: { authorName: string; text: string }): ChatMessage => user(`${steer.authorName}: ${steer.text}`);

    async function enqueue(sessionId: string, key: string, text: string) {
      return stores().steers.enqueue({ sessionId, platformMessageKey: key, authorId: 'U1', authorName: 'Ann', text });
    }

    const arriving = (address: ThreadAddress, key: string, text: string, extra: { start?: boolean; eventKey?: string } = {}) =>
      stores().steers.accept({
        address,
        ...(extra.start ? { start: { title: 'the task', scope: 'channel' as const, startedBy: 'U1' } } : {}),
        steer: { platformMessageKey: key, authorId: 'U1', authorName: 'Ann', text },
        ...(extra.eventKey ? { eventKey: extra.eventKey } : {}),
      });

    it('accepts a message in one write: the session started with its space and first segment, the message queued, the event recorded', async () => {
      const address = thread();
      const first = await arriving(address, `acc-${address.channelId}-1`, 'please help', { start: true, eventKey: `ev:${address.channelId}:1` });
      expect(first).toMatchObject({ inserted: true, created: true, notified: false });
      const session = first.session!;
      expect(session).toMatchObject({ ...address, title: 'the task', startedBy: 'U1', paused: false, resetRequested: false });
      expect(first.steer).toMatchObject({ sessionId: session.id, text: 'please help', authorName: 'Ann', status: 'queued' });
      expect(Math.abs(first.steer!.receivedAt.getTime() - Date.now())).toBeLessThan(60_000);
      // The same session as open() reads, with its first segment and a channel space.
      expect(await stores().sessions.find(address)).toEqual(session);
      expect(await stores().sessions.get(session.id)).toEqual(session);
      const { segment } = await stores().context.load(session.id);
      expect(segment).toMatchObject({ id: session.currentSegmentId, ordinal: 1 });
      expect(await prisma().memorySpace.findUniqueOrThrow({ where: { id: session.memorySpaceId } })).toMatchObject({ scope: 'channel', scopeKey: address.channelId });
      expect(await stores().events.wasProcessed(`ev:${address.channelId}:1`)).toBe(true);
      // A reply in the thread finds the session; a redelivery of it stores nothing twice.
      // The row as it is now (a runner loaded for the message starts from it): flags included.
      await prisma().session.update({ where: { id: session.id }, data: { paused: true, title: 'renamed' } });
      const reply = await arriving(address, `acc-${address.channelId}-2`, 'more', { eventKey: `ev:${address.channelId}:2` });
      expect(reply).toMatchObject({ session: { id: session.id, paused: true, title: 'renamed' }, inserted: true, created: false });
      expect(reply.session).toEqual(await stores().sessions.get(session.id));
      const again = await arriving(address, `acc-${address.channelId}-2`, 'more, redelivered', { start: true, eventKey: `ev:${address.channelId}:2` });
      expect(again).toMatchObject({ session: { id: session.id }, steer: reply.steer, inserted: false, created: false });
      expect(await prisma().steerMessage.count({ where: { sessionId: session.id } })).toBe(2);
      expect(await prisma().session.count({ where: { channelId: address.channelId } })).toBe(1);
    });

    it('stores no message in a thread without a session unless told to start one, and still records the event', async () => {
      const address = thread();
      const chatter = await arriving(address, `acc-${address.channelId}-x`, 'just chatting', { eventKey: `ev:${address.channelId}:x` });
      expect(chatter).toEqual({ session: null, steer: null, inserted: false, created: false, notified: false });
      expect(await stores().sessions.find(address)).toBeNull();
      expect(await prisma().steerMessage.count({ where: { platformMessageKey: `acc-${address.channelId}-x` } })).toBe(0);
      expect(await stores().events.wasProcessed(`ev:${address.channelId}:x`)).toBe(true);
    });

    it('starts one session when many messages open the same thread at once', async () => {
      const address = thread();
      const results = await Promise.all(Array.from({ length: 8 }, (_unused, index) => arriving(address, `race-${address.channelId}-${index}`, `m${index}`, { start: true })));
      expect(new Set(results.map((result) => result.session?.id)).size).toBe(1);
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect(results.every((result) => result.inserted)).toBe(true);
      expect(await prisma().session.count({ where: { channelId: address.channelId } })).toBe(1);
      expect(await prisma().segment.count({ where: { sessionId: results[0]!.session!.id } })).toBe(1);
      expect(await prisma().steerMessage.count({ where: { sessionId: results[0]!.session!.id } })).toBe(8);
    });

    it('ignores a duplicate delivery and keeps the first text', async () => {
      const session = await open();
      const first = await enqueue(session.id, `dup-${session.id}`, 'first');
      const again = await enqueue(session.id, `dup-${session.id}`, 'redelivered');
      expect(first.inserted).toBe(true);
      expect(again).toEqual({ steer: first.steer, inserted: false });
      expect(first.steer).toMatchObject({ status: 'queued', text: 'first', authorName: 'Ann' });
      expect(typeof first.steer.id).toBe('number');
      expect(await stores().steers.countQueued(session.id)).toBe(1);
    });

    it('moves queued steers into the segment in arrival order, once', async () => {
      const { session, segmentId } = await sessionWith([user('go'), assistant('done')]);
      await enqueue(session.id, `${session.id}-a`, 'one');
      await enqueue(session.id, `${session.id}-b`, 'two');
      await enqueue(session.id, `${session.id}-c`, 'three');
      await stores().steers.withdraw(`${session.id}-b`);

      const taken = await stores().context.takeSteers(session.id, segmentId, 2, render);
      expect(taken.map((steer) => [steer.text, steer.status])).toEqual([['one', 'taken'], ['three', 'taken']]);
      expect(await stores().context.takeSteers(session.id, segmentId, 4, render)).toEqual([]);
      expect(await stores().steers.countQueued(session.id)).toBe(0);
      const { messages } = await stores().context.load(session.id);
      expect(messages.slice(2).map((message) => [message.seq, message.message.content])).toEqual([[2, 'Ann: one'], [3, 'Ann: three']]);
    });

    it('takes nothing when the insert fails, leaving the steers queued', async () => {
      const { session, segmentId } = await sessionWith([user('go')]);
      await enqueue(session.id, `${session.id}-x`, 'late');
      await expect(stores().context.takeSteers(session.id, segmentId, 0, render)).rejects.toThrow();
      expect(await stores().steers.countQueued(session.id)).toBe(1);
    });

    it('hands each steer to one of two concurrent takers', async () => {
      const { session, segmentId } = await sessionWith([user('go')]);
      for (const key of ['a', 'b', 'c']) await enqueue(session.id, `${session.id}-${key}`, key);
      const results = await Promise.allSettled([
        stores().context.takeSteers(session.id, segmentId, 1, render),
        stores().context.takeSteers(session.id, segmentId, 1, render),
      ]);
      const taken = results.flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
      expect(taken.map((steer) => steer.text).sort()).toEqual(['a', 'b', 'c']);
      expect(await prisma().contextMessage.count({ where: { segmentId } })).toBe(4);
    });

    it('edits and withdraws a steer only while it is queued', async () => {
      const { session, segmentId } = await sessionWith([]);
      await enqueue(session.id, `${session.id}-e`, 'typo');
      expect(await stores().steers.edit(`${session.id}-e`, 'fixed')).toBe(true);
      const [steer] = await stores().context.takeSteers(session.id, segmentId, 0, render);
      expect(steer?.text).toBe('fixed');
      expect(await stores().steers.edit(`${session.id}-e`, 'too late')).toBe(false);
      expect(await stores().steers.withdraw(`${session.id}-e`)).toBe(false);
      expect(await stores().steers.edit('no-such-key', 'x')).toBe(false);
      await enqueue(session.id, `${session.id}-w`, 'never mind');
      expect(await stores().steers.withdraw(`${session.id}-w`)).toBe(true);
      expect(await stores().steers.edit(`${session.id}-w`, 'changed')).toBe(false);
      expect(await stores().steers.countQueued(session.id)).toBe(0);
    });

    it('records a platform event once', async () => {
      expect(await stores().events.markProcessed(`slack:Ev-${String(threadCounter)}`)).toBe(true);
      expect(await stores().events.markProcessed(`slack:Ev-${String(threadCounter)}`)).toBe(false);
    });
  });

  describe('deliveries', () => {
    it('finds what a session still owes its thread, each kind on its own, and nothing when nothing is owed', async () => {
      const { session, segmentId } = await sessionWith([user('question')]);
      const nothing = { answers: [], memoryRuns: [], resets: [] };
      expect(await stores().deliveries.pending(session.id)).toEqual(nothing);
      const run = await stores().memoryRuns.start({ sessionId: session.id, segmentId, role: 'summarizer', round: 1, forkPoint: 0 });
      await stores().memoryRuns.finish(run.id, { status: 'succeeded', transcript: [], usage: { promptTokens: 1, cachedTokens: 0, completionTokens: 1 }, awaitingDelivery: true });
      expect((await stores().deliveries.pending(session.id)).memoryRuns.map((owed) => owed.memoryRunId)).toEqual([run.id]);
      await stores().deliveries.markMemoryRun(run.id);
      expect(await stores().deliveries.pending(session.id)).toEqual(nothing);
      await stores().context.append(segmentId, { ...entry(1, assistant('the answer')), awaitingDelivery: true });
      expect((await stores().deliveries.pending(session.id)).answers).toEqual([{ segmentId, seq: 1, text: 'the answer' }]);
      await stores().deliveries.markAnswer(segmentId, 1);
      const next = await stores().context.startSegment(session.id, { fromSegmentId: segmentId, messages: [], carriedMessages: 0, startTokens: 10, lastStep: 0 });
      expect((await stores().deliveries.pending(session.id)).resets.map((owed) => owed.segmentId)).toEqual([next.id]);
      await stores().deliveries.markReset(next.id);
      expect(await stores().deliveries.pending(session.id)).toEqual(nothing);
    });
  });

  describe('withBacklog', () => {
    it('lists sessions with queued steers or an unfinished tail, except paused ones', async () => {
      const init = entry(0, system('init'), { isInit: true });
      const steered = await sessionWith([init, user('hi'), assistant('hello')]);
      await stores().steers.enqueue({ sessionId: steered.session.id, platformMessageKey: `bl-${steered.session.id}`, authorId: '', authorName: '', text: 'more' });
      const pendingCalls = await sessionWith([init, user('go'), assistantCalling('c1', 'c2')]);
      const partial = await sessionWith([init, user('go'), assistantCalling('c1', 'c2'), toolResult('c1', 'r1')]);
      const unanswered = await sessionWith([init, user('go'), assistant('ok'), user('and now?')]);
      const markerAfterTool = await sessionWith([init, user('go'), assistantCalling('c1'), toolResult('c1', 'r1'), marker(4)]);
      const finished = await sessionWith([init, user('go'), assistantCalling('c1'), toolResult('c1', 'r1'), assistant('done')]);
      const finishedThenMarker = await sessionWith([init, user('go'), assistant('done'), marker(3)]);
      const initOnly = await sessionWith([init]);
      const paused = await sessionWith([init, user('go')]);
      await stores().sessions.setFlags(paused.session.id, { paused: true });
      const pausedSteered = await sessionWith([init]);
      await stores().steers.enqueue({ sessionId: pausedSteered.session.id, platformMessageKey: `bl-${pausedSteered.session.id}`, authorId: '', authorName: '', text: 'x' });
      await stores().sessions.setFlags(pausedSteered.session.id, { paused: true });
      const resetting = await sessionWith([init, user('go'), assistant('done')]);
      await stores().sessions.setFlags(resetting.session.id, { resetRequested: true, paused: true });

      const backlog = new Set(await stores().sessions.withBacklog());
      const has = (item: { session: SessionRecord }): boolean => backlog.has(item.session.id);
      expect({
        steered: has(steered),
        pendingCalls: has(pendingCalls),
        partial: has(partial),
        unanswered: has(unanswered),
        markerAfterTool: has(markerAfterTool),
        resetting: has(resetting),
        finished: has(finished),
        finishedThenMarker: has(finishedThenMarker),
        initOnly: has(initOnly),
        paused: has(paused),
        pausedSteered: has(pausedSteered),
      }).toEqual({
        steered: true,
        pendingCalls: true,
        partial: true,
        unanswered: true,
        markerAfterTool: true,
        resetting: true,
        finished: false,
        finishedThenMarker: false,
        initOnly: false,
        paused: false,
        pausedSteered: false,
      });
    });

    it('looks only at the current segment', async () => {
      const { session, segmentId } = await sessionWith([user('go')]);
      await stores().context.startSegment(session.id, { fromSegmentId: segmentId, messages: [entry(0, system('init'), { isInit: true }), entry(1, assistant('all done'))], carriedMessages: 1, startTokens: 120, lastStep: 0 });
      expect(await stores().sessions.withBacklog()).not.toContain(session.id);
    });
  });

  describe('searchOriginals', () => {
    it('finds words in earlier segments of the space, not the current segment, markers, init or other spaces', async () => {
      const channel = `C-search-${String(threadCounter)}`;
      const a = await sessionWith(
        [entry(0, system('init mentions zebra'), { isInit: true }), user('please plan the zebra migration for Tuesday'), entry(2, user('<checkpoint zebra/>'), { isMarker: true })],
        thread({ channelId: channel }),
      );
      const current = await stores().context.startSegment(a.session.id, { fromSegmentId: a.segmentId, messages: [entry(0, user('zebra in the current segment'))], carriedMessages: 1, startTokens: 120, lastStep: 0 });
      const b = await sessionWith([assistant(`${'filler words here. '.repeat(60)}the zebras are striped ${'more filler text. '.repeat(60)}`)], thread({ channelId: channel }));
      await sessionWith([user('zebra in another channel')], thread());

      const hits = await stores().context.searchOriginals(a.session.memorySpaceId, 'zebra', current.id, 10, 'test');
      expect(hits.map((hit) => [hit.sessionId, hit.segmentOrdinal, hit.seq, hit.role]).sort()).toEqual(
        [[a.session.id, 1, 1, 'user'], [b.session.id, 1, 0, 'assistant']].sort(),
      );
      for (const hit of hits) {
        expect(hit.snippet).toMatch(/zebra/i);
        expect(hit.snippet.length).toBeLessThanOrEqual(300);
      }
      const withoutStripes = await stores().context.searchOriginals(a.session.memorySpaceId, 'zebra -striped', current.id, 10, 'test');
      expect(withoutStripes.map((hit) => hit.sessionId)).toEqual([a.session.id]);
      expect(await stores().context.searchOriginals(a.session.memorySpaceId, 'zebra', current.id, 1, 'test')).toHaveLength(1);
      expect(await stores().context.searchOriginals(a.session.memorySpaceId, '   ', current.id, 10, 'test')).toEqual([]);
      expect(await stores().context.searchOriginals(a.session.memorySpaceId, 'giraffe', current.id, 10, 'test')).toEqual([]);
      // Any language, no stemming to depend on: words are prefixes ("Tür" finds "Türen").
      await sessionWith([user('Bitte die Türen im Zebra-Gehege prüfen')], thread({ channelId: channel }));
      expect((await stores().context.searchOriginals(a.session.memorySpaceId, 'Tür', current.id, 10, 'test')).map((hit) => hit.role)).toEqual(['user']);
    });
  });

  describe('documents', () => {
    const worker = (sessionId: string): DocumentAuthor => ({ kind: 'worker', sessionId });
    const person: DocumentAuthor = { kind: 'person', userId: 'U7', name: 'Ada' };

    async function space(): Promise<SessionRecord> {
      return open(thread(), 'channel');
    }

    it('writes with compare-and-set and names both versions on a conflict', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      const created = await stores().documents.write(key, 'v1', person, 0);
      expect(created).toMatchObject({ ...key, version: 1, content: 'v1', deleted: false });
      expect((await stores().documents.write(key, 'v2', person, 1)).version).toBe(2);
      const stale = stores().documents.write(key, 'lost edit', person, 1);
      await expect(stale).rejects.toThrow(ConflictError);
      await expect(stale).rejects.toThrow('MAIN.md changed since you read it (you read version 1, it is now version 2); read it again and reapply your edit');
      await expect(stores().documents.write(key, 'again', person, 0)).rejects.toThrow(/MAIN\.md was created since you read it/);
      await expect(stores().documents.write({ ...key, path: 'NEW.md' }, 'x', person, 3)).rejects.toThrow(ConflictError);
      expect((await stores().documents.write(key, 'unchecked', { kind: 'system' }, undefined)).version).toBe(3);
      expect(await stores().documents.read(key)).toMatchObject({ version: 3, content: 'unchecked' });
    });

    it('creates a document that never existed in one statement, with its first version, and only then', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      const created = await stores().documents.create(key, '# Main', { kind: 'system' });
      expect(created).toMatchObject({ ...key, version: 1, content: '# Main', deleted: false, pinnedLines: [] });
      expect(await stores().documents.read(key)).toEqual(created);
      const [first] = await stores().documents.versions(created!.id);
      expect(first).toMatchObject({ version: 1, content: '# Main', author: { kind: 'system' } });
      // A second creator, and one after a person removed the document: no-ops, history intact.
      expect(await stores().documents.create(key, 'other', person)).toBeNull();
      await stores().documents.remove(key, person, 1);
      expect(await stores().documents.create(key, 'again', person)).toBeNull();
      expect((await stores().documents.versions(created!.id)).map((version) => version.version)).toEqual([2, 1]);
      // Two concurrent creators: one wins.
      const other = { ...key, path: 'NOTES.md' };
      const both = await Promise.all([stores().documents.create(other, 'A', person), stores().documents.create(other, 'B', person)]);
      expect(both.filter((record) => record !== null)).toHaveLength(1);
    });

    it('reads several documents in one go, in the order asked, absent and deleted ones as null', async () => {
      const session = await space();
      const main = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      const todo = { spaceId: session.memorySpaceId, sessionKey: session.id, path: 'TODO.md' };
      const gone = { ...main, path: 'GONE.md' };
      await stores().documents.write(todo, '- [ ] ship', person, 0);
      await stores().documents.write(main, 'main', person, 0);
      await stores().documents.write(gone, 'x', person, 0);
      await stores().documents.remove(gone, person, 1);
      const read = await stores().documents.readMany([todo, { ...main, path: 'NONE.md' }, gone, main, { ...todo, sessionKey: 'another-session' }]);
      expect(read.map((record) => record?.content ?? null)).toEqual(['- [ ] ship', null, null, 'main', null]);
      expect(await stores().documents.readMany([])).toEqual([]);
    });

    it("writes a person's reviewed change and its event together; of two made from one read, one wins and the other writes nothing", async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      await stores().documents.write(key, 'base\n- pinned\n- gone\n', person, 0);
      const pinned = await stores().documents.pin((await stores().documents.read(key))!.id, '- gone');
      const read = await stores().documents.pin(pinned.id, '- pinned');
      const event = (text: string) => ({ kind: 'edit' as const, authorId: 'U7', authorName: 'Ada\u0000', text, sessionId: session.id });
      const author = { kind: 'person' as const, userId: 'U7', name: 'Ada', sessionId: session.id };
      const results = await Promise.allSettled([
        stores().documents.writeReviewed(read, 'A\n- pinned\n', author, 'edited by Ada', event('- base\n+ A')),
        stores().documents.writeReviewed(read, 'B\u0000\n- pinned\n', author, 'edited by Ada', event('- base\n+ B')),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
      const rejected = results.find((result) => result.status === 'rejected');
      expect(rejected?.status === 'rejected' && rejected.reason).toBeInstanceOf(ConflictError);
      const saved = (await stores().documents.read(key))!;
      expect(saved).toMatchObject({ version: 2, pinnedLines: ['- pinned'] });
      expect(['A\n- pinned\n', 'B\uFFFD\n- pinned\n']).toContain(saved.content);
      const [version] = await stores().documents.versions(saved.id);
      expect(version).toMatchObject({ version: 2, content: saved.content, author, reason: 'edited by Ada' });
      const { events } = await stores().reviews.unseen(session.memorySpaceId, 10);
      expect(events).toMatchObject([{ kind: 'edit', documentPath: 'MAIN.md', authorName: 'Ada\uFFFD', text: saved.content.startsWith('A') ? '- base\n+ A' : '- base\n+ B', sessionId: session.id }]);
    });

    it('lets one of two writers that read the same version win', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      await stores().documents.write(key, 'base', person, 0);
      const results = await Promise.allSettled([
        stores().documents.write(key, 'edit A', person, 1),
        stores().documents.write(key, 'edit B', person, 1),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
      const rejected = results.find((result) => result.status === 'rejected');
      expect(rejected?.status === 'rejected' && rejected.reason).toBeInstanceOf(ConflictError);
      expect((await stores().documents.read(key))?.version).toBe(2);
    });

    it('lets one of two creators win and stacks unchecked creations as versions', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'NEW.md' };
      const checked = await Promise.allSettled([
        stores().documents.write(key, 'A', person, 0),
        stores().documents.write(key, 'B', person, 0),
      ]);
      expect(checked.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);

      const other = { ...key, path: 'OTHER.md' };
      const unchecked = await Promise.all([stores().documents.write(other, 'A', person), stores().documents.write(other, 'B', person)]);
      expect(unchecked.map((doc) => doc.version).sort()).toEqual([1, 2]);
      expect(new Set(unchecked.map((doc) => doc.id)).size).toBe(1);
    });

    it('records every version with its author, newest first', async () => {
      const session = await space();
      const run = await startRun(session);
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'notes/people.md' };
      const doc = await stores().documents.write(key, 'one', { kind: 'summarizer', memoryRunId: run.id });
      await stores().documents.write(key, 'two', worker(session.id));
      await stores().documents.write(key, 'three', person);
      await stores().documents.write(key, 'four', { kind: 'system' });
      const versions = await stores().documents.versions(doc.id);
      expect(versions.map((version) => [version.version, version.content, version.author])).toEqual([
        [4, 'four', { kind: 'system' }],
        [3, 'three', person],
        [2, 'two', worker(session.id)],
        [1, 'one', { kind: 'summarizer', memoryRunId: run.id }],
      ]);
      expect(versions[0]).toMatchObject({ documentId: doc.id, path: 'notes/people.md', deleted: false, reviewedBy: null });
    });

    it('removes a document as a new version and continues its numbers when it is written again', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'OLD.md' };
      await stores().documents.write(key, 'old', person, 0);
      await expect(stores().documents.remove(key, person, 7)).rejects.toThrow(ConflictError);
      const removed = await stores().documents.remove(key, person, 1);
      expect(removed).toMatchObject({ version: 2, deleted: true });
      expect(await stores().documents.read(key)).toBeNull();
      expect(await stores().documents.list(session.memorySpaceId, session.id)).toEqual([]);
      await expect(stores().documents.remove(key, person)).rejects.toThrow(/OLD\.md does not exist/);
      expect(await stores().documents.write(key, 'reborn', person, 0)).toMatchObject({ version: 3, content: 'reborn', deleted: false });
    });

    it('reverts a version by restoring the one before it as a new version', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      const doc = await stores().documents.write(key, 'good', person);
      await stores().documents.write(key, 'bad', worker(session.id));
      const reverted = await stores().documents.revert(doc.id, 2, person);
      expect(reverted).toMatchObject({ version: 3, content: 'good', deleted: false });
      const [latest] = await stores().documents.versions(doc.id);
      expect(latest).toMatchObject({ version: 3, content: 'good', author: person });

      const removed = await stores().documents.remove(key, person);
      expect(await stores().documents.revert(doc.id, removed.version, person)).toMatchObject({ version: 5, content: 'good', deleted: false });
    });

    it('reverts a memory run per document, never discarding a later change unseen (R13)', async () => {
      const session = await space();
      const runA = await startRun(session);
      const runB = await startRun(session);
      const byA: DocumentAuthor = { kind: 'summarizer', memoryRunId: runA.id };
      const byB: DocumentAuthor = { kind: 'summarizer', memoryRunId: runB.id };
      const main = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
      const notes = { spaceId: session.memorySpaceId, sessionKey: '', path: 'a-notes.md' };
      await stores().documents.write(main, 'before', person);
      await stores().documents.write(main, 'by A', byA);
      await stores().documents.write(main, 'by A, twice', byA);
      await stores().documents.write(notes, 'new by A', byA);
      const mainByB = await stores().documents.write(main, 'by A, twice, then B', byB, undefined, 'added the deadline');

      const changes = await stores().documents.runChanges(runA.id);
      expect(changes.map((change) => [change.path, change.firstVersion, change.lastVersion, change.currentVersion, change.later.map((version) => version.version), change.reverted])).toEqual([
        ['a-notes.md', 1, 1, 1, [], false],
        ['MAIN.md', 2, 3, 4, [4], false],
      ]);
      expect(changes[1]!.later[0]).toMatchObject({ author: byB, reason: 'added the deadline' });
      // A revert naming a version that is no longer current writes nothing at all.
      await expect(stores().documents.revertRunDocuments(runA.id, [{ documentId: changes[0]!.documentId, expectedVersion: 1 }, { documentId: mainByB.id, expectedVersion: 3 }], person)).rejects.toThrow('MAIN.md changed again');
      expect(await stores().documents.read(notes)).toMatchObject({ content: 'new by A' });
      // The clean document alone; MAIN.md only when the person chose to undo B too.
      await stores().documents.revertRunDocuments(runA.id, [{ documentId: changes[0]!.documentId, expectedVersion: 1 }], person);
      expect(await stores().documents.read(notes)).toBeNull();
      expect(await stores().documents.read(main)).toMatchObject({ content: 'by A, twice, then B' });
      expect(await stores().documents.latestRevertibleRun(session.memorySpaceId)).toMatchObject({ memoryRunId: runB.id });
      await stores().documents.revertRunDocuments(runA.id, [{ documentId: mainByB.id, expectedVersion: 4 }], person);
      expect(await stores().documents.read(main)).toMatchObject({ content: 'before', version: 5 });
      const after = await stores().documents.runChanges(runA.id);
      expect(after.map((change) => change.reverted)).toEqual([true, true]);
      const [latest] = await stores().documents.versions(mainByB.id);
      expect(latest).toMatchObject({ version: 5, author: person, revertedRunId: runA.id });
      // Nothing of run A is left to revert; run B's change was undone with it, so neither is latest.
      expect(await stores().documents.latestRevertibleRun(session.memorySpaceId)).toMatchObject({ memoryRunId: runB.id });
      // A revert is itself a version and can be undone.
      expect(await stores().documents.revert(mainByB.id, 5, person)).toMatchObject({ version: 6, content: 'by A, twice, then B' });
    });

    it('stores a document a model wrote with NUL characters (Postgres cannot hold them) instead of failing the write', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'echo.md' };
      const written = await stores().documents.write(key, 'from a page: \u0000 end', person, undefined, 'copied \u0000');
      expect(written.content).toBe('from a page: \uFFFD end');
      expect((await stores().documents.versions(written.id))[0]).toMatchObject({ content: 'from a page: \uFFFD end', reason: 'copied \uFFFD' });
    });

    it('moves a document in one transaction, refusing an existing target', async () => {
      const session = await space();
      const from = { spaceId: session.memorySpaceId, sessionKey: '', path: 'old.md' };
      const to = { spaceId: session.memorySpaceId, sessionKey: '', path: 'new.md' };
      const taken = { spaceId: session.memorySpaceId, sessionKey: '', path: 'taken.md' };
      await stores().documents.write(from, 'content', person);
      await stores().documents.write(taken, 'other', person);
      await expect(stores().documents.move(from, taken, person)).rejects.toThrow('already exists');
      expect(await stores().documents.read(from)).toMatchObject({ content: 'content' });
      expect(await stores().documents.move(from, to, person)).toMatchObject({ path: 'new.md', content: 'content' });
      expect(await stores().documents.read(from)).toBeNull();
    });

    it('reverts the version that created a document by deleting it', async () => {
      const session = await space();
      const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MISTAKE.md' };
      const doc = await stores().documents.write(key, 'oops', worker(session.id));
      expect(await stores().documents.revert(doc.id, 1, person)).toMatchObject({ version: 2, deleted: true });
      expect(await stores().documents.read(key)).toBeNull();
    });

    it("lists the space's documents and the session's own, by path", async () => {
      const session = await space();
      const neighbour = await open(thread({ channelId: session.channelId }));
      expect(neighbour.memorySpaceId).toBe(session.memorySpaceId);
      const spaceId = session.memorySpaceId;
      await stores().documents.write({ spaceId, sessionKey: '', path: 'b.md' }, 'b', person);
      await stores().documents.write({ spaceId, sessionKey: '', path: 'MAIN.md' }, 'main', person);
      await stores().documents.write({ spaceId, sessionKey: session.id, path: 'TODO.md' }, 'mine', worker(session.id));
      await stores().documents.write({ spaceId, sessionKey: neighbour.id, path: 'TODO.md' }, 'theirs', worker(neighbour.id));
      await stores().documents.write({ spaceId, sessionKey: '', path: 'gone.md' }, 'x', person);
      await stores().documents.remove({ spaceId, sessionKey: '', path: 'gone.md' }, person);
      const listed = await stores().documents.list(spaceId, session.id);
      expect(listed.map((doc) => [doc.path, doc.sessionKey, doc.content])).toEqual([
        ['MAIN.md', '', 'main'],
        ['TODO.md', session.id, 'mine'],
        ['b.md', '', 'b'],
      ]);
    });

    it('lists and marks reviewed the versions a memory run wrote', async () => {
      const session = await space();
      const run = await startRun(session);
      const author: DocumentAuthor = { kind: 'summarizer', memoryRunId: run.id };
      const main = await stores().documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, 'a', author);
      await stores().documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, 'b', person);
      await stores().documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'topics.md' }, 't', author);
      const written = await stores().documents.versionsByRun(run.id);
      expect(written.map((version) => [version.path, version.version])).toEqual([['topics.md', 1], ['MAIN.md', 1]]);
      expect(await stores().documents.markReviewed(run.id, 'U9')).toBe(2);
      expect((await stores().documents.versionsByRun(run.id)).map((version) => version.reviewedBy)).toEqual(['U9', 'U9']);
      expect((await stores().documents.versions(main.id)).map((version) => version.reviewedBy)).toEqual([null, 'U9']);
    });
  });

  async function startRun(session: SessionRecord) {
    const { segment } = await stores().context.load(session.id);
    return stores().memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'summarizer', round: 1, forkPoint: 4 });
  }

  describe('memory runs and usage', () => {
    it('starts and finishes memory runs and reports their statuses', async () => {
      const session = await open();
      const summarizer = await startRun(session);
      expect(summarizer).toMatchObject({ sessionId: session.id, role: 'summarizer', round: 1, status: 'running', forkPoint: 4 });
      const { segment } = await stores().context.load(session.id);
      const decider = await stores().memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'decider', round: 1, forkPoint: 5 });
      const transcript: ChatMessage[] = [user('instruction'), assistant('RESET_CONTEXT\u0000')];
      await stores().memoryRuns.finish(decider.id, {
        status: 'succeeded',
        decision: 'reset',
        transcript,
        usage: { promptTokens: 100, cachedTokens: 90, completionTokens: 5 },
      });
      const statuses = await stores().memoryRuns.statuses([summarizer.id, decider.id, 'unknown-run']);
      expect(statuses).toEqual(new Map([[summarizer.id, 'running'], [decider.id, 'succeeded']]));
      const row = await prisma().memoryRun.findUniqueOrThrow({ where: { id: decider.id } });
      expect(row).toMatchObject({ decision: 'reset', promptTokens: 100, cachedTokens: 90, completionTokens: 5 });
      expect(row.finishedAt).toBeInstanceOf(Date);
      expect(row.transcript).toEqual([user('instruction'), assistant('RESET_CONTEXT\uFFFD')]);
    });

    it("hands a person's request back from a run cut short, but not after the next driver found that run interrupted", async () => {
      const session = await open();
      const { segment } = await stores().context.load(session.id);
      const event = await stores().reviews.request(session.memorySpaceId, session.id, { kind: 'remember', userId: 'U1', name: 'Ada', text: 'the deploy window' });
      const request = { kind: 'remember' as const, userId: 'U1', name: 'Ada', text: 'the deploy window', eventId: event.id };
      const takeIt = () => stores().memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'summarizer', round: 1, forkPoint: 0, request });
      const pending = async () => (await stores().reviews.pendingRequests(session.id)).map((item) => item.eventId);
      // Its own process stops the run in time: the request waits for the next driver.
      const first = await takeIt();
      expect(await pending()).toEqual([]);
      await stores().reviews.handBack(event.id, first.id);
      expect(await pending()).toEqual([event.id]);
      // A process stopping slowly: the next driver finds its run interrupted, hands the request
      // back itself, and a new run takes it; the old process's late hand-back changes nothing.
      const slow = await takeIt();
      await stores().memoryRuns.failInterrupted(session.id, []);
      expect(await pending()).toEqual([event.id]);
      await takeIt();
      await stores().reviews.handBack(event.id, slow.id);
      expect(await pending()).toEqual([]);
    });

    it('sums usage by role, with zeros for roles that made no call', async () => {
      const session = await open();
      const call = { sessionId: session.id, segmentId: null, memoryRunId: null, model: 'm', latencyMs: 10, error: null };
      await stores().usage.record({ ...call, role: 'worker', promptTokens: 100, cachedTokens: 50, completionTokens: 10 });
      await stores().usage.record({ ...call, role: 'worker', promptTokens: 200, cachedTokens: 150, completionTokens: 20 });
      await stores().usage.record({ ...call, role: 'summarizer', promptTokens: 210, cachedTokens: 200, completionTokens: 30 });
      expect(await stores().usage.summary(session.id)).toEqual({
        worker: { calls: 2, promptTokens: 300, cachedTokens: 200, completionTokens: 30 },
        summarizer: { calls: 1, promptTokens: 210, cachedTokens: 200, completionTokens: 30 },
        decider: { calls: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
      });
    });

    it('keeps cache writes where the provider reported them, and sums them per model and role', async () => {
      const session = await open();
      const call = { sessionId: session.id, segmentId: null, memoryRunId: null, latencyMs: 10, error: null };
      await stores().usage.record({ ...call, model: 'claude-sonnet-4-5', role: 'worker', promptTokens: 3_000, cachedTokens: 1_000, completionTokens: 10, cacheWriteTokens: 2_000 });
      await stores().usage.record({ ...call, model: 'claude-sonnet-4-5', role: 'worker', promptTokens: 3_500, cachedTokens: 3_000, completionTokens: 10, cacheWriteTokens: 400 });
      await stores().usage.record({ ...call, model: 'gpt-5', role: 'worker', promptTokens: 900, cachedTokens: 0, completionTokens: 10, cacheWriteTokens: null });
      await stores().usage.record({ ...call, model: 'gpt-5', role: 'decider', promptTokens: 900, cachedTokens: 0, completionTokens: 10 });
      const totals = await stores().usage.totals({ sessionId: session.id });
      const byKey = new Map(totals.map((total) => [`${total.model}/${total.role}`, total]));
      expect(byKey.get('claude-sonnet-4-5/worker')).toEqual({ model: 'claude-sonnet-4-5', role: 'worker', promptTokens: 6_500, cachedTokens: 4_000, completionTokens: 20, cacheWriteTokens: 2_400 });
      expect(byKey.get('gpt-5/worker')).not.toHaveProperty('cacheWriteTokens');
      expect(byKey.get('gpt-5/decider')).not.toHaveProperty('cacheWriteTokens');
    });
  });
}

describe('Prisma stores on Postgres', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });
  // As the service runs them: the hot statements of every step on pg's pool (statements.ts).
  const harness = (): Harness => ({ stores: createPrismaStores(database.prisma, { pool: database.pool }), database });

  describeStores(harness);

  it("sends every step's statements on pg's pool and reads their rows as Prisma does, in any time zone", async () => {
    const stores = harness().stores;
    const { session } = await stores.sessions.open(thread(), { title: 't', scope: 'channel' });
    const segmentId = session.currentSegmentId!;
    await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `tz-${session.id}`, authorId: 'U1', authorName: 'Ann', text: 'hi' });
    const stored = await database.prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: `tz-${session.id}` } });
    const zone = process.env['TZ'];
    // A server far from UTC: timestamps without a zone are UTC in this schema, never local time.
    process.env['TZ'] = 'Pacific/Kiritimati';
    const recorded = recordStatements(database.pool!);
    const sent = recorded.texts;
    try {
      const taken = await stores.context.takeSteers(session.id, segmentId, 0, (steer) => user(steer.text));
      await stores.context.append(segmentId, { seq: 1, message: assistantCalling('c1'), isInit: false, isMarker: false, memoryRunId: null });
      await stores.context.markToolCallStarted(segmentId, 1, 'c1');
      const loaded = await stores.context.load(session.id);
      expect(taken).toHaveLength(1);
      expect(taken[0]!.receivedAt.toISOString()).toBe(stored.receivedAt.toISOString());
      expect(taken[0]!.id).toBe(Number(stored.id));
      expect(loaded.messages.map((message) => message.seq)).toEqual([0, 1]);
      expect(loaded.messages[1]!.startedToolCalls).toEqual(['c1']);
    } finally {
      recorded.stop();
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
    // The look and the take, the answer, the tool's start mark and the load: five, none through Prisma.
    expect(sent).toHaveLength(5);
    expect(sent[0]).toMatch(/FROM steer_messages/);
  });

  it('accepts a message on the intake pool in one statement that also tells every replica, once it is committed', async () => {
    const stores = createPrismaStores(database.prisma, { ackPool: database.ackPool! });
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(String(message.payload)));
    await listener.query('LISTEN hippo_session_work');
    // Counts what the intake pool is sent (the agent's pool is not asked at all).
    const recorded = recordStatements(database.ackPool!);
    const statements = recorded.texts;
    try {
      const address = thread();
      const accepted = await stores.steers.accept({ address, start: { title: 't', scope: 'channel' }, steer: { platformMessageKey: `ack-${address.channelId}`, authorId: 'U1', authorName: 'Ann', text: 'hi' }, eventKey: `ev:ack:${address.channelId}` });
      expect(accepted).toMatchObject({ inserted: true, created: true, notified: true });
      expect(statements).toHaveLength(1);
      const deadline = Date.now() + 5_000;
      while (!heard.includes(accepted.session!.id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(heard).toEqual([accepted.session!.id]);
      // A redelivery notifies no one.
      expect(await stores.steers.accept({ address, steer: { platformMessageKey: `ack-${address.channelId}`, authorId: 'U1', authorName: 'Ann', text: 'hi' } })).toMatchObject({ inserted: false, notified: false });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).toHaveLength(1);
    } finally {
      recorded.stop();
      await listener.end();
    }
  });

  it('stores messages that arrive together on the intake pool in shared statements, each with its own outcome', async () => {
    const stores = createPrismaStores(database.prisma, { ackPool: database.ackPool! });
    const message = (address: ThreadAddress, key: string, start: boolean, author = 'U1') => ({
      address,
      ...(start ? { start: { title: `burst by ${author}`, scope: 'channel' as const, startedBy: author } } : {}),
      steer: { platformMessageKey: key, authorId: author, authorName: 'Ann', text: key },
      eventKey: `ev:${key}`,
    });
    const busy = thread();
    const open = await stores.steers.accept(message(busy, `burst-${busy.channelId}-0`, true));
    const reply = (n: number) => message(busy, `burst-${busy.channelId}-${n}`, false);
    const shared = thread();
    // Ten new threads; the last two in one channel, so they share one new memory space.
    const fresh = Array.from({ length: 9 }, () => thread());
    fresh.push(thread({ channelId: fresh[8]!.channelId }));
    const quiet = thread();
    const arriving = [
      ...[1, 2, 3, 4].map(reply), // these four go at once, one per connection of the pool; the rest wait and share
      ...Array.from({ length: 8 }, (_unused, n) => message(shared, `burst-${shared.channelId}-${n}`, true, `U${n}`)), // one new thread, eight openers
      ...fresh.map((address) => message(address, `burst-${address.threadKey}`, true)), // ten new threads
      ...[5, 6, 7, 8, 9, 10].map(reply), // more replies in the live thread
      reply(3), // another replica's redelivery of a message still on its way in a statement here
      reply(7), // a redelivery of one in the shared statement: it waits for that statement
      message(quiet, `burst-${quiet.channelId}`, false), // chatter in a thread without a session
    ];
    const recorded = recordStatements(database.ackPool!);
    let results: Accepted[];
    try {
      // Reply 3's redelivery reaches another replica (its own intake batches, the same database).
      const replica = createPrismaStores(database.prisma, { ackPool: database.ackPool! });
      results = await Promise.all(arriving.map((item, index) => (index === 28 ? replica : stores).steers.accept(item)));
    } finally {
      recorded.stop();
    }
    expect(recorded.texts.length).toBeLessThanOrEqual(8);
    const openers = results.slice(4, 12);
    expect(new Set(openers.map((result) => result.session?.id)).size).toBe(1);
    // The thread is opened by the first of them, and says so to that one only.
    expect(openers.map((result) => result.created)).toEqual([true, false, false, false, false, false, false, false]);
    expect(openers[0]!.session).toMatchObject({ title: 'burst by U0', startedBy: 'U0' });
    expect(openers.every((result) => result.inserted && result.notified)).toBe(true);
    const sharedId = openers[0]!.session!.id;
    expect(await database.prisma.segment.count({ where: { sessionId: sharedId } })).toBe(1);
    expect(await database.prisma.steerMessage.count({ where: { sessionId: sharedId } })).toBe(8);
    for (const [index, address] of fresh.entries()) {
      const result = results[12 + index]!;
      expect(result).toMatchObject({ session: { ...address, startedBy: 'U1' }, inserted: true, created: true, notified: true });
      expect(result.steer).toMatchObject({ sessionId: result.session!.id, text: `burst-${address.threadKey}`, status: 'queued' });
      expect(await database.prisma.segment.findMany({ where: { sessionId: result.session!.id }, select: { id: true, ordinal: true } })).toEqual([{ id: result.session!.currentSegmentId, ordinal: 1 }]);
    }
    expect(results[20]!.session!.memorySpaceId).toBe(results[21]!.session!.memorySpaceId);
    const replies = [...results.slice(0, 4), ...results.slice(22, 28)];
    expect(replies.every((result) => result.session?.id === open.session!.id && !result.created)).toBe(true);
    expect(replies.map((result) => result.steer?.text)).toEqual(Array.from({ length: 10 }, (_unused, n) => `burst-${busy.channelId}-${n + 1}`));
    // A thread's replies that share a statement are queued in the order they arrived.
    const ids = results.slice(22, 28).map((result) => result.steer!.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // Reply 3 and its redelivery were stored by two statements at once: one of them stored it.
    expect([results[2]!.inserted, results[28]!.inserted].sort()).toEqual([false, true]);
    expect(results[28]!.steer).toEqual(results[2]!.steer);
    expect(replies.filter((result) => result !== results[2]).every((result) => result.inserted)).toBe(true);
    expect(results[29]).toMatchObject({ session: { id: open.session!.id }, steer: results[24]!.steer, inserted: false, notified: false });
    expect(results[30]).toEqual({ session: null, steer: null, inserted: false, created: false, notified: false });
    expect(await database.prisma.steerMessage.count({ where: { sessionId: open.session!.id } })).toBe(11);
    expect(await database.prisma.session.count({ where: { channelId: { in: [shared, ...fresh, quiet].map((address) => address.channelId) } } })).toBe(11);
    for (const item of arriving) expect(await stores.events.wasProcessed(item.eventKey)).toBe(true);
  });

  it('stores a message in the session another replica opened for its thread after the intake read it', async () => {
    const stores = createPrismaStores(database.prisma, { ackPool: database.ackPool! });
    const address = thread();
    // Another replica's intake, mid-statement: the thread's space and session inserted, not committed.
    const replica = new pg.Client({ connectionString: database.url });
    await replica.connect();
    try {
      await replica.query('BEGIN');
      await replica.query(`INSERT INTO memory_spaces (id, platform, workspace_id, scope, scope_key) VALUES ('space-${address.channelId}', $1, $2, 'channel', $3)`, [address.platform, address.workspaceId, address.channelId]);
      await replica.query(`INSERT INTO sessions (id, platform, workspace_id, channel_id, thread_key, memory_space_id, title, updated_at)
        VALUES ('replica-${address.channelId}', $1, $2, $3, $4, 'space-${address.channelId}', 'theirs', now())`, [address.platform, address.workspaceId, address.channelId, address.threadKey]);
      let settled = false;
      const accepting = stores.steers.accept({ address, start: { title: 'ours', scope: 'channel' }, steer: { platformMessageKey: `late-${address.channelId}`, authorId: 'U1', authorName: 'Ann', text: 'hello' } })
        .finally(() => void (settled = true));
      // Our statement read no session and now waits for the other's new thread.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false);
      await replica.query('COMMIT');
      expect(await accepting).toMatchObject({ session: { id: `replica-${address.channelId}`, title: 'theirs' }, steer: { text: 'hello' }, inserted: true, created: false });
      expect(await database.prisma.session.count({ where: { channelId: address.channelId } })).toBe(1);
    } finally {
      await replica.end();
    }
  });

  it('fails a message the database refuses alone when it shares a statement, and stores the others', async () => {
    const stores = createPrismaStores(database.prisma, { ackPool: database.ackPool! });
    const address = thread();
    const first = await stores.steers.accept({ address, start: { title: 't', scope: 'channel' }, steer: { platformMessageKey: `split-${address.channelId}-0`, authorId: 'U1', authorName: 'Ann', text: 'go' } });
    // A key too large for the unique index (a btree entry holds at most about 2.7 kB).
    const huge = randomBytes(12_000).toString('hex');
    const keys = Array.from({ length: 12 }, (_unused, n) => (n === 7 ? huge : `split-${address.channelId}-${n + 1}`));
    const outcomes = await Promise.allSettled(keys.map((key) => stores.steers.accept({ address, steer: { platformMessageKey: key, authorId: 'U1', authorName: 'Ann', text: key.slice(0, 20) } })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(keys.map((key) => (key === huge ? 'rejected' : 'fulfilled')));
    expect(await database.prisma.steerMessage.count({ where: { sessionId: first.session!.id } })).toBe(12);
  });

  it('gives the steers to the first of two takers that waited on the same lock', async () => {
    const { stores } = harness();
    const session = (await stores.sessions.open(thread(), { title: 't', scope: 'channel' })).session;
    const { segment } = await stores.context.load(session.id);
    for (const key of ['a', 'b']) {
      await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `${session.id}-${key}`, authorId: '', authorName: '', text: key });
    }
    // Hold the rows locked from another connection so both takers are queued behind the lock.
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM steer_messages WHERE session_id = $1 FOR UPDATE', [session.id]);
    const render = (steer: { text: string }): ChatMessage => user(steer.text);
    const takers = [
      stores.context.takeSteers(session.id, segment.id, 0, render),
      stores.context.takeSteers(session.id, segment.id, 0, render),
    ];
    await waitForLockWaiters(blocker, 2);
    await blocker.query('COMMIT');
    await blocker.end();
    const results = await Promise.allSettled(takers);
    const taken = results.map((result) => (result.status === 'fulfilled' ? result.value.map((steer) => steer.text) : 'failed'));
    expect(taken.map(String).sort()).toEqual(['', 'a,b']);
  });
});

/** Waits until `count` other backends wait for a lock (the takers are blocked, not yet to come). */
async function waitForLockWaiters(client: pg.Client, count: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    // `client` is inside its transaction, where pg_stat_activity is read once and kept: each look
    // drops that snapshot first, or a taker that connected after the first look is never seen.
    await client.query('SELECT pg_stat_clear_snapshot()');
    const result = await client.query<{ waiting: string }>(
      "SELECT count(*) AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (Number(result.rows[0]?.waiting) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${String(count)} sessions waited for the lock`);
}

describe('Prisma stores on PGlite', () => {
  let database: Database;
  beforeAll(async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-stores-'));
    database = await openDatabase({ dataDir, log: createLogger('silent') });
  });
  afterAll(async () => {
    await database.close();
  });

  describeStores(() => ({ stores: createPrismaStores(database.prisma), database }));
});
