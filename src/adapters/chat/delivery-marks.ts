// What a thread is owed (R17; docs/architecture.md "Delivery (what a thread is owed, R17)"): core stores an answer, a memory note
// or a reset note with a mark before it emits the event, and emits it again after a restart or a
// take-over until the chat adapter says it has it. Every chat adapter renders through here, so the
// mark is cleared in this one place: once the render has put the event in the adapter's durable
// outbox (or shown it, on the terminal). A render that did not take it (an answer fenced off
// because another replica holds the session) says so with `false`: the event stays owed, and
// the lease holder sends it.
import type { AgentEvent } from '../../core/events.js';

/** Renders one event; `false`: it did not take the event (it stays owed). */
// biome-ignore lint/suspicious/noConfusingVoidType: a render that returns nothing took the event; only false leaves it owed
export type Render = (event: AgentEvent) => Promise<boolean | void>;

/** The render that clears the delivery mark of what it took; `delivered` is Agent.delivered. */
export function markingDelivered(render: Render, delivered: (event: AgentEvent) => Promise<void>): (event: AgentEvent) => Promise<void> {
  return async (event) => {
    if ((await render(event)) === false || !owed(event)) return;
    await delivered(event);
  };
}

/** The events stored with a delivery mark. */
function owed(event: AgentEvent): boolean {
  return event.type === 'answer' || event.type === 'memory-updated' || event.type === 'context-reset';
}
