import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commandUsage, commandVerbs } from '../../src/adapters/chat/commands.js';
import { botScopes } from '../../src/adapters/slack/workspaces/scopes.js';

interface Manifest {
  features: { assistant_view?: unknown; agent_view?: { agent_description?: string }; slash_commands: Array<{ command: string; usage_hint: string }> };
  oauth_config: { scopes: { bot: string[] }; redirect_urls: string[] };
  settings: { event_subscriptions: { bot_events: string[] } };
}

const read = (name: string): Manifest => JSON.parse(readFileSync(new URL(`../../slack/${name}`, import.meta.url), 'utf8')) as Manifest;
const manifest = read('manifest.json');
const manifests = [manifest, read('manifest.socket-mode.json')];

describe('slack/manifest.json', () => {
  it('asks for exactly the bot scopes the install URL requests', () => {
    expect([...manifest.oauth_config.scopes.bot].sort()).toEqual([...botScopes].sort());
  });

  it('subscribes to every event Hippo handles, and names the OAuth redirect', () => {
    expect(manifest.settings.event_subscriptions.bot_events).toEqual(expect.arrayContaining([
      'app_mention', 'message.channels', 'message.groups', 'message.im', 'message.mpim',
      'assistant_thread_started', 'reaction_added', 'app_uninstalled', 'tokens_revoked',
      'member_joined_channel', 'member_left_channel', 'subteam_members_changed', 'subteam_updated',
    ]));
    expect(manifest.oauth_config.redirect_urls).toEqual(['https://YOUR_HOST/slack/oauth_redirect']);
  });

  it('turns on the agent view (assistant:write needs it), not the assistant view Slack is replacing', () => {
    for (const each of manifests) {
      expect(each.features.agent_view?.agent_description).toMatch(/\S/);
      expect(each.features.assistant_view).toBeUndefined();
      // Clients still on the assistant view send assistant_thread_started: Hippo keeps greeting there.
      expect(each.settings.event_subscriptions.bot_events).toEqual(expect.arrayContaining(['assistant_thread_started', 'app_home_opened']));
    }
  });

  it("lists every command in the /hippo usage hint, written as people type it", () => {
    for (const each of manifests) {
      const hint = each.features.slash_commands.find((command) => command.command === '/hippo')?.usage_hint ?? '';
      const said = hint.split('|').map((entry) => entry.trim().split(' <')[0]);
      for (const verb of commandVerbs) expect(said).toContain(commandUsage(verb));
    }
  });
});
