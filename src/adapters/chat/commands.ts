// The words people can say to Hippo instead of a request (mention or slash command), parsed the
// same way on every platform: "verb" alone, or "verb rest" for the verbs that take text.

/** Every command verb, in the order help lists them. */
export const commandVerbs = ['pause', 'resume', 'stop', 'reset', 'status', 'memory', 'search', 'export', 'revert', 'remember', 'forget', 'pin', 'budget', 'help'] as const;

/** A known command word. */
export type CommandVerb = (typeof commandVerbs)[number];

/** Verbs followed by text ("remember the deploy is on Friday"). */
export const textVerbs: ReadonlySet<CommandVerb> = new Set(['remember', 'forget', 'pin', 'search']);

/** Verbs that take what follows them: the text verbs, and budget ("budget 5"). */
const argumentVerbs: ReadonlySet<CommandVerb> = new Set([...textVerbs, 'budget']);

/** A parsed command: a verb with the rest of the text, or the unknown first word. */
export type ParsedCommand = { verb: CommandVerb; rest: string } | { unknown: string };

/** Parses "pause", "Status please", "/hippo memory", "remember the deploy is on Friday"; empty text means help. */
export function parseCommand(text: string): ParsedCommand {
  const trimmed = text.trim().replace(/^\/hippo\b/i, '').trim();
  if (trimmed === '') return { verb: 'help', rest: '' };
  const first = /^\S+/.exec(trimmed)?.[0] ?? '';
  const word = first.toLowerCase().replace(/[.!?:,]+$/, '');
  const verb = commandVerbs.find((candidate) => candidate === word);
  // The rest is kept as written (line breaks included): for remember/forget/pin it is the fact.
  const rest = trimmed.slice(first.length).trim();
  if (verb === 'memory') return memorySubcommand(rest) ?? { verb, rest };
  // "search the web for …" is a request: search and export are only said after "memory".
  return verb && verb !== 'search' && verb !== 'export' ? { verb, rest } : { unknown: first };
}

/** "memory search <words>" and "memory export" are the search and export verbs. */
function memorySubcommand(rest: string): { verb: CommandVerb; rest: string } | null {
  const second = /^\S+/.exec(rest)?.[0] ?? '';
  const word = second.toLowerCase().replace(/[.!?:,]+$/, '');
  return word === 'search' || word === 'export' ? { verb: word, rest: rest.slice(second.length).trim() } : null;
}

/**
 * The command a mention is, or null when it is a request: one command word alone, or a verb that
 * takes text (remember / forget / pin, budget) followed by it.
 */
export function mentionCommand(text: string): { verb: CommandVerb; rest: string } | null {
  if (text.trim() === '') return null;
  const parsed = parseCommand(text);
  if (!('verb' in parsed)) return null;
  return parsed.rest === '' || argumentVerbs.has(parsed.verb) ? parsed : null;
}

/** What each verb does, one line each. */
export const commandDescriptions: Record<CommandVerb, string> = {
  pause: 'stop at the next safe point',
  resume: 'continue a paused, stopped or failed session',
  stop: 'stop now: cancel the model call and tools in flight (a reply or resume continues)',
  reset: 'start a fresh context now (memory is kept)',
  status: 'state, context use, tokens and cache ratio',
  memory: "browse this conversation's memory: view, history, edit, revert, pin",
  search: "<words>: search this conversation's memory documents and past conversations",
  export: "a zip of this conversation's memory documents (Markdown) with their history",
  revert: 'undo the last memory change',
  remember: '<fact>: background memory adds it (a person asked)',
  forget: '<fact>: background memory removes it (a person asked)',
  pin: '<text>: pin the line that has it, so memory keeps it word for word',
  budget: 'allow this session to spend more, e.g. `budget 5` for $5 more',
  help: 'this list',
};

/** The short help, e.g. `helpText('@hippo')` or `helpText('/hippo')`. */
export function helpText(prefix: string, unknownWord?: string): string {
  const intro = unknownWord ? `I don't know the command "${unknownWord}". ` : '';
  const lines = commandVerbs.map((verb) => `• \`${prefix} ${commandUsage(verb)}\` – ${commandDescriptions[verb]}`);
  return `${intro}In a Hippo thread you can say:\n${lines.join('\n')}\nAnything else you write in the thread steers what I'm working on.`;
}

/** How a verb is written: search and export are said after `memory` ("memory search deploy"). */
export function commandUsage(verb: CommandVerb): string {
  return verb === 'search' || verb === 'export' ? `memory ${verb}` : verb;
}
