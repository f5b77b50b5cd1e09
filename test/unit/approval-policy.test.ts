// R23: which tool calls wait for a person (APPROVAL_REQUIRED, APPROVAL_EXEMPT), and the card's
// words: the exact call, escaped and capped in near-linear time.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AccessPolicy, type Requester } from '../../src/adapters/chat/access-policy.js';
import { approvalCallText, approvalOutcomeLine, codeBlock } from '../../src/adapters/chat/approval-card.js';
import type { ApprovalRecord } from '../../src/core/approval-store.js';
import { ConfigError } from '../../src/core/errors.js';
import { defaultApprovalRequired, isReadOnly, resolveApprovalPolicy, type PolicyTool } from '../../src/core/approval-policy.js';
import type { AnyTool } from '../../src/core/tool.js';
import { EventBus } from '../../src/core/events.js';
import type { SessionRecord } from '../../src/core/store.js';
import { Metrics } from '../../src/metrics.js';

const tool = (name: string, extra: Partial<AnyTool> = {}): AnyTool => ({ name, description: name, input: z.unknown(), execute: async () => '', ...extra });

const tools: PolicyTool[] = [
  { tool: tool('memory_write'), group: 'memory' },
  { tool: tool('read_file', { readOnly: true }), group: 'workspace' },
  { tool: tool('write_file'), group: 'workspace' },
  { tool: tool('web_fetch'), group: 'web' },
  { tool: tool('shell'), group: 'shell' },
  { tool: tool('github__list_issues', { mcp: { server: 'github', tool: 'list_issues', readOnlyHint: true } }), group: 'mcp' },
  { tool: tool('github__create_issue', { mcp: { server: 'github', tool: 'create_issue', readOnlyHint: false, destructiveHint: false } }), group: 'mcp' },
  { tool: tool('github__merge_pr', { mcp: { server: 'github', tool: 'merge_pr' } }), group: 'mcp' },
  // Read-only and destructive at once contradicts itself: treated as not read-only.
  { tool: tool('db__query', { mcp: { server: 'db', tool: 'query', readOnlyHint: true, destructiveHint: true } }), group: 'mcp' },
];

const asking = (required: string, exempt = '') => resolveApprovalPolicy(tools, required, exempt).tools;

describe('approval policy (R23)', () => {
  it('asks by default for shell commands and every MCP tool its server does not mark read-only', () => {
    expect(defaultApprovalRequired).toBe('shell,mcp');
    expect(asking(defaultApprovalRequired)).toEqual(['db__query', 'github__create_issue', 'github__merge_pr', 'shell']);
  });

  it('selects by group (skipping read-only tools), by server, by MCP tool and by name; memory tools never ask', () => {
    expect(asking('workspace,memory')).toEqual(['write_file']);
    expect(asking('mcp:github')).toEqual(['github__create_issue', 'github__merge_pr']);
    expect(asking('mcp:github/list_issues')).toEqual(['github__list_issues']);
    expect(asking('web_fetch, read_file')).toEqual(['read_file', 'web_fetch']);
    expect(asking('memory_write')).toEqual([]);
    expect(asking('none')).toEqual([]);
    expect(asking('')).toEqual([]);
  });

  it('lets APPROVAL_EXEMPT win over APPROVAL_REQUIRED', () => {
    expect(asking('shell,mcp', 'mcp:github/create_issue')).toEqual(['db__query', 'github__merge_pr', 'shell']);
    expect(asking('shell,mcp', 'mcp:github,shell')).toEqual(['db__query']);
    expect(asking('shell,mcp', 'mcp')).toEqual(['shell']);
  });

  it('stops start-up with one line naming the setting for a selector that names nothing', () => {
    expect(() => asking('shel')).toThrow(ConfigError);
    expect(() => asking('shel')).toThrow(/^APPROVAL_REQUIRED: "shel" is neither a tool group/);
    expect(() => asking('shell', 'mcp:')).toThrow(/^APPROVAL_EXEMPT: "mcp:" is not mcp:<server> or mcp:<server>\/<tool>$/);
    expect(() => asking('mcp:github/')).toThrow(ConfigError);
    // A server that failed to start has no tools: naming it is no error.
    expect(asking('mcp:linear')).toEqual([]);
  });

  it('reads MCP annotations as hints: read-only only when not also destructive', () => {
    expect(isReadOnly({ mcp: { server: 's', tool: 't', readOnlyHint: true } })).toBe(true);
    expect(isReadOnly({ mcp: { server: 's', tool: 't', readOnlyHint: true, destructiveHint: true } })).toBe(false);
    expect(isReadOnly({ mcp: { server: 's', tool: 't' } })).toBe(false);
    expect(isReadOnly({ readOnly: true })).toBe(true);
  });
});

describe('who decides (R23)', () => {
  const person = (userId: string, groups: string[] = []): Requester => ({ userId, inGroup: async (group) => groups.includes(group) });
  const lists = { allowedUsers: [], allowedChannels: [], adminUsers: ['UADMIN'] };

  it('lets the starter and admins decide when APPROVERS is unset', async () => {
    const policy = new AccessPolicy(lists);
    expect(await policy.mayApprove(person('UADA'), { startedBy: 'UADA' })).toBe(true);
    expect(await policy.mayApprove(person('UADMIN'), { startedBy: 'UADA' })).toBe(true);
    expect(await policy.mayApprove(person('UBOB'), { startedBy: 'UADA' })).toBe(false);
    expect(await policy.mayApprove(person('UBOB'), { startedBy: null })).toBe(false);
  });

  it('lets approvers (and their groups) and admins decide when APPROVERS is set, not the starter', async () => {
    const policy = new AccessPolicy({ ...lists, approvers: ['UONCALL', 'SOPS'] });
    expect(await policy.mayApprove(person('UONCALL'), { startedBy: 'UADA' })).toBe(true);
    expect(await policy.mayApprove(person('UBOB', ['SOPS']), { startedBy: 'UADA' })).toBe(true);
    expect(await policy.mayApprove(person('UADMIN'), { startedBy: 'UADA' })).toBe(true);
    expect(await policy.mayApprove(person('UADA'), { startedBy: 'UADA' })).toBe(false);
  });
});

describe('the approval card (R23)', () => {
  const approval = (arguments_: string, tool = 'shell'): Pick<ApprovalRecord, 'tool' | 'arguments'> => ({ tool, arguments: arguments_ });

  it('shows a shell command as it will run, and any other tool with its arguments', () => {
    expect(approvalCallText(approval(JSON.stringify({ command: 'gh pr merge 12', timeout_seconds: 30 })))).toBe('gh pr merge 12\n# time limit 30 s');
    expect(approvalCallText(approval(JSON.stringify({ repo: 'a/b', number: 12 }), 'github__merge_pr'))).toBe('{\n  "repo": "a/b",\n  "number": 12\n}');
    expect(approvalCallText(approval('{not json'))).toBe('{not json');
  });

  it('keeps the call inside its code block and says when it is cut, in near-linear time on 2 MiB', () => {
    expect(codeBlock('a ``` b')).toBe('```\na `\u200b`\u200b`\u200b b\n```');
    const huge = '`'.repeat(2 * 1024 * 1024);
    const block = codeBlock(approvalCallText(approval(JSON.stringify({ command: huge }))));
    expect(block.length).toBeLessThan(4_000);
    expect(block).toMatch(/\n⚠️ Only the first 1,500 of 2,097,152 characters are shown: deny it if you cannot see what it does\.$/);
    expect(block.split('```').length).toBe(3);
  });

  it('says who decided what and when', () => {
    const decided: ApprovalRecord = {
      id: 'a', sessionId: 's', segmentId: 'g', messageSeq: 3, callId: 'c', tool: 'shell', arguments: '{}', runStartStep: 0, requestedBy: 'Ada',
      status: 'denied', scope: 'call', decidedById: 'U1', decidedByName: 'Bea', note: 'not on prod', createdAt: new Date(0), expiresAt: new Date(0), decidedAt: new Date('2026-12-07T13:05:00Z'),
    };
    expect(approvalOutcomeLine(decided)).toBe('🚫 Denied by Bea at 13:05 UTC: "not on prod".');
    expect(approvalOutcomeLine({ ...decided, status: 'approved', scope: 'run', note: null })).toBe('✅ Approved by Bea at 13:05 UTC, with `shell` for the rest of this run.');
    expect(approvalOutcomeLine({ ...decided, status: 'expired', decidedByName: null })).toBe('⌛ Nobody decided in time at 13:05 UTC: denied.');
  });
});

describe('the approvals metric (R23)', () => {
  it('counts each decision once, where it was taken, by outcome', async () => {
    const events = new EventBus(() => undefined);
    const metrics = new Metrics({ events });
    const session = { id: 's' } as SessionRecord;
    const base: ApprovalRecord = {
      id: 'a', sessionId: 's', segmentId: 'g', messageSeq: 3, callId: 'c', tool: 'shell', arguments: '{}', runStartStep: 0, requestedBy: '',
      status: 'approved', scope: 'call', decidedById: null, decidedByName: null, note: null, createdAt: new Date(0), expiresAt: new Date(0), decidedAt: null,
    };
    events.emit({ type: 'approval-decided', session, approval: base, first: true });
    // Seen decided again by a drive (after a restart): not counted again.
    events.emit({ type: 'approval-decided', session, approval: base, first: false });
    events.emit({ type: 'approval-decided', session, approval: { ...base, scope: 'run' }, first: true });
    events.emit({ type: 'approval-decided', session, approval: { ...base, status: 'expired' }, first: true });
    const values = (await metrics.registry.getSingleMetric('hippo_tool_approvals_total')?.get())?.values ?? [];
    expect(Object.fromEntries(values.map((value) => [value.labels['outcome'], value.value]))).toEqual({ approved: 1, approved_for_run: 1, expired: 1 });
  });
});
