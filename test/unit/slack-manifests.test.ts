// The two Slack app manifests people paste into api.slack.com: one for the Events API (a public
// URL), one for Socket Mode (none). They must ask for the same things, differing only in transport.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

type Manifest = {
  features: { slash_commands: Array<Record<string, unknown>> };
  oauth_config: unknown;
  settings: { socket_mode_enabled: boolean; event_subscriptions: Record<string, unknown>; interactivity: Record<string, unknown> };
};
const read = (name: string) => JSON.parse(readFileSync(new URL(`../../slack/${name}`, import.meta.url), 'utf8')) as Manifest;

describe('Slack manifests', () => {
  const http = read('manifest.json');
  const socket = read('manifest.socket-mode.json');

  it('turns Socket Mode on and names no public URL in the Socket Mode manifest', () => {
    expect(socket.settings.socket_mode_enabled).toBe(true);
    expect(JSON.stringify(socket)).not.toMatch(/https?:\/\//);
    expect(http.settings.socket_mode_enabled).toBe(false);
    expect(JSON.stringify(http)).toContain('https://YOUR_HOST/slack/events');
  });

  it('asks for the same scopes, events, commands and interactivity in both', () => {
    // Socket Mode has no public URL, so no OAuth redirect: it is installed with SLACK_BOT_TOKEN.
    expect(socket.oauth_config).toEqual({ scopes: (http.oauth_config as { scopes: unknown }).scopes });
    expect(socket.settings.event_subscriptions['bot_events']).toEqual(http.settings.event_subscriptions['bot_events']);
    const withoutUrl = (command: Record<string, unknown>) => Object.fromEntries(Object.entries(command).filter(([key]) => key !== 'url'));
    expect(socket.features.slash_commands).toEqual(http.features.slash_commands.map(withoutUrl));
    expect(socket.settings.interactivity['is_enabled']).toBe(true);
  });
});
