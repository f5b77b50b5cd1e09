import { describe, expect, it } from 'vitest';
import { checkMemoryAccess, parseMemoryEditors, type AccessRequest, type AccessResolver, type MemoryAction } from '../../src/adapters/chat/memory-access.js';
import type { MemorySpaceRecord } from '../../src/core/store.js';

const space: MemorySpaceRecord = { id: 's1', platform: 'slack', workspaceId: 'T1', scope: 'channel', channelId: 'C1' };
const members: Record<string, string[]> = { C1: ['UADA', 'UBOB'] };
const groups: Record<string, string[]> = { SEDIT: ['UBOB'] };
/** Guests and people from other organisations (Slack Connect) are not full members. */
const outsiders = ['UGUEST', 'UCONNECT'];
const resolver: AccessResolver = {
  isMember: async (_workspace, channel, user) => (members[channel] ?? []).includes(user),
  isWorkspaceMember: async (_workspace, user) => !outsiders.includes(user),
  isEditor: async (request, editors) => editors.has(request.userId) || [...editors].some((group) => (groups[group] ?? []).includes(request.userId)) || (request.groupIds ?? []).some((role) => editors.has(role)),
};
const request = (overrides: Partial<AccessRequest> = {}): AccessRequest => ({ platform: 'slack', workspaceId: 'T1', channelId: 'C1', userId: 'UADA', ...overrides });
const changes: MemoryAction[] = ['edit', 'revert', 'pin'];
const all: MemoryAction[] = ['view', 'history', ...changes];

describe('checkMemoryAccess', () => {
  it('lets members of the owning conversation do everything when MEMORY_EDITORS is unset', async () => {
    for (const action of all) expect(await checkMemoryAccess(space, action, request(), resolver, null)).toEqual({ allowed: true });
    // From elsewhere (App Home), membership decides.
    expect(await checkMemoryAccess(space, 'edit', request({ channelId: null, userId: 'UBOB' }), resolver, null)).toEqual({ allowed: true });
  });

  it('refuses another workspace or platform, and a person who is not in the conversation, for every action', async () => {
    for (const action of all) {
      expect(await checkMemoryAccess(space, action, request({ workspaceId: 'T2' }), resolver, null)).toMatchObject({ allowed: false, reason: expect.stringContaining('another workspace') });
      expect(await checkMemoryAccess(space, action, request({ platform: 'discord' }), resolver, null)).toMatchObject({ allowed: false });
      expect(await checkMemoryAccess(space, action, request({ channelId: 'C2', userId: 'UDAVE' }), resolver, null)).toMatchObject({ allowed: false, reason: expect.stringContaining('not in') });
      expect(await checkMemoryAccess(space, action, request({ channelId: null, userId: 'UDAVE' }), resolver, null)).toMatchObject({ allowed: false });
    }
  });

  it('treats a failing membership look-up as a refusal', async () => {
    const failing: AccessResolver = { ...resolver, isMember: async () => Promise.reject(new Error('slack is down')) };
    expect(await checkMemoryAccess(space, 'view', request({ channelId: null }), failing, null)).toMatchObject({ allowed: false });
  });

  it("lets the workspace's full members see a workspace-wide space, not guests or people from other organisations", async () => {
    const shared = { ...space, channelId: null };
    expect(await checkMemoryAccess(shared, 'view', request({ channelId: 'C9', userId: 'UDAVE' }), resolver, null)).toEqual({ allowed: true });
    for (const userId of outsiders) {
      for (const action of all) expect(await checkMemoryAccess(shared, action, request({ channelId: 'C9', userId }), resolver, null)).toMatchObject({ allowed: false, reason: expect.stringContaining('guests') });
    }
    const failing: AccessResolver = { ...resolver, isWorkspaceMember: async () => Promise.reject(new Error('slack is down')) };
    expect(await checkMemoryAccess(shared, 'view', request({ channelId: 'C9' }), failing, null)).toMatchObject({ allowed: false });
  });

  it('narrows changes to MEMORY_EDITORS (people, user groups, roles); viewing stays with members', async () => {
    const editors = parseMemoryEditors('UADA, SEDIT ,R1');
    for (const action of changes) {
      expect(await checkMemoryAccess(space, action, request(), resolver, editors)).toEqual({ allowed: true });
      expect(await checkMemoryAccess(space, action, request({ userId: 'UBOB' }), resolver, editors)).toEqual({ allowed: true });
      expect(await checkMemoryAccess(space, action, request({ userId: 'UCAROL' }), resolver, editors)).toMatchObject({ allowed: false, reason: expect.stringContaining('MEMORY_EDITORS') });
      expect(await checkMemoryAccess(space, action, request({ userId: 'UCAROL', groupIds: ['R1'] }), resolver, editors)).toEqual({ allowed: true });
    }
    for (const action of ['view', 'history'] as const) expect(await checkMemoryAccess(space, action, request({ userId: 'UCAROL' }), resolver, editors)).toEqual({ allowed: true });
  });

  it('reads MEMORY_EDITORS: empty means no narrowing', () => {
    expect(parseMemoryEditors(undefined)).toBeNull();
    expect(parseMemoryEditors(' , ')).toBeNull();
    expect([...(parseMemoryEditors('U1,S2, 3')!)]).toEqual(['U1', 'S2', '3']);
  });

  it('counts Hippo admins as editors when MEMORY_EDITORS is set, never as members of a conversation', async () => {
    expect(parseMemoryEditors(undefined, ['UADMIN'])).toBeNull();
    const editors = parseMemoryEditors('UADA', ['UADMIN']);
    expect(await checkMemoryAccess(space, 'edit', request({ userId: 'UADMIN' }), resolver, editors)).toEqual({ allowed: true });
    const outsider = request({ userId: 'UADMIN', channelId: null });
    const strangerResolver: AccessResolver = { ...resolver, isMember: async () => false };
    expect(await checkMemoryAccess(space, 'view', outsider, strangerResolver, editors)).toMatchObject({ allowed: false });
  });
});
