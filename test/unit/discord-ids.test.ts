import { describe, expect, it } from 'vitest';
import {
  buttonId, dmAddress, mentionPattern, mentionsBot, parseButtonId, parseSteerKey, steerKey, stripMention, threadAddress, threadName,
} from '../../src/adapters/discord/ids.js';
import { inviteUrl, invitePermissions } from '../../src/adapters/discord/invite.js';
import { hippoCommand, parseGuildIds, verbOf } from '../../src/adapters/discord/slash-command.js';
import { commandVerbs } from '../../src/adapters/chat/commands.js';

describe('Discord names', () => {
  it('binds guild threads to guild and parent channel, DMs to "@me"', () => {
    expect(threadAddress('G1', 'C1', 'T1')).toEqual({ platform: 'discord', workspaceId: 'G1', channelId: 'C1', threadKey: 'T1', visibility: 'public' });
    expect(threadAddress('G1', 'C1', 'T1', 'private')).toMatchObject({ visibility: 'private' });
    // A DM is a memory space of its own, whatever MEMORY_SCOPE says.
    expect(dmAddress('D1')).toEqual({ platform: 'discord', workspaceId: '@me', channelId: 'D1', threadKey: 'D1', visibility: 'direct' });
  });

  it('round-trips steer keys and ignores other platforms', () => {
    expect(steerKey('123', '456')).toBe('discord:123:456');
    expect(parseSteerKey(steerKey('123', '456'))).toEqual({ channelId: '123', messageId: '456' });
    expect(parseSteerKey('slack:T1:C1:1700000000.0001')).toBeNull();
  });

  it('round-trips button ids within Discord’s 100 characters', () => {
    const session = '8c7d0a52-3f55-4a53-9d5e-0c6c2a9f6b1e';
    const run = '0f1e2d3c-4b5a-4968-8776-655443322110';
    const id = buttonId('revert', session, run);
    expect(id.length).toBeLessThanOrEqual(100);
    expect(parseButtonId(id)).toEqual({ action: 'revert', sessionId: session, memoryRunId: run, document: null });
    expect(parseButtonId(buttonId('pause', session))).toEqual({ action: 'pause', sessionId: session, memoryRunId: null, document: null });
    // R13's "undo both" names the document (by index) and the version the person saw.
    const undo = buttonId('undo', session, run, { index: 12, version: 123456 });
    expect(undo.length).toBeLessThanOrEqual(100);
    expect(parseButtonId(undo)).toEqual({ action: 'undo', sessionId: session, memoryRunId: run, document: { index: 12, version: 123456 } });
    expect(parseButtonId(`${buttonId('undo', session, run)}:x.1`)?.document).toBeNull();
    expect(parseButtonId('other:pause:x')).toBeNull();
    expect(parseButtonId('hippo:explode:x')).toBeNull();
  });

  it('names threads from the first line of the request, at most 100 characters', () => {
    expect(threadName('\n  plan   the migration \nwith details')).toBe('plan the migration');
    expect(threadName('x'.repeat(150))).toHaveLength(100);
    expect(threadName('x'.repeat(150)).endsWith('…')).toBe(true);
    expect(threadName('   ')).toBe('Hippo');
  });

  it('finds and strips mentions of the bot user (both forms) and of its managed role', () => {
    const pattern = mentionPattern('42', '99');
    expect(mentionsBot('<@42> hi', pattern)).toBe(true);
    expect(mentionsBot('<@!42> hi', pattern)).toBe(true);
    expect(mentionsBot('<@&99> hi', pattern)).toBe(true);
    expect(mentionsBot('<@420> hi <@&9>', pattern)).toBe(false);
    expect(mentionsBot('<@&99> hi', mentionPattern('42'))).toBe(false);
    expect(stripMention('<@42> status', pattern)).toBe('status');
    expect(stripMention('hey <@!42>   look at <@7> <@&99>', pattern)).toBe('hey look at <@7>');
  });
});

describe('Discord set-up', () => {
  it('asks for exactly the permissions the docs list', () => {
    expect(invitePermissions).toBe(311_385_246_784n);
    const url = new URL(inviteUrl('123'));
    expect(url.searchParams.get('scope')).toBe('bot applications.commands');
    expect(url.searchParams.get('permissions')).toBe('311385246784');
    expect(url.searchParams.get('client_id')).toBe('123');
  });

  it('defines /hippo with one choice per command verb within Discord’s limits', () => {
    const command = hippoCommand();
    const option = command.options?.[0];
    expect(command.name).toBe('hippo');
    expect(command.description.length).toBeLessThanOrEqual(100);
    expect(option && 'choices' in option ? option.choices?.map((choice) => choice.value) : []).toEqual([...commandVerbs]);
    expect(commandVerbs.length).toBeLessThanOrEqual(25);
    expect(verbOf('pause')).toBe('pause');
    expect(verbOf('explode')).toBeNull();
    expect(parseGuildIds(' 1, 2,,3 ')).toEqual(['1', '2', '3']);
    expect(parseGuildIds(undefined)).toEqual([]);
  });
});
