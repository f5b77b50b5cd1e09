// The Slack routes: one Bolt listener per kind, whatever the number of handlers, and each event or
// submission reaches the handler of its name only. Driven through a real Bolt app's processEvent.
import { App, type Receiver, type ReceiverEvent } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { SlackRoutes } from '../../src/adapters/slack/routes.js';

const receiver: Receiver = { init: () => undefined, start: async () => undefined, stop: async () => undefined };

function boltApp(): App {
  return new App({ receiver, authorize: async () => ({ botToken: 'xoxb-test', botId: 'B1', botUserId: 'UBOT' }) });
}

function eventBody(type: string): ReceiverEvent['body'] {
  return { type: 'event_callback', team_id: 'T1', api_app_id: 'A1', event_id: `Ev-${type}`, event_time: 1, event: { type, user: 'UADA', channel: 'C1', ts: '1.1', text: 'hi' } };
}

function viewBody(callbackId: string): ReceiverEvent['body'] {
  return { type: 'view_submission', team: { id: 'T1' }, user: { id: 'UADA' }, api_app_id: 'A1', view: { id: 'V1', type: 'modal', callback_id: callbackId, state: { values: {} } } };
}

async function deliver(app: App, body: ReceiverEvent['body']): Promise<unknown[]> {
  const acks: unknown[] = [];
  await app.processEvent({ body, ack: async (response?: unknown) => void acks.push(response ?? null) });
  return acks;
}

describe('Slack routes', () => {
  it('registers one Bolt listener for all events and one for all submissions, and routes each by name', async () => {
    const app = boltApp();
    const seen: string[] = [];
    const routes = new SlackRoutes();
    for (const type of ['app_mention', 'message', 'reaction_added', 'member_joined_channel']) routes.event(type, async ({ event }) => void seen.push(`event:${type}:${event.type}`));
    for (const id of ['hippo_edit_save', 'hippo_home_search']) {
      routes.view(id, async ({ ack, view }) => {
        seen.push(`view:${id}:${view.callback_id}`);
        await ack();
      });
    }
    routes.mount(app);
    expect((app as unknown as { listeners: unknown[] }).listeners).toHaveLength(2);

    await deliver(app, eventBody('message'));
    await deliver(app, eventBody('reaction_added'));
    await deliver(app, eventBody('channel_rename'));
    expect(await deliver(app, viewBody('hippo_home_search'))).toEqual([null]);
    // No handler: nothing runs here (the app acknowledges it, app.ts).
    expect(await deliver(app, viewBody('hippo_no_such_modal'))).toEqual([]);
    expect(seen).toEqual(['event:message:message', 'event:reaction_added:reaction_added', 'view:hippo_home_search:hippo_home_search']);
  });

  it('refuses a second handler for the same name', () => {
    const routes = new SlackRoutes();
    routes.event('message', async () => undefined);
    routes.view('hippo_edit_save', async () => undefined);
    expect(() => routes.event('message', async () => undefined)).toThrow('slack routes: a second event handler for message');
    expect(() => routes.view('hippo_edit_save', async () => undefined)).toThrow('slack routes: a second view handler for hippo_edit_save');
  });
});
