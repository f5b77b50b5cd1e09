// The chat adapters share shapes, not only file names (CONTRIBUTING.md "Adding a chat adapter",
// src/adapters/chat/chat-adapter.ts): each role file exports one class `<Platform><Role>` that
// implements the role's type, `index.ts` exports one start function, and a file name that two
// adapters share holds the same kind of export in both. The types are checked by `npm run
// typecheck` (the table below must satisfy the role types); the kinds are read from the modules.
import { existsSync, readdirSync } from 'node:fs';
import type { Client } from 'discord.js';
import { describe, expect, it } from 'vitest';
import type { ChatDelivery, ChatInbound, ChatInteractions, ChatReactions, ChatRenderer, StartChatAdapter } from '../../src/adapters/chat/chat-adapter.js';
import { ConsoleRenderer } from '../../src/adapters/console/renderer.js';
import { DiscordDelivery } from '../../src/adapters/discord/deliver.js';
import { DiscordInbound } from '../../src/adapters/discord/inbound.js';
import { startDiscordAdapter, type DiscordAdapter, type DiscordAdapterOptions } from '../../src/adapters/discord/index.js';
import { DiscordInteractions } from '../../src/adapters/discord/interactions.js';
import { DiscordReactions } from '../../src/adapters/discord/reactions.js';
import { DiscordRenderer } from '../../src/adapters/discord/renderer.js';
import { SlackDelivery } from '../../src/adapters/slack/deliver.js';
import { SlackInbound } from '../../src/adapters/slack/inbound.js';
import { startSlackAdapter, type SlackAdapter, type SlackAdapterOptions } from '../../src/adapters/slack/index.js';
import { SlackInteractions } from '../../src/adapters/slack/interactions.js';
import { SlackReactions } from '../../src/adapters/slack/reactions.js';
import { SlackRenderer } from '../../src/adapters/slack/renderer.js';
import type { SlackListeners } from '../../src/adapters/slack/routes.js';

/** A role file's class, by what its instances are (any constructor arguments). */
type RoleClass<Role> = abstract new (...args: never[]) => Role;

/** The role classes of an adapter that listens on `On`. */
interface RoleClasses<On> {
  inbound: RoleClass<ChatInbound<On>>;
  interactions: RoleClass<ChatInteractions<On>>;
  reactions: RoleClass<ChatReactions<On>>;
  renderer: RoleClass<ChatRenderer>;
  deliver: RoleClass<ChatDelivery>;
}

/** What `npm run typecheck` holds each adapter to; the runtime checks below find the same classes. */
const typed = {
  slack: { inbound: SlackInbound, interactions: SlackInteractions, reactions: SlackReactions, renderer: SlackRenderer, deliver: SlackDelivery } satisfies RoleClasses<SlackListeners>,
  discord: { inbound: DiscordInbound, interactions: DiscordInteractions, reactions: DiscordReactions, renderer: DiscordRenderer, deliver: DiscordDelivery } satisfies RoleClasses<Client>,
  // The terminal chat plays one role: it runs in the foreground, with no outbox to deliver from.
  console: { renderer: ConsoleRenderer } satisfies Pick<RoleClasses<never>, 'renderer'>,
};
startSlackAdapter satisfies StartChatAdapter<SlackAdapterOptions, SlackAdapter>;
startDiscordAdapter satisfies StartChatAdapter<DiscordAdapterOptions, DiscordAdapter>;

/** Role → the class name's suffix and the methods its prototype has (fields such as `deliver` are typed only). */
const roles = {
  inbound: { suffix: 'Inbound', methods: ['register', 'idle'] },
  interactions: { suffix: 'Interactions', methods: ['register'] },
  reactions: { suffix: 'Reactions', methods: ['register'] },
  renderer: { suffix: 'Renderer', methods: ['handle'] },
  deliver: { suffix: 'Delivery', methods: [] },
} as const;
type Role = keyof typeof roles;

/** Each adapter folder, its class prefix, and the file of each role it plays. */
const adapters: Record<keyof typeof typed, { prefix: string; files: Partial<Record<Role, string>>; start?: string }> = {
  slack: { prefix: 'Slack', files: { inbound: 'inbound.ts', interactions: 'interactions.ts', reactions: 'reactions.ts', renderer: 'renderer.ts', deliver: 'deliver.ts' }, start: 'startSlackAdapter' },
  discord: { prefix: 'Discord', files: { inbound: 'inbound.ts', interactions: 'interactions.ts', reactions: 'reactions.ts', renderer: 'renderer.ts', deliver: 'deliver.ts' }, start: 'startDiscordAdapter' },
  console: { prefix: 'Console', files: { renderer: 'renderer.ts' } },
};

type ExportKind = 'class' | 'function' | 'value';

/** What a module's runtime export is: a class, a plain function, or a value (types leave nothing). */
function kindOf(value: unknown): ExportKind {
  if (typeof value !== 'function') return 'value';
  return /^class[\s{]/.test(Function.prototype.toString.call(value)) ? 'class' : 'function';
}

/** The kind of a file: 'class' when it exports a class, else 'functions' when it exports a function, else 'values'. */
function fileKind(module: Record<string, unknown>): 'class' | 'functions' | 'values' {
  const kinds = Object.values(module).map(kindOf);
  return kinds.includes('class') ? 'class' : kinds.includes('function') ? 'functions' : 'values';
}

/** The exports of a module, by kind. */
function exportsOf(module: Record<string, unknown>, kind: ExportKind): Array<[string, unknown]> {
  return Object.entries(module).filter(([, value]) => kindOf(value) === kind);
}

async function load(folder: string, file: string): Promise<Record<string, unknown>> {
  return (await import(/* @vite-ignore */ `../../src/adapters/${folder}/${file.replace(/\.ts$/, '.js')}`)) as Record<string, unknown>;
}

/** Same-named files of two adapter folders whose kinds differ: `file: kind / kind`. */
async function mismatchedPairs(left: string, right: string, root = 'src/adapters'): Promise<string[]> {
  const names = (folder: string) => new Set(readdirSync(`${root}/${folder}`).filter((name) => name.endsWith('.ts')));
  const shared = [...names(left)].filter((name) => names(right).has(name)).sort();
  const found: string[] = [];
  for (const file of shared) {
    const [a, b] = [fileKind(await load(left, file)), fileKind(await load(right, file))];
    if (a !== b) found.push(`${file}: ${a} / ${b}`);
  }
  return found;
}

describe('chat adapter shape', () => {
  for (const [folder, adapter] of Object.entries(adapters) as Array<[keyof typeof typed, (typeof adapters)[keyof typeof typed]]>) {
    for (const [role, file] of Object.entries(adapter.files) as Array<[Role, string]>) {
      it(`${folder}/${file} exports one class ${adapter.prefix}${roles[role].suffix} with the ${role} role's methods`, async () => {
        expect(existsSync(`src/adapters/${folder}/${file}`), `${folder} has no ${role} file ${file}`).toBe(true);
        const classes = exportsOf(await load(folder, file), 'class');
        expect(classes.map(([name]) => name)).toEqual([`${adapter.prefix}${roles[role].suffix}`]);
        const [, found] = classes[0] ?? [];
        // The class the types were checked on is the one the file exports.
        expect(found).toBe((typed[folder] as Partial<Record<Role, unknown>>)[role]);
        const prototype = (found as { prototype: Record<string, unknown> }).prototype;
        for (const method of roles[role].methods) expect(typeof prototype[method], `${adapter.prefix}${roles[role].suffix}.${method}`).toBe('function');
      });
    }
    const { start } = adapter;
    if (start) {
      it(`${folder}/index.ts exports one start function, ${start}, and no class`, async () => {
        const module = await load(folder, 'index.ts');
        expect(exportsOf(module, 'class')).toEqual([]);
        expect(exportsOf(module, 'function').map(([name]) => name).filter((name) => name.startsWith('start'))).toEqual([start]);
      });
    }
  }

  it('gives every file name Slack and Discord share the same kind of export in both', async () => {
    expect(await mismatchedPairs('slack', 'discord')).toEqual([]);
  });

  it('tells a class from a function and a value', () => {
    class Example {}
    const arrow = () => undefined;
    expect([kindOf(Example), kindOf(function named() {}), kindOf(arrow), kindOf({}), kindOf('x')]).toEqual(['class', 'function', 'function', 'value', 'value']);
    expect([fileKind({ Example, arrow }), fileKind({ arrow, x: 1 }), fileKind({ x: 1 })]).toEqual(['class', 'functions', 'values']);
  });
});
