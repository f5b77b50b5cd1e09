// People's messages as they arrive: queued durably before the platform is answered (R9), and the
// platform events already handled.
import type { MemoryScope } from '../places.js';
import type { SessionRecord, ThreadAddress } from './sessions.js';

/** A file someone shared with a message, as the platform describes it. */
export interface Attachment {
  /** The file's name as shared. */
  name: string;
  /** MIME type, when the platform says (e.g. "image/png"). */
  mimeType: string | null;
  /** Size in bytes as the platform says (0 when unknown). */
  size: number;
  /** The platform's reference: a Slack file id, a Discord attachment id. */
  ref: string;
  /** Where the platform serves it, when it said so. */
  url?: string;
}

/** A steer message waiting in the inbound queue. */
export interface SteerRecord {
  id: number;
  sessionId: string;
  platformMessageKey: string;
  authorId: string;
  authorName: string;
  text: string;
  /** Files and images shared with the message (saved into the workspace when it is taken). */
  attachments: Attachment[];
  status: 'queued' | 'taken' | 'withdrawn';
  receivedAt: Date;
}

export interface NewSteer {
  sessionId: string;
  platformMessageKey: string;
  authorId: string;
  authorName: string;
  text: string;
  attachments?: Attachment[];
}

/** A person's message as it arrives, before anything else is done with it. */
export interface ArrivingMessage {
  address: ThreadAddress;
  /** Creates the thread's session (with its memory space and first segment) when it has none. */
  start?: { title: string; scope: MemoryScope; startedBy?: string };
  steer: Omit<NewSteer, 'sessionId'>;
  /** The platform's event id, recorded as processed with the message (a retry finds it). */
  eventKey?: string;
}

export interface Accepted {
  /** Null: the thread has no session and none was to be started (the message is not stored). */
  session: SessionRecord | null;
  steer: SteerRecord | null;
  /** False for a redelivery (the message was queued already). */
  inserted: boolean;
  /** The session was created by this message. */
  created: boolean;
  /** The store told the drivers on every replica itself (with the message, on commit). */
  notified: boolean;
}

export interface SteerStore {
  /**
   * Stores an arriving message at once, as one durable write: the event recorded, the session
   * found or started, the message queued (R9). The platform is acknowledged after it.
   */
  accept(message: ArrivingMessage): Promise<Accepted>;
  /** Edits a still-queued steer; false when it was already taken. */
  edit(platformMessageKey: string, text: string): Promise<boolean>;
  /** Withdraws a still-queued steer; false when it was already taken. */
  withdraw(platformMessageKey: string): Promise<boolean>;
  countQueued(sessionId: string): Promise<number>;
}

export interface EventLog {
  /** Records a platform event id; false when it was seen before (insert-if-absent). */
  markProcessed(key: string): Promise<boolean>;
  /** Whether a platform event id was recorded (a retry of an event already handled). */
  wasProcessed(key: string): Promise<boolean>;
}
