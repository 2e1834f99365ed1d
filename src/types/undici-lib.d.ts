// undici's own files ship no type declarations; src/api/undici.ts gives them undici's types.
declare module 'undici/lib/dispatcher/dispatcher.js' {
  const value: { prototype: object };
  export default value;
}
declare module 'undici/lib/api/api-request.js' {
  const value: object;
  export default value;
}
declare module 'undici/lib/api/api-connect.js' {
  const value: object;
  export default value;
}
declare module 'undici/lib/dispatcher/agent.js' {
  const value: unknown;
  export default value;
}
declare module 'undici/lib/dispatcher/env-http-proxy-agent.js' {
  const value: unknown;
  export default value;
}
