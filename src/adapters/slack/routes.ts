// Where Slack's events and modal submissions go. Bolt runs the filters of every listener registered
// on the app for every request it receives, whether it matches or not: about 16 µs per listener,
// 0.1–0.5 ms of the ingest's 2.1–2.6 ms per event with the twenty Hippo had (bench/RESULTS.md, B4).
// Hippo registers one Bolt listener per kind and routes by name here, so a request costs one filter
// chain however many handlers there are.
import type { AllMiddlewareArgs, App, SlackEventMiddlewareArgs, SlackViewMiddlewareArgs } from '@slack/bolt';

type EventArgs = SlackEventMiddlewareArgs & AllMiddlewareArgs;
type ViewArgs = SlackViewMiddlewareArgs & AllMiddlewareArgs;
type Handler<Args> = (args: Args) => Promise<void>;

/** Where Slack's listening roles register: Bolt's app (actions, the slash command) and these routes. */
export interface SlackListeners {
  app: App;
  routes: SlackRoutes;
}

/** Handlers by event type and by modal callback id; `mount` gives them to Bolt. */
export class SlackRoutes {
  private readonly events = new Map<string, Handler<EventArgs>>();
  private readonly views = new Map<string, Handler<ViewArgs>>();

  /** Handles events of `type` (one handler per type). */
  event(type: string, handler: Handler<EventArgs>): void {
    add(this.events, type, handler, 'event');
  }

  /** Handles submissions of the modal with `callbackId` (one handler per id). */
  view(callbackId: string, handler: Handler<ViewArgs>): void {
    add(this.views, callbackId, handler, 'view');
  }

  /**
   * Registers one listener for all events and one for all modal submissions. What no handler
   * takes (an event of another type, a stale or forged submission) goes nowhere; the app answers
   * it with an empty 200 (app.ts).
   */
  mount(app: App): void {
    app.event(/^/, async (args) => {
      await this.events.get(args.event.type)?.(args);
    });
    app.view(/^/, async (args) => {
      await this.views.get(args.view.callback_id)?.(args);
    });
  }
}

function add<Args>(handlers: Map<string, Handler<Args>>, name: string, handler: Handler<Args>, kind: string): void {
  if (handlers.has(name)) throw new Error(`slack routes: a second ${kind} handler for ${name}`);
  handlers.set(name, handler);
}
