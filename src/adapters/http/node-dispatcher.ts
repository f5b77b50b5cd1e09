// Loaded before undici (api-fetch.ts imports it first). Importing the undici package installs a
// process-wide "global dispatcher" when none is set yet, and every other copy of undici in the
// process then sends through it: Node's own fetch, and discord.js's undici 6. On Node 20 an undici 7
// dispatcher cannot read the multipart body discord.js builds for an upload ("action is not a
// function"), so every file and memory export to Discord failed. Constructing a `Headers` loads
// Node's built-in undici, which installs Node's own dispatcher first; ours then leaves it alone.
// Hippo's own requests never use the global one: api-fetch.ts passes its dispatcher on each call.
new Headers();
