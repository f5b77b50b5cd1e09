// Where conversations live, in core's words: the platform of a thread, and which conversations
// share one memory space.

/** The chat platform a session lives on (`console`: the terminal chat). */
export type Platform = 'slack' | 'discord' | 'console';

/** Which conversations share memory documents (MEMORY_SCOPE). */
export type MemoryScope = 'channel' | 'thread' | 'workspace';
