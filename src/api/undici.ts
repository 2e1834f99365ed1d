/**
 * The parts of undici the client uses, taken from undici's own files rather than its index.
 * The index also loads fetch, WebSocket, caches and mocks: measured here, importing it costs
 * 74 ms of start-up and these modules 25 ms, on every command that talks to the service.
 * The proxy agent is in ./undici-proxy.ts, loaded only when a proxy is configured.
 * The types are undici's own; the wiring below is what undici's index does.
 */
import type { Agent as AgentClass, Dispatcher as DispatcherClass } from 'undici';
import request from 'undici/lib/api/api-request.js';
import AgentImpl from 'undici/lib/dispatcher/agent.js';
import DispatcherImpl from 'undici/lib/dispatcher/dispatcher.js';

// undici's index adds request() and its other APIs to every dispatcher this way; the client
// calls request() only (stream, pipeline, upgrade and connect each cost start-up time).
Object.assign(DispatcherImpl.prototype, { request });

/** The prototype of every undici dispatcher, which carries the request APIs. */
export const dispatcherPrototype = DispatcherImpl.prototype;
/** undici's connection-pooling agent. */
export const Agent = AgentImpl as typeof AgentClass;
/** A dispatcher: anything that sends requests. */
export type Dispatcher = DispatcherClass;
