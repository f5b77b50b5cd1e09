import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { botScopes } from '../../src/adapters/slack/scopes.js';

const manifest = JSON.parse(readFileSync(new URL('../../slack/manifest.json', import.meta.url), 'utf8')) as {
  features: { assistant_view?: unknown };
  oauth_config: { scopes: { bot: string[] }; redirect_urls: string[] };
  settings: { event_subscriptions: { bot_events: string[] } };
};

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
    // assistant:write works only for apps with the assistant view.
    expect(manifest.features.assistant_view).toBeDefined();
  });
});
