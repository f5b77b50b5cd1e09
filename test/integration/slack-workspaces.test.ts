// Many workspaces: the OAuth install flow from /slack/install to a working workspace, answers with
// that workspace's token, tokens sealed at rest, token rotation before expiry, uninstall and
// revocation. Real Bolt and @slack/oauth against the fake Slack Web API, on real Postgres.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackInstallationStore } from '../../src/adapters/slack/workspaces/installation-store.js';
import { botScopes } from '../../src/adapters/slack/workspaces/scopes.js';
import { InstalledWorkspaces } from '../../src/adapters/slack/workspaces/workspaces.js';
import { SlackStore } from '../../src/adapters/storage/slack-store.js';
import { SecretBox } from '../../src/adapters/storage/secret-box.js';
import { createLogger } from '../../src/log.js';
import { bearer } from '../fakes/fake-slack-oauth.js';
import type { FakeSlackApi, SlackCall } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'workspaces-secret';
const encryptionKey = randomBytes(32);
/** Everything the adapter logged, at trace level. */
const logLines: string[] = [];
const channel = 'C0TEAM';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let counter = 0;

const teams = {
  T2: { teamId: 'T0TWO', teamName: 'Team Two', botUserId: 'UBOT2', botId: 'BBOT2' },
  T3: { teamId: 'T0THREE', teamName: 'Team Three', botUserId: 'UBOT3', botId: 'BBOT3' },
  T4: { teamId: 'T0FOUR', teamName: 'Team <Four>', botUserId: 'UBOT4', botId: 'BBOT4' },
  T5: { teamId: 'T0FIVE', teamName: 'Team Five', botUserId: 'UBOT5', botId: 'BBOT5' },
  T6: { teamId: 'T0SIX', teamName: 'Team Six', botUserId: 'UBOT6', botId: 'BBOT6' },
  /** Not in ALLOWED_WORKSPACES. */
  T7: { teamId: 'T0SEVEN', teamName: 'Team Seven', botUserId: 'UBOT7', botId: 'BBOT7' },
  T8: { teamId: 'T0EIGHT', teamName: 'Team Eight', botUserId: 'UBOT8', botId: 'BBOT8' },
};
const allowedWorkspaces = ['T0HIPPO', 'T0TWO', 'T0THREE', 'T0FOUR', 'T0FIVE', 'T0SIX'];

/** Another replica's view of the installations: its own store, cache and refresh. */
function replica(): InstalledWorkspaces {
  const store = new SlackInstallationStore(new SlackStore(database.prisma), new SecretBox(encryptionKey));
  return new InstalledWorkspaces(store, { clientId: slack.options.clientId, clientSecret: slack.options.clientSecret }, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } }, createLogger('silent'));
}

function nextTs(): string {
  counter += 1;
  return `1730000${String(counter).padStart(3, '0')}.000400`;
}

async function event(teamId: string, payload: Record<string, unknown>): Promise<Response> {
  return rig.post(JSON.stringify({ team_id: teamId, api_app_id: 'AHIPPO', type: 'event_callback', event_id: `EvW${++counter}`, event: payload }), 'application/json');
}

async function mention(teamId: string, botUserId: string, text: string, ts: string): Promise<Response> {
  return event(teamId, { type: 'app_mention', user: 'UPERSON', text: `<@${botUserId}> ${text}`, ts, channel, event_ts: ts });
}

/** /slack/install: the redirect to Slack and the state cookie it sets. */
async function startInstall(): Promise<{ location: URL; cookie: string; state: string }> {
  const response = await fetch(`${rig.baseUrl}/slack/install`, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get('location') ?? '');
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith('slack-app-oauth-state='))?.split(';')[0] ?? '';
  return { location, cookie, state: location.searchParams.get('state') ?? '' };
}

/** Slack's redirect back to us after a person approved the install. */
function finishInstall(code: string, state: string, cookie: string | null): Promise<Response> {
  const query = new URLSearchParams({ code, state });
  return fetch(`${rig.baseUrl}/slack/oauth_redirect?${query}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
}

async function install(team: (typeof teams)[keyof typeof teams], options: { expiresIn?: number } = {}): Promise<void> {
  slack.addWorkspace(team);
  const { cookie, state } = await startInstall();
  const response = await finishInstall(slack.tokens.grant(team.teamId, { installerId: 'UINSTALLER', ...options }), state, cookie);
  expect(response.status).toBe(200);
}

const postsIn = (threadTs: string) => slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === threadTs);
const tokenOf = (call: SlackCall) => bearer(call.headers);

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret, oauth: { encryptionKey: encryptionKey.toString('base64') }, users: [{ id: 'UPERSON', displayName: 'Pat' }],
    env: { ALLOWED_WORKSPACES: allowedWorkspaces.join(',') },
    log: createLogger('trace', { write: (line: string) => void logLines.push(line) }),
  });
  ({ database, slack, harness } = rig);
  harness.model.respond(() => ({ content: 'Done here.' }));
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack install flow', () => {
  it('redirects /slack/install to Slack with the manifest scopes and a signed state kept in a cookie', async () => {
    const { location, cookie, state } = await startInstall();
    expect(`${location.origin}${location.pathname}`).toBe('https://slack.com/oauth/v2/authorize');
    expect(location.searchParams.get('client_id')).toBe(slack.options.clientId);
    expect(location.searchParams.get('scope')?.split(',')).toEqual(botScopes);
    expect(state).not.toBe('');
    expect(cookie).toBe(`slack-app-oauth-state=${state}`);
  });

  it('refuses a redirect whose state is forged, altered or not this browser\'s, storing nothing and keeping the code unused', async () => {
    slack.addWorkspace(teams.T2);
    const code = slack.tokens.grant(teams.T2.teamId);
    const { cookie, state } = await startInstall();
    const altered = `${state.slice(0, -2)}xx`;
    for (const [tryState, tryCookie] of [[altered, `slack-app-oauth-state=${altered}`], [state, null], ['forged', 'slack-app-oauth-state=forged']] as const) {
      const response = await finishInstall(code, tryState, tryCookie);
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('Hippo was not installed');
    }
    expect(cookie).not.toBe('');
    expect(slack.callsTo('oauth.v2.access')).toHaveLength(0);
    expect(await database.prisma.slackInstallation.count()).toBe(0);
  });

  it('installs a second workspace and answers its events with its own token', async () => {
    await install(teams.T2);
    const [token] = slack.tokens.tokensOf(teams.T2.teamId);
    expect(token).toMatch(/^xoxb-T0TWO-/);
    expect(await database.prisma.slackInstallation.findUniqueOrThrow({ where: { teamId: teams.T2.teamId } })).toMatchObject({
      teamName: 'Team Two', botUserId: 'UBOT2', botId: 'BBOT2', installedBy: 'UINSTALLER', botRefreshToken: null, botTokenExpiresAt: null,
    });

    const root = nextTs();
    expect((await mention(teams.T2.teamId, teams.T2.botUserId, 'hello from team two', root)).status).toBe(200);
    expect(await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } })).toMatchObject({ workspaceId: teams.T2.teamId, startedBy: 'UPERSON' });
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').includes('Done here.'));
    expect(tokenOf(answer)).toBe(token);
    // Every call for this thread (card, answer, reactions, names) went out with team two's token.
    for (const call of postsIn(root)) expect(slack.teamOf(call)).toBe(teams.T2.teamId);
    expect(slack.callsTo('reactions.add').filter((call) => call.args['timestamp'] === root).every((call) => tokenOf(call) === token)).toBe(true);
    // Nothing of the payload's routing field reaches Slack.
    expect(postsIn(root).every((call) => call.args['team'] === undefined)).toBe(true);
    // A reply that belongs to no session (help in a fresh thread) also goes out with team two's token.
    const help = nextTs();
    await mention(teams.T2.teamId, teams.T2.botUserId, 'help', help);
    const helpReply = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === help);
    expect(tokenOf(helpReply)).toBe(token);
  });

  it('keeps tokens sealed at rest: no plaintext in the table', async () => {
    const rows = await database.prisma.$queryRaw<Array<{ row: string }>>`SELECT row_to_json(i)::text AS row FROM slack_installations i`;
    expect(rows.length).toBeGreaterThan(0);
    for (const { row } of rows) {
      expect(row).not.toMatch(/xox[a-z]/);
      expect(JSON.parse(row)).toMatchObject({ bot_token: expect.stringMatching(/^v1:/) });
    }
    for (const token of slack.tokens.tokensOf(teams.T2.teamId)) for (const { row } of rows) expect(row).not.toContain(token);
  });

  it('acknowledges and ignores events of a workspace that never installed Hippo', async () => {
    const ts = nextTs();
    expect((await mention('T0STRANGER', 'UBOTX', 'anyone there?', ts)).status).toBe(200);
    expect(await database.prisma.session.count({ where: { threadKey: ts } })).toBe(0);
    expect(await database.prisma.processedEvent.count({ where: { key: { contains: ts } } })).toBe(0);
  });

  it('refreshes a rotating token that expires soon before using it, and stores the new one sealed', async () => {
    await install(teams.T3, { expiresIn: 300 });
    const [first] = slack.tokens.tokensOf(teams.T3.teamId);
    expect(first).toMatch(/^xoxe\.xoxb-/);
    const stored = await database.prisma.slackInstallation.findUniqueOrThrow({ where: { teamId: teams.T3.teamId } });
    expect(stored.botRefreshToken).toMatch(/^v1:/);
    expect(stored.botTokenExpiresAt?.getTime()).toBeLessThan(Date.now() + 301_000);

    // Counted from here: another test may refresh another team's token.
    const refreshes = () => slack.callsTo('oauth.v2.access').filter((call) => call.args['grant_type'] === 'refresh_token').length;
    const refreshesBefore = refreshes();
    const root = nextTs();
    expect((await mention(teams.T3.teamId, teams.T3.botUserId, 'hello from team three', root)).status).toBe(200);
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').includes('Done here.'));
    expect(refreshes() - refreshesBefore).toBe(1);
    const fresh = slack.tokens.tokensOf(teams.T3.teamId)[1];
    expect(fresh).toBeDefined();
    expect(tokenOf(answer)).toBe(fresh);
    expect(postsIn(root).every((call) => tokenOf(call) === fresh)).toBe(true);
    const refreshed = await database.prisma.slackInstallation.findUniqueOrThrow({ where: { teamId: teams.T3.teamId } });
    expect(refreshed.botTokenExpiresAt?.getTime()).toBeGreaterThan(Date.now() + 3_600_000);
    expect(refreshed.botToken).not.toBe(stored.botToken);
  });

  it('refreshes once when two replicas find the token expiring at the same moment', async () => {
    await install(teams.T5, { expiresIn: 120 });
    const before = slack.callsTo('oauth.v2.access').length;
    const [one, two] = await Promise.all([replica().get(teams.T5.teamId), replica().get(teams.T5.teamId)]);
    expect(slack.callsTo('oauth.v2.access').length - before).toBe(1);
    const fresh = slack.tokens.tokensOf(teams.T5.teamId)[1];
    expect(one?.client.token).toBe(fresh);
    expect(two?.client.token).toBe(fresh);
  });

  it('keeps using a token that has not expired yet when Slack refuses the refresh', async () => {
    await install(teams.T5, { expiresIn: 120 });
    const current = slack.tokens.tokensOf(teams.T5.teamId).at(-1);
    slack.script('oauth.v2.access', { error: 'internal_error' });
    const workspace = await replica().get(teams.T5.teamId);
    expect(workspace?.client.token).toBe(current);
    expect(workspace?.identity).toEqual({ teamId: teams.T5.teamId, botUserId: 'UBOT5', botId: 'BBOT5' });
  });

  it('shows a team name from Slack escaped on the success page', async () => {
    slack.addWorkspace(teams.T4);
    const { cookie, state } = await startInstall();
    const response = await finishInstall(slack.tokens.grant(teams.T4.teamId), state, cookie);
    const page = await response.text();
    expect(page).toContain('Team &#60;Four&#62;');
    expect(page).not.toContain('<Four>');
  });
});

describe('Slack uninstall', () => {
  it('deletes the tokens on app_uninstalled, drops what the workspace\'s sessions still post, and ignores its later events', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    harness.model.respond(async () => {
      await gate;
      return { content: 'A late answer.' };
    });
    const root = nextTs();
    await mention(teams.T2.teamId, teams.T2.botUserId, 'a long job', root);
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await harness.model.waitFor(() => true);

    const response = await event(teams.T2.teamId, { type: 'app_uninstalled', event_ts: '1' });
    expect(response.status).toBe(200);
    expect(await database.prisma.slackInstallation.count({ where: { teamId: teams.T2.teamId } })).toBe(0);

    release();
    await harness.waitForEvent('answer', (answer) => answer.session.id === session.id);
    await until(async () => (await database.prisma.outboxItem.count({ where: { sessionId: session.id, idempotencyKey: { startsWith: 'answer:' }, status: 'failed' } })) === 1);
    const failed = await database.prisma.outboxItem.findFirstOrThrow({ where: { sessionId: session.id, idempotencyKey: { startsWith: 'answer:' } } });
    expect(failed.lastError).toBe('workspace_not_installed');
    expect(slack.callsTo('chat.postMessage').some((call) => String(markdownOf(call.args) ?? '').includes('A late answer.'))).toBe(false);

    const later = nextTs();
    expect((await mention(teams.T2.teamId, teams.T2.botUserId, 'still there?', later)).status).toBe(200);
    expect(await database.prisma.session.count({ where: { threadKey: later } })).toBe(0);
    // The service goes on serving other workspaces.
    harness.model.respond(() => ({ content: 'Still serving team three.' }));
    const other = nextTs();
    await mention(teams.T3.teamId, teams.T3.botUserId, 'are you fine?', other);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === other && String(markdownOf(call.args) ?? '').includes('Still serving'));
  });

  it('deletes the installation when the bot token is revoked, not when only user tokens are', async () => {
    expect((await event(teams.T3.teamId, { type: 'tokens_revoked', tokens: { oauth: ['UPERSON'] }, event_ts: '2' })).status).toBe(200);
    expect(await database.prisma.slackInstallation.count({ where: { teamId: teams.T3.teamId } })).toBe(1);
    expect((await event(teams.T3.teamId, { type: 'tokens_revoked', tokens: { bot: [teams.T3.botUserId] }, event_ts: '3' })).status).toBe(200);
    expect(await database.prisma.slackInstallation.count({ where: { teamId: teams.T3.teamId } })).toBe(0);
  });

  it('works again after a reinstall, with the new token', async () => {
    await install(teams.T2);
    const tokens = slack.tokens.tokensOf(teams.T2.teamId);
    const root = nextTs();
    harness.model.respond(() => ({ content: 'Back again.' }));
    await mention(teams.T2.teamId, teams.T2.botUserId, 'welcome back', root);
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').includes('Back again.'));
    expect(tokenOf(answer)).toBe(tokens[tokens.length - 1]);
  });
});

describe('Slack install limits', () => {
  it('lets a state work once: a replayed redirect is refused, and of redirects racing with one state one installs', async () => {
    slack.addWorkspace(teams.T6);
    const { cookie, state } = await startInstall();
    expect((await finishInstall(slack.tokens.grant(teams.T6.teamId), state, cookie)).status).toBe(200);
    const exchanges = slack.callsTo('oauth.v2.access').length;
    const replay = await finishInstall(slack.tokens.grant(teams.T6.teamId), state, cookie);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('Hippo was not installed');
    expect(slack.callsTo('oauth.v2.access')).toHaveLength(exchanges);

    const racing = await startInstall();
    const statuses = await Promise.all([1, 2, 3].map(async () => (await finishInstall(slack.tokens.grant(teams.T6.teamId), racing.state, racing.cookie)).status));
    expect(statuses.sort()).toEqual([200, 400, 400]);
    expect(slack.callsTo('oauth.v2.access')).toHaveLength(exchanges + 1);
    expect(slack.tokens.tokensOf(teams.T6.teamId)).toHaveLength(2);
  });

  it('refuses an install into a workspace outside ALLOWED_WORKSPACES: nothing stored, the new token revoked', async () => {
    slack.addWorkspace(teams.T7);
    const { cookie, state } = await startInstall();
    const response = await finishInstall(slack.tokens.grant(teams.T7.teamId), state, cookie);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Hippo was not installed');
    expect(await database.prisma.slackInstallation.count({ where: { teamId: teams.T7.teamId } })).toBe(0);
    const [token] = slack.tokens.tokensOf(teams.T7.teamId);
    expect(slack.callsTo('auth.revoke').map(tokenOf)).toEqual([token]);
  });

  it('answers nothing and stores nothing for a workspace installed before ALLOWED_WORKSPACES left it out', async () => {
    slack.addWorkspace(teams.T8);
    await new SlackInstallationStore(new SlackStore(database.prisma), new SecretBox(encryptionKey)).storeInstallation({
      team: { id: teams.T8.teamId, name: teams.T8.teamName }, enterprise: undefined, user: { id: 'UINSTALLER', token: undefined, scopes: undefined },
      bot: { token: 'xoxb-T0EIGHT-old', userId: teams.T8.botUserId, id: teams.T8.botId, scopes: botScopes }, appId: 'AHIPPO', isEnterpriseInstall: false, authVersion: 'v2',
    });
    const callsBefore = slack.calls.length;
    const root = nextTs();
    expect((await mention(teams.T8.teamId, teams.T8.botUserId, 'spend their money', root)).status).toBe(200);
    const command = await rig.post(new URLSearchParams({
      token: 'legacy', team_id: teams.T8.teamId, channel_id: channel, user_id: 'UPERSON', command: '/hippo', text: 'help', trigger_id: 't', response_url: slack.responseUrl('t8'),
    }).toString(), 'application/x-www-form-urlencoded');
    expect({ status: command.status, body: await command.text() }).toEqual({ status: 200, body: '' });
    const click = {
      type: 'block_actions', team: { id: teams.T8.teamId }, user: { id: 'UPERSON', team_id: teams.T8.teamId }, trigger_id: 't', channel: { id: channel }, message: { ts: root },
      actions: [{ type: 'button', action_id: 'hippo_pause', block_id: 'b', value: '{}', action_ts: '1' }],
    };
    expect((await rig.post(new URLSearchParams({ payload: JSON.stringify(click) }).toString(), 'application/x-www-form-urlencoded')).status).toBe(200);
    // Whatever a listener would have started after its ack (a session, a reply) has had its time.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await database.prisma.session.count({ where: { workspaceId: teams.T8.teamId } })).toBe(0);
    expect(await database.prisma.steerMessage.count({ where: { platformMessageKey: { contains: teams.T8.teamId } } })).toBe(0);
    expect(await database.prisma.processedEvent.count({ where: { key: { contains: root } } })).toBe(0);
    expect(await database.prisma.outboxItem.count({ where: { idempotencyKey: { contains: root } } })).toBe(0);
    // Nothing went to Slack for team eight: no call with its token, no reply to its command.
    expect(slack.calls.slice(callsBefore).filter((call) => tokenOf(call) === 'xoxb-T0EIGHT-old' || call.method.startsWith('response_url')).map((call) => call.method)).toEqual([]);
  });

});

describe('Slack secrets in logs', () => {
  it('never logs a bot or refresh token, the client secret or the encryption key, even at trace level', () => {
    const logged = logLines.join('');
    expect(logged).toContain('slack-installed');
    expect(logged).toContain('slack-token-refreshed');
    const secrets = [slack.options.clientSecret, encryptionKey.toString('base64'), encryptionKey.toString('hex')];
    for (const team of Object.values(teams)) secrets.push(...slack.tokens.tokensOf(team.teamId));
    for (const secret of secrets) expect(logged).not.toContain(secret);
    expect(logged).not.toMatch(/xoxe-1-/);
  });
});
