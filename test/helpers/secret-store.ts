import {
  KeyringError,
  type SecretStore,
  type SecretStoreFactory,
} from '../../src/config/keyring.js';

/** A system keyring in memory; `unreachable` makes every call fail as a missing D-Bus would. */
export class FakeSecretStore implements SecretStore {
  readonly entries = new Map<string, string>();
  unreachable: string | undefined;

  private check(): void {
    if (this.unreachable !== undefined) throw new KeyringError(this.unreachable);
  }

  async get(profile: string): Promise<string | undefined> {
    this.check();
    return this.entries.get(profile);
  }

  async set(profile: string, secret: string): Promise<void> {
    this.check();
    this.entries.set(profile, secret);
  }

  async delete(profile: string): Promise<boolean> {
    this.check();
    return this.entries.delete(profile);
  }

  /** The factory a Runtime carries. */
  readonly factory: SecretStoreFactory = async () => this;
}
