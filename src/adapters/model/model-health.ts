// What the service knows about its model endpoint, for the log and /readyz: a look at start-up
// (GET /models, never blocking start-up), looks again every minute while it is not ok, and the
// outcome of real calls in between (a call that worked proves more than any probe).
import OpenAI from 'openai';
import { ModelError } from '../../core/errors.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '../../core/model-client.js';
import type { EndpointCheck } from './openai-model-client.js';

/** `unknown` until the first look or call has finished. */
export type ModelEndpointStatus = 'unknown' | EndpointCheck['status'];

/** The log calls ModelHealth makes (a pino logger fits). */
export interface ModelHealthLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface ModelHealthOptions {
  /** Looks at the endpoint once (OpenAIModelClient.checkEndpoint). */
  check: () => Promise<EndpointCheck>;
  /** Whether a failed call's error means the endpoint cannot be reached (default: the OpenAI client's). */
  isUnreachable?: (error: ModelError) => boolean;
  log: ModelHealthLog;
  /** Time between looks while the status is not ok, in milliseconds (default 60,000). */
  recheckMs?: number;
}

/** Wraps the model client, keeping the endpoint's status up to date. */
export class ModelHealth implements ModelClient {
  private current: ModelEndpointStatus = 'unknown';
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly inner: ModelClient,
    private readonly options: ModelHealthOptions,
  ) {}

  /** The endpoint's status as last seen. */
  get status(): ModelEndpointStatus {
    return this.current;
  }

  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    try {
      const response = await this.inner.complete(request, options);
      this.current = 'ok';
      return response;
    } catch (error) {
      // Only what says something about the endpoint itself; a slow answer or a refused request
      // (400, a missing model) leaves the status as it was.
      if (error instanceof ModelError && (error.status === 401 || error.status === 403)) this.current = 'unauthorized';
      else if (error instanceof ModelError && (this.options.isUnreachable ?? openAIUnreachable)(error)) this.current = 'unreachable';
      throw error;
    }
  }

  /** Looks at the endpoint now and logs what it found; resolves with the status. */
  async checkNow(): Promise<ModelEndpointStatus> {
    const result = await this.options.check();
    if (this.stopped) return this.current;
    const changed = result.status !== this.current;
    this.current = result.status;
    if (result.status === 'ok') {
      if (changed) this.options.log.info({ model: result.status }, 'model-endpoint-ok');
    } else {
      this.options.log.warn({ model: result.status, detail: result.detail }, `model-endpoint-${result.status}: ${result.detail}`);
    }
    return result.status;
  }

  /** Looks at once (not awaited by start-up), then again every `recheckMs` until the status is ok. */
  start(): void {
    const look = () => {
      void this.checkNow().then((status) => {
        if (status !== 'ok' && !this.stopped) this.timer = setTimeout(look, this.options.recheckMs ?? 60_000).unref();
      });
    };
    look();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

function openAIUnreachable(error: ModelError): boolean {
  return error.cause instanceof OpenAI.APIConnectionError;
}
