/**
 * The parts of undici the client uses, taken from undici's own files rather than its index.
 * The index also loads fetch, WebSocket, caches and mocks: measured here, importing it costs
 * 74 ms of start-up and these modules 25 ms, on every command that talks to the service.
 * The types are undici's own; the wiring below is what undici's index does.
 */
import type {
  Agent as AgentClass,
  Dispatcher as DispatcherClass,
  EnvHttpProxyAgent as EnvHttpProxyAgentClass,
} from 'undici';
import api from 'undici/lib/api/index.js';
import AgentImpl from 'undici/lib/dispatcher/agent.js';
import DispatcherImpl from 'undici/lib/dispatcher/dispatcher.js';
import EnvHttpProxyAgentImpl from 'undici/lib/dispatcher/env-http-proxy-agent.js';

// undici's index adds request() and friends to every dispatcher this way.
Object.assign(DispatcherImpl.prototype, api);

/** undici's connection-pooling agent. */
export const Agent = AgentImpl as typeof AgentClass;
/** undici's agent that honours HTTP_PROXY, HTTPS_PROXY and NO_PROXY. */
export const EnvHttpProxyAgent = EnvHttpProxyAgentImpl as typeof EnvHttpProxyAgentClass;
/** A dispatcher: anything that sends requests. */
export type Dispatcher = DispatcherClass;
