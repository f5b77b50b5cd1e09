// The bot scopes Hippo asks for, in one place: the OAuth install URL requests exactly these, and a
// unit test checks that slack/manifest.json lists the same.

/** Bot token scopes, each with the reason Hippo needs it. */
export const botScopeReasons = {
  'app_mentions:read': 'see @hippo mentions',
  'chat:write': 'answers, status cards, notes and ephemeral replies',
  'channels:history': 'replies in public-channel threads, and the thread so far',
  'groups:history': 'the same in private channels',
  'im:history': 'direct messages and the assistant pane',
  'mpim:history': 'group direct messages',
  'channels:read': 'whether a channel is public or private, and its members (memory spaces, memory access)',
  'groups:read': 'the same for private channels',
  'im:read': 'the members of a direct message (memory access)',
  'mpim:read': 'the members of a group direct message (memory access)',
  'reactions:read': '👍 / 👎 on answers',
  'reactions:write': '👀 (queued) and ✅ (taken) on steer messages',
  'users:read': 'display names',
  'usergroups:read': 'user groups in ALLOWED_USERS, ADMIN_USERS and MEMORY_EDITORS',
  commands: '/hippo',
  'files:read': 'files people share in a thread (saved into the session workspace)',
  'files:write': 'files the agent sends with an answer (attach_file), and memory exports',
  'assistant:write': 'the assistant pane: suggested prompts and thread titles (the thread status needs only chat:write)',
} as const;

/** The bot scopes, as the install URL and the manifest list them. */
export const botScopes = Object.keys(botScopeReasons);
