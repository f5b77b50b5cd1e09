import { describe, expect, it } from 'vitest';
import { AccessPolicy, type AccessLists, type Requester } from '../../src/adapters/chat/access-policy.js';

const none: AccessLists = { allowedUsers: [], allowedChannels: [], adminUsers: [] };

/** A person with a user id and the groups (user groups or roles) they belong to. */
function person(userId: string, groups: string[] = []): Requester & { asked: string[] } {
  const asked: string[] = [];
  return {
    userId,
    asked,
    inGroup: async (groupId) => {
      asked.push(groupId);
      return groups.includes(groupId);
    },
  };
}

const channel = { channelId: 'C1', direct: false };
const dm = { channelId: 'D1', direct: true };

describe('AccessPolicy', () => {
  it('lets anyone start, steer and reset when no list is set, without asking for groups', async () => {
    const policy = new AccessPolicy(none);
    const stranger = person('U9');
    expect(await policy.mayStart(stranger, channel)).toEqual({ allowed: true });
    expect(await policy.maySteer(stranger)).toEqual({ allowed: true });
    // The starter rule holds even with no list: only the starter (or an admin) resets.
    expect((await policy.mayCommand('reset', stranger, { startedBy: 'U1' })).allowed).toBe(false);
    expect((await policy.mayCommand('reset', person('U1'), { startedBy: 'U1' })).allowed).toBe(true);
    expect(stranger.asked).toEqual([]);
  });

  it('limits starting and steering to listed users and members of listed groups', async () => {
    const policy = new AccessPolicy({ ...none, allowedUsers: ['U1', 'S1'] });
    expect((await policy.mayStart(person('U1'), channel)).allowed).toBe(true);
    expect((await policy.mayStart(person('U2', ['S1']), channel)).allowed).toBe(true);
    const refused = await policy.mayStart(person('U3', ['S2']), channel);
    expect(refused).toMatchObject({ allowed: false, rule: 'user' });
    expect((await policy.maySteer(person('U3'))).allowed).toBe(false);
    expect((await policy.maySteer(person('U2', ['S1']))).allowed).toBe(true);
  });

  it('limits starting to listed channels; `dm` stands for direct messages; steering is not limited by channel', async () => {
    const policy = new AccessPolicy({ ...none, allowedChannels: ['C1'] });
    expect((await policy.mayStart(person('U1'), channel)).allowed).toBe(true);
    expect(await policy.mayStart(person('U1'), { channelId: 'C2', direct: false })).toMatchObject({ allowed: false, rule: 'channel' });
    expect((await policy.mayStart(person('U1'), dm)).allowed).toBe(false);
    expect((await policy.maySteer(person('U1'))).allowed).toBe(true);
    const withDms = new AccessPolicy({ ...none, allowedChannels: ['C1', 'dm'] });
    expect((await withDms.mayStart(person('U1'), dm)).allowed).toBe(true);
    expect((await withDms.mayStart(person('U1'), { channelId: 'C2', direct: false })).allowed).toBe(false);
  });

  it('needs both the user and the channel rule when both lists are set', async () => {
    const policy = new AccessPolicy({ ...none, allowedUsers: ['U1'], allowedChannels: ['C1'] });
    expect((await policy.mayStart(person('U1'), channel)).allowed).toBe(true);
    expect((await policy.mayStart(person('U2'), channel)).allowed).toBe(false);
    expect((await policy.mayStart(person('U1'), { channelId: 'C2', direct: false })).allowed).toBe(false);
  });

  it('lets admins (users or group members) start anywhere, steer and reset any session', async () => {
    const policy = new AccessPolicy({ allowedUsers: ['U1'], allowedChannels: ['C1'], adminUsers: ['UADMIN', 'SADMINS'] });
    for (const admin of [person('UADMIN'), person('U7', ['SADMINS'])]) {
      expect((await policy.mayStart(admin, { channelId: 'C9', direct: false })).allowed).toBe(true);
      expect((await policy.maySteer(admin)).allowed).toBe(true);
      expect((await policy.mayCommand('reset', admin, { startedBy: 'U1' })).allowed).toBe(true);
    }
  });

  it('lets only the starter and admins reset or stop; anyone who may steer pauses, resumes and reads', async () => {
    const policy = new AccessPolicy({ ...none, adminUsers: ['UADMIN'] });
    const session = { startedBy: 'U1' };
    const other = person('U2');
    for (const verb of ['reset', 'stop', 'budget']) {
      expect(await policy.mayCommand(verb, other, session)).toMatchObject({ allowed: false, rule: 'starter', message: expect.stringMatching(/^Only the person who started this session, or a Hippo admin, may (reset|stop) it\.$|raise its budget\.$/) });
      expect((await policy.mayCommand(verb, person('U1'), session)).allowed).toBe(true);
    }
    for (const verb of ['pause', 'resume', 'status', 'memory', 'revert', 'help']) expect((await policy.mayCommand(verb, other, session)).allowed).toBe(true);
    // A session from before starters were recorded keeps the old behaviour.
    expect((await policy.mayCommand('reset', other, { startedBy: null })).allowed).toBe(true);
  });

  it('refuses every command but help to someone who may not steer', async () => {
    const policy = new AccessPolicy({ ...none, allowedUsers: ['U1'] });
    const stranger = person('U2');
    expect(await policy.mayCommand('pause', stranger, { startedBy: 'U1' })).toMatchObject({ allowed: false, rule: 'user' });
    expect(await policy.mayCommand('reset', stranger, { startedBy: 'U2' })).toMatchObject({ allowed: false, rule: 'user' });
    expect((await policy.mayCommand('help', stranger, { startedBy: 'U1' })).allowed).toBe(true);
  });
});
