// Sessions for tests and benchmarks, made the one way the product makes them: a person's message
// accepted by the intake (SteerStore.accept, R9), which starts the thread's session when it has none.
import type { MemoryScope, SessionRecord, SteerRecord, Stores, ThreadAddress } from '../../src/core/store.js';

/** How a test's message arrives; every field has a default. */
export interface ArrivalOptions {
  /** The message (default "hello"). */
  text?: string;
  /** The platform's message key (default: one no other message of the run has). */
  key?: string;
  /** The author's display name (default Ada; the author id is the name in lower case). */
  author?: string;
  authorId?: string;
  /** The session's title when the message starts it (default "t"). */
  title?: string;
  /** The memory scope a new session's space is made under (default channel). */
  scope?: MemoryScope;
  startedBy?: string;
}

let counter = 0;

/**
 * Queues a person's message on `address` as the intake does, starting the thread's session when
 * it has none. The drivers hear of it only when `stores` write through the ack pool.
 */
export async function arrive(stores: Pick<Stores, 'steers'>, address: ThreadAddress, options: ArrivalOptions = {}): Promise<{ session: SessionRecord; steer: SteerRecord }> {
  counter += 1;
  const author = options.author ?? 'Ada';
  const accepted = await stores.steers.accept({
    address,
    start: { title: options.title ?? 't', scope: options.scope ?? 'channel', ...(options.startedBy === undefined ? {} : { startedBy: options.startedBy }) },
    steer: {
      platformMessageKey: options.key ?? `${address.platform}:${address.threadKey}:arrival-${counter}`,
      authorId: options.authorId ?? author.toLowerCase(),
      authorName: author,
      text: options.text ?? 'hello',
    },
  });
  if (!accepted.session || !accepted.steer) throw new Error(`the message on thread ${address.threadKey} was not stored`);
  return { session: accepted.session, steer: accepted.steer };
}

/**
 * A thread's session with nothing waiting: its first message accepted, then withdrawn (as a person
 * deleting it before it is taken does). Use stores that notify no driver, or a driver may take it.
 */
export async function startSession(stores: Pick<Stores, 'steers'>, address: ThreadAddress, options: Omit<ArrivalOptions, 'text'> = {}): Promise<SessionRecord> {
  const { session, steer } = await arrive(stores, address, { ...options, text: 'the first message, withdrawn' });
  if (!(await stores.steers.withdraw(steer.platformMessageKey))) throw new Error(`the first message of session ${session.id} was taken before it could be withdrawn`);
  return session;
}
