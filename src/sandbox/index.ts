/** Placeholder: the sandbox service is being built. */
export const SANDBOX_CREDENTIALS = {
  clientId: 'sandbox-client-id',
  clientSecret: 'sandbox-client-secret',
};

/** Options of the sandbox (placeholder). */
export interface SandboxOptions {
  stateDir: string;
  port?: number;
}

/** Starts the sandbox (placeholder). */
export async function startSandbox(
  _opts: SandboxOptions,
): Promise<{ baseUrl: string; close(): Promise<void> }> {
  throw new Error('sandbox not built yet');
}
