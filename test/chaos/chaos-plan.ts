// What people say in a chaos run: one top-level mention per session (each in its own channel) and
// the thread replies that steer them. Every text carries a unique tag, so it can be counted in
// every model request; the plan also records which events Slack got acknowledged.
import type { Random } from './random.js';

/** A person of the run (the fake Slack API knows their names). */
export interface ChaosPerson {
  id: string;
  name: string;
}

/** One message a person sends: the mention that starts a session, or a steer. */
export interface PlannedMessage {
  /** Unique, e.g. "s3-m0-k2x9"; part of the text. */
  tag: string;
  ts: string;
  author: ChaosPerson;
  text: string;
  /** Set when the Events API acknowledged it (the mention: its app_mention event). */
  acknowledged: boolean;
  /** When it was acknowledged (Date.now() ms). */
  acknowledgedAt?: number;
}

/** One session: its thread and what was said there. */
export interface PlannedSession {
  number: number;
  channel: string;
  mention: PlannedMessage;
  steers: PlannedMessage[];
}

export const chaosPeople: readonly ChaosPerson[] = [
  { id: 'UADA', name: 'Ada' },
  { id: 'UBOB', name: 'Bob' },
  { id: 'UCHLOE', name: 'Chloé' },
  { id: 'UDMITRI', name: 'Dmitri' },
];

/** The plan of a run; steers are added as they are sent. */
export class ChaosPlan {
  readonly sessions: PlannedSession[] = [];
  private tsCounter = 0;
  private readonly baseSeconds = 1_700_000_000;

  constructor(private readonly random: Random) {}

  /** A new session's mention (not sent yet). */
  addSession(): PlannedSession {
    const number = this.sessions.length + 1;
    const tag = this.tag(number, 0);
    const session: PlannedSession = {
      number,
      channel: `C0CHAOS${String(number).padStart(4, '0')}`,
      mention: { tag, ts: this.nextTs(), author: this.random.pick(chaosPeople), text: `Please look after task ${number} [${tag}]`, acknowledged: false },
      steers: [],
    };
    this.sessions.push(session);
    return session;
  }

  /** A new steer in the session's thread (not sent yet). */
  addSteer(session: PlannedSession): PlannedMessage {
    const tag = this.tag(session.number, session.steers.length + 1);
    const steer: PlannedMessage = { tag, ts: this.nextTs(), author: this.random.pick(chaosPeople), text: `Also consider point ${session.steers.length + 1} [${tag}]`, acknowledged: false };
    session.steers.push(steer);
    return steer;
  }

  /** Every message, mentions first. */
  messages(): Array<{ session: PlannedSession; message: PlannedMessage }> {
    return this.sessions.flatMap((session) => [session.mention, ...session.steers].map((message) => ({ session, message })));
  }

  private tag(session: number, message: number): string {
    return `s${session}-m${message}-${Math.floor(this.random.next() * 36 ** 4).toString(36).padStart(4, '0')}`;
  }

  /** Increasing Slack timestamps ("seconds.micros"), unique per message. */
  private nextTs(): string {
    this.tsCounter += 1;
    return `${this.baseSeconds + this.tsCounter}.000100`;
  }
}

/** How the model sees a person's message (core's renderSteer: quoted, with the author). */
export function renderedSteer(message: PlannedMessage): string {
  return `${message.author.name} wrote:\n${message.text.split('\n').map((line) => `> ${line}`).join('\n')}`;
}

/** The app_mention event of a session's first message. */
export function mentionEvent(session: PlannedSession, botUserId: string): Record<string, unknown> {
  const { mention } = session;
  return { type: 'app_mention', user: mention.author.id, text: `<@${botUserId}> ${mention.text}`, ts: mention.ts, channel: session.channel, event_ts: mention.ts };
}

/** The message.channels twin Slack also sends for a mention (deduplicated by the bot). */
export function mentionMessageEvent(session: PlannedSession, botUserId: string): Record<string, unknown> {
  return { ...mentionEvent(session, botUserId), type: 'message', channel_type: 'channel' };
}

/** A thread reply event. */
export function steerEvent(session: PlannedSession, steer: PlannedMessage): Record<string, unknown> {
  return { type: 'message', channel_type: 'channel', user: steer.author.id, text: steer.text, ts: steer.ts, thread_ts: session.mention.ts, channel: session.channel, event_ts: steer.ts };
}
