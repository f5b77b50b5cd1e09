// The words people can say to Hippo instead of a request (mention or slash command), parsed the
// same way on every platform.

/** Every command verb, in the order help lists them. */
export const commandVerbs = ['pause', 'resume', 'stop', 'reset', 'status', 'memory', 'revert', 'forget', 'budget', 'help'] as const;

/** A known command word. */
export type CommandVerb = (typeof commandVerbs)[number];

/** A parsed command: a verb with the rest of the text, or the unknown first word. */
export type ParsedCommand = { verb: CommandVerb; rest: string } | { unknown: string };

/** Parses "pause", "Status please", "/hippo memory"; empty text means help. */
export function parseCommand(text: string): ParsedCommand {
  const trimmed = text.trim().replace(/^\/hippo\b/i, '').trim();
  if (trimmed === '') return { verb: 'help', rest: '' };
  const [first = '', ...rest] = trimmed.split(/\s+/);
  const word = first.toLowerCase().replace(/[.!?]+$/, '');
  const verb = commandVerbs.find((candidate) => candidate === word);
  return verb ? { verb, rest: rest.join(' ') } : { unknown: first };
}

/** Verbs that take one argument after the word ("budget 5"). */
const argumentVerbs: ReadonlySet<CommandVerb> = new Set(['budget']);

/**
 * The verb when the text is exactly one command word ("pause", "status!"), or a word that takes
 * an argument followed by it ("budget 5"); else null (the text is a request).
 */
export function exactCommand(text: string): CommandVerb | null {
  if (text.trim() === '') return null;
  const parsed = parseCommand(text);
  if (!('verb' in parsed)) return null;
  return parsed.rest === '' || argumentVerbs.has(parsed.verb) ? parsed.verb : null;
}

/** What follows the command word ("5" in "budget 5"), trimmed. */
export function commandArgument(text: string): string {
  const parsed = parseCommand(text);
  return 'verb' in parsed ? parsed.rest.trim() : '';
}

/** What each verb does, one line each. */
export const commandDescriptions: Record<CommandVerb, string> = {
  pause: 'stop at the next safe point',
  resume: 'continue a paused, stopped or failed session',
  stop: 'stop now: cancel the model call and tools in flight (a reply or resume continues)',
  reset: 'start a fresh context now (memory is kept)',
  status: 'state, context use, tokens and cache ratio',
  memory: 'show MAIN.md and the list of memory documents',
  revert: 'undo the last memory change',
  forget: 'same as revert',
  budget: 'allow this session to spend more, e.g. `budget 5` for $5 more',
  help: 'this list',
};

/** The short help, e.g. `helpText('@hippo')` or `helpText('/hippo')`. */
export function helpText(prefix: string, unknownWord?: string): string {
  const intro = unknownWord ? `I don't know the command "${unknownWord}". ` : '';
  const lines = commandVerbs.map((verb) => `• \`${prefix} ${verb}\` – ${commandDescriptions[verb]}`);
  return `${intro}In a Hippo thread you can say:\n${lines.join('\n')}\nAnything else you write in the thread steers what I'm working on.`;
}
