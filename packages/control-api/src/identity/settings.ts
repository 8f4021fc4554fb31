/** How long each sign-in and what it hands out lives: the server's defaults, which its options may override. */

export interface IdentitySettings {
  accessTtlMs: number;
  /** A device sign-in lapses when not refreshed for this long. */
  refreshTtlMs: number;
  deviceCodeTtlMs: number;
  deviceIntervalMs: number;
  browserSessionTtlMs: number;
  signInLinkTtlMs: number;
}

export const DEFAULT_IDENTITY: IdentitySettings = {
  accessTtlMs: 60 * 60_000,
  refreshTtlMs: 30 * 86_400_000,
  deviceCodeTtlMs: 10 * 60_000,
  deviceIntervalMs: 5_000,
  browserSessionTtlMs: 12 * 60 * 60_000,
  signInLinkTtlMs: 15 * 60_000,
};
