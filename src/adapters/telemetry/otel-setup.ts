// Traces are on only when the standard OTEL_* variables name an OTLP endpoint. Off, nothing of the
// SDK is created: no provider, no exporter, no listener, no wrapper around the model client (the
// `@opentelemetry/api` alone, which Hippo never registers globally, costs nothing).
import type { Tracer } from '@opentelemetry/api';
import { ConfigError } from '../../core/errors.js';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler,
} from '@opentelemetry/sdk-trace';

type Environment = Record<string, string | undefined>;

/** The tracer Hippo's spans go to, and how to flush and close it. */
export interface TracingSetup {
  tracer: Tracer;
  /** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: arguments, results and messages go into spans. */
  captureContent: boolean;
  /** Where spans are sent (for the start-up log line). */
  endpoint: string;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Why traces are off, or null when the environment asks for them. */
export function tracesOffReason(env: Environment): string | null {
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return 'OTEL_SDK_DISABLED=true';
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase();
  if (exporter === 'none') return 'OTEL_TRACES_EXPORTER=none';
  if (exporter && exporter !== 'otlp') return `OTEL_TRACES_EXPORTER=${exporter} is not supported (otlp only)`;
  if (!tracesEndpoint(env)) return 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT';
  return null;
}

function tracesEndpoint(env: Environment): string | undefined {
  const traces = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  if (traces) return traces;
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

/**
 * The tracer of the environment's OTEL_* settings, or null when traces are off; throws
 * ConfigError when the endpoint is not an http(s) URL. The exporter
 * reads the endpoint, headers, timeout and compression from the same variables; the resource
 * takes OTEL_SERVICE_NAME (default "hippo") and OTEL_RESOURCE_ATTRIBUTES.
 */
export function startTracing(env: Environment): TracingSetup | null {
  if (tracesOffReason(env) !== null) return null;
  const endpoint = tracesEndpoint(env) ?? '';
  if (!/^https?:\/\/[^/\s]+/i.test(endpoint) || !URL.canParse(endpoint)) {
    const name = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    throw new ConfigError(`config: ${name} must be an http:// or https:// URL (e.g. http://otel-collector:4318)`);
  }
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes(resourceAttributes(env))),
    sampler: samplerFromEnv(env),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: endpoint }) })],
  });
  return {
    tracer: provider.getTracer('hippo'),
    captureContent: env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT']?.trim().toLowerCase() === 'true',
    endpoint,
    shutdown: () => provider.shutdown(),
  };
}

/**
 * The resource's attributes: OTEL_RESOURCE_ATTRIBUTES ("key=value,key=value", values
 * percent-encoded), then OTEL_SERVICE_NAME over them; "hippo" when no service name is given.
 */
export function resourceAttributes(env: Environment): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of (env['OTEL_RESOURCE_ATTRIBUTES'] ?? '').slice(0, 4096).split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    try {
      if (key) attributes[key] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // A malformed percent-encoding: the attribute is left out, as the specification says.
    }
  }
  const service = env['OTEL_SERVICE_NAME']?.trim();
  if (service) attributes['service.name'] = service;
  attributes['service.name'] ??= 'hippo';
  return attributes;
}

/** OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, as the specification names them (default parentbased_always_on). */
export function samplerFromEnv(env: Environment): Sampler {
  const name = env['OTEL_TRACES_SAMPLER']?.trim().toLowerCase() || 'parentbased_always_on';
  const arg = Number(env['OTEL_TRACES_SAMPLER_ARG']);
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 && env['OTEL_TRACES_SAMPLER_ARG']?.trim() ? arg : 1;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
