// The contract every chat adapter keeps (docs/style.md §9: one suite run against both adapters). An
// adapter's test file fills in `AdapterContractTarget` with its real adapter running against its
// fake platform and a real agent, then calls `runAdapterContract`. The suite only speaks in
// thread addresses, steer keys and what people see, so it reads the same for Slack and Discord.
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { AgentEvent } from '../../src/core/events.js';
import type { Platform, SessionRecord, Stores, ThreadAddress } from '../../src/core/store.js';

/** A message Hippo posted, as people see it now (after edits). */
export interface SentMessage {
  /** Message text plus any card or note text (Slack blocks, Discord embeds). */
  text: string;
  /** Labels of its buttons ('View', 'Revert', …); an emoji-only button is its emoji. */
  buttons: string[];
}

/** What an adapter's test provides; every method acts through the fake platform. */
export interface AdapterContractTarget {
  platform: Exclude<Platform, 'console'>;
  /** The platform's message length limit in characters (Slack 3,000 as Hippo splits, Discord 2,000). */
  limit: number;
  /** The agent's stores; sessions are looked up through them. */
  stores: Stores;
  /** Every agent event so far (the agent harness collects them). */
  events: readonly AgentEvent[];
  /** Emits an event as core would (renders notes without running a summarizer). */
  emit(event: AgentEvent): void;
  /**
   * From now on the worker answers every request with `reply(line)`, where `line` is the last line
   * of the request's last message without its quote marker (for a steer: the person's last line).
   */
  answerWith(reply: (line: string) => string): void;
  /** A person mentions Hippo with `text` in a channel; resolves with the new session's thread address. */
  deliverMention(text: string): Promise<ThreadAddress>;
  /** A person replies in the thread; `duplicate` delivers the same platform event twice. Resolves with the steer key the reply has. */
  deliverReply(thread: ThreadAddress, text: string, options?: { duplicate?: boolean }): Promise<string>;
  /** Hippo's own message as the platform echoes it into the thread; resolves with the key it would have. */
  deliverOwnMessage(thread: ThreadAddress, text: string): Promise<string>;
  /** Another bot's message in the thread; resolves with the key it would have. */
  deliverBotMessage(thread: ThreadAddress, text: string): Promise<string>;
  /** A person writes "@Hippo <text>" in the thread; resolves with the key the message has. */
  deliverCommand(thread: ThreadAddress, text: string): Promise<string>;
  /** What Hippo posted in the thread, oldest first. */
  sentMessages(thread: ThreadAddress): SentMessage[] | Promise<SentMessage[]>;
  /** Resolves when everything delivered so far is handled and rendered into the outbox. */
  settle(): Promise<void>;
}

/** Polls until `probe` returns something other than undefined/false (5 s by default). */
export async function eventually<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Registers the contract's tests (call inside a describe, after the target is set up). */
export function runAdapterContract(target: () => AdapterContractTarget): void {
  const steersWithKey = (key: string) =>
    target().events.filter((event) => event.type === 'steer-received' && event.steer.platformMessageKey === key) as Array<Extract<AgentEvent, { type: 'steer-received' }>>;
  const sessionOf = async (thread: ThreadAddress): Promise<SessionRecord> =>
    eventually(async () => (await target().stores.sessions.find(thread)) ?? undefined, 'the session');
  const sentText = async (thread: ThreadAddress) => (await target().sentMessages(thread)).map((message) => message.text);
  const started = async (text: string) => {
    target().answerWith((line) => `started: ${line}`);
    const thread = await target().deliverMention(text);
    await eventually(async () => (await sentText(thread)).includes(`started: ${text}`), 'the first answer');
    return thread;
  };

  it('binds a mention to a session on its thread and routes replies back to it (thread-key round trip)', async () => {
    const thread = await started('round trip');
    expect(thread.platform).toBe(target().platform);
    const session = await sessionOf(thread);
    const { platform, workspaceId, channelId, threadKey } = thread;
    expect({ ...session }).toMatchObject({ platform, workspaceId, channelId, threadKey });
    const key = await target().deliverReply(thread, 'a reply in the thread');
    const [received] = await eventually(() => steersWithKey(key).length > 0 && steersWithKey(key), 'the steer');
    expect(received?.session.id).toBe(session.id);
    expect(received?.steer.text).toBe('a reply in the thread');
  });

  it('queues a message delivered twice once (steer dedupe)', async () => {
    const thread = await started('dedupe');
    const key = await target().deliverReply(thread, 'only once please', { duplicate: true });
    await eventually(() => steersWithKey(key).length > 0, 'the steer');
    await target().settle();
    expect(steersWithKey(key)).toHaveLength(1);
  });

  it("ignores its own messages and other bots' messages", async () => {
    const thread = await started('own messages');
    const own = await target().deliverOwnMessage(thread, 'I am Hippo');
    const bot = await target().deliverBotMessage(thread, 'I am another bot');
    await target().settle();
    expect(steersWithKey(own)).toHaveLength(0);
    expect(steersWithKey(bot)).toHaveLength(0);
  });

  it('splits a long answer at the platform limit without breaking a code block', async () => {
    const { limit } = target();
    const code = ['```', ...Array.from({ length: Math.floor(limit / 80) }, (_unused, line) => `let line${line} = ${line} * 2; // part of one code block that stays whole`), '```'].join('\n');
    const prose = (word: string) => `${word} `.repeat(Math.ceil((limit * 0.8) / (word.length + 1))).trim();
    const answer = [prose('first'), code, prose('second'), prose('third')].join('\n\n');
    target().answerWith((line) => (line === 'now the long one' ? answer : `started: ${line}`));
    const thread = await target().deliverMention('split test');
    await target().deliverReply(thread, 'now the long one');
    const parts = await eventually(async () => {
      const found = (await sentText(thread)).filter((text) => /\(\d+\/\d+\)$/.test(text));
      const total = Number(/\/(\d+)\)$/.exec(found[0] ?? '')?.[1] ?? 0);
      return total > 0 && found.length === total && found;
    }, 'every part of the answer');
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(limit);
      expect((part.match(/```/g) ?? []).length % 2).toBe(0);
    }
    const body = code.split('\n').slice(1, -1).join('\n');
    expect(parts.some((part) => part.includes(body))).toBe(true);
  });

  it('renders memory and reset notes as one line with their buttons', async () => {
    const thread = await started('notes');
    const session = await sessionOf(thread);
    target().emit({
      type: 'memory-updated', session, memoryRunId: randomUUID(), round: 1,
      changes: [{ documentId: randomUUID(), path: 'MAIN.md', version: 2, previousVersion: 1, added: 8, removed: 2, deleted: false }],
      usage: { promptTokens: 1000, cachedTokens: 900, completionTokens: 20 },
    });
    const note = await eventually(async () => (await target().sentMessages(thread)).find((message) => message.text.includes('🧠 Memory updated')), 'the memory note');
    expect(note.text).toContain('🧠 Memory updated · MAIN.md +8 −2 · cache 90%');
    expect(note.buttons).toEqual(expect.arrayContaining(['View', 'Revert']));
    target().emit({ type: 'context-reset', session, segmentId: randomUUID(), segmentOrdinal: 2, tokensBefore: 118_000, tokensAfter: 14_200, carriedMessages: 6, memoryCostUsd: 0.1234 });
    const reset = await eventually(async () => (await target().sentMessages(thread)).find((message) => message.text.includes('♻️ Context reset')), 'the reset note');
    expect(reset.text).toContain('♻️ Context reset · 118k → 14k tokens · 6 messages carried over · memory $0.12 since the last reset');
  });

  it('tells the thread once per stop that a run reached its step limit, and how to go on (R21, R17)', async () => {
    const thread = await started('step limit');
    const session = await sessionOf(thread);
    target().emit({ type: 'step-limit', session, steps: 4, maxSteps: 4, sessionSteps: 4 });
    await target().settle();
    // Emitted again later (a runner loaded after a crash): the same note, not a second one.
    target().emit({ type: 'step-limit', session, steps: 4, maxSteps: 4, sessionSteps: 4 });
    // A later stop of the same thread is a note of its own; notes go out in order, so once it is
    // there a second copy of the first would be there too.
    target().emit({ type: 'step-limit', session, steps: 5, maxSteps: 5, sessionSteps: 10 });
    const notes = async (steps: number) => (await sentText(thread)).filter((text) => text.includes(`⏸️ I stopped after ${steps} steps`));
    await eventually(async () => (await notes(5)).length > 0, 'the second stop\'s note');
    expect(await notes(4)).toHaveLength(1);
    expect(await notes(5)).toHaveLength(1);
    expect((await notes(4))[0]).toMatch(/that is the limit for one run, so a task cannot loop on unattended\. Nothing is lost: reply here, or press Resume \(`[@/]hippo resume`\), and I continue\./i);
  });

  it("shows an error on the card and in a note without the error's text (it can quote a secret)", async () => {
    const thread = await started('error text');
    const session = await sessionOf(thread);
    const secret = 'sk-live-0123456789abcdef';
    target().emit({ type: 'error', session, error: { code: 'model', message: `401 Incorrect API key provided: ${secret}`, retryable: false } });
    await target().settle();
    await eventually(async () => (await sentText(thread)).some((text) => text.includes('❌ Error')), 'the failed card');
    await eventually(async () => (await sentText(thread)).some((text) => text.includes('⚠️ I stopped because of an error of the model endpoint')), 'the error note');
    expect((await sentText(thread)).filter((text) => text.includes(secret))).toEqual([]);
  });

  it('answers a mention command in the thread instead of queueing it, and steers with anything else', async () => {
    const thread = await started('commands');
    const status = await target().deliverCommand(thread, 'status');
    await eventually(async () => (await sentText(thread)).some((text) => /Status:/.test(text)), 'the status answer');
    const request = await target().deliverCommand(thread, 'status of the billing job, please');
    await eventually(() => steersWithKey(request).length > 0, 'the steer');
    await target().settle();
    expect(steersWithKey(status)).toHaveLength(0);
  });
}
