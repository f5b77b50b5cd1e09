// Slack over Socket Mode: the real Bolt SocketModeReceiver (and @slack/socket-mode's client) against
// the fake Web API, whose apps.connections.open hands out the URL of a fake Socket Mode server on
// a local WebSocket. No public URL, no signing secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastMessageText } from '../fakes/fake-model-server.js';
import type { FakeSlackApi, SlackCall } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import { startFakeSocketMode, type FakeSocketMode } from '../fakes/fake-socket-mode.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const channel = 'C0SOCKET';
let rig: SlackRig;
let slack: FakeSlackApi;
let socket: FakeSocketMode;

beforeAll(async () => {
  socket = await startFakeSocketMode();
  rig = await startSlackRig({
    slack: { socketModeUrl: () => socket.nextUrl() }, users: [{ id: 'UADA', displayName: 'Ada' }],
    env: { SLACK_APP_TOKEN: 'xapp-test-token' },
  });
  slack = rig.slack;
  rig.harness.model.respond((body) => ({ content: lastMessageText(body).includes('what is the status?') ? 'Status: green.' : 'Still green.' }));
}, 60_000);

afterAll(async () => {
  await rig?.close();
  await socket?.close();
});

function mentionEnvelope(text: string, ts: string, eventId: string): Record<string, unknown> {
  return {
    token: 'legacy', team_id: slack.teamId, api_app_id: 'AHIPPO', type: 'event_callback', event_id: eventId, event_time: 1,
    event: { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts, channel, event_ts: ts },
  };
}

const answerIn = (threadTs: string, text: string) => (call: SlackCall) =>
  call.args['thread_ts'] === threadTs && String(markdownOf(call.args) ?? call.args['text'] ?? '').includes(text);

describe('Slack in Socket Mode', () => {
  it('connects through apps.connections.open on SLACK_API_URL, acks an event, stores the steer and answers', async () => {
    await socket.waitForConnections(1);
    expect(slack.callsTo('apps.connections.open')[0]?.headers['authorization']).toBe('Bearer xapp-test-token');
    await until(() => rig.adapter.connected(), 10_000, 'connected');

    const ts = '1800000100.000100';
    const envelopeId = socket.sendEvent(mentionEnvelope('what is the status?', ts, 'EvSock1'));
    const ack = await socket.waitForAck(envelopeId);
    expect(ack.envelope_id).toBe(envelopeId);
    await until(async () => (await rig.database.prisma.steerMessage.count({ where: { text: 'what is the status?' } })) === 1, 10_000, 'steer stored');
    await slack.waitForCall('chat.postMessage', answerIn(ts, 'Status: green.'), 15_000);
  });

  it('reconnects when Slack asks it to (disconnect: refresh_requested) and handles the next event', async () => {
    const opens = slack.callsTo('apps.connections.open').length;
    const connections = socket.connections;
    socket.sendDisconnect('refresh_requested');
    // The client waits a moment before reconnecting (its own back-off), then opens a new URL.
    await socket.waitForConnections(connections + 1, 20_000);
    expect(slack.callsTo('apps.connections.open')).toHaveLength(opens + 1);
    await until(() => rig.adapter.connected(), 10_000, 'connected again');

    const ts = '1800000200.000100';
    const envelopeId = socket.sendEvent(mentionEnvelope('and now?', ts, 'EvSock2'));
    await socket.waitForAck(envelopeId);
    await slack.waitForCall('chat.postMessage', answerIn(ts, 'Still green.'), 15_000);
    expect(await rig.database.prisma.steerMessage.count({ where: { text: 'and now?' } })).toBe(1);
  }, 40_000);
});
