/**
 * undici's proxy agent, from its own files (see ./undici.ts). A module of its own so that
 * only runs with a proxy configured load it and the SOCKS and tunnelling code it brings.
 */
import type { EnvHttpProxyAgent as EnvHttpProxyAgentClass } from 'undici';
import connect from 'undici/lib/api/api-connect.js';
import EnvHttpProxyAgentImpl from 'undici/lib/dispatcher/env-http-proxy-agent.js';
import { dispatcherPrototype } from './undici.js';

// The proxy agent opens its tunnels with connect() (an HTTP CONNECT) on a dispatcher.
Object.assign(dispatcherPrototype, { connect });

/** undici's agent that honours HTTP_PROXY, HTTPS_PROXY and NO_PROXY. */
export const EnvHttpProxyAgent = EnvHttpProxyAgentImpl as typeof EnvHttpProxyAgentClass;
