// The OAuth `state` of an install (many-workspace mode): a signed, ten-minute value (@slack/oauth's
// ClearStateStore), also kept in the browser's cookie, that works ONCE. A state is marked used in
// Postgres when a redirect brings it back; a second redirect with it (a replayed URL, or two
// requests racing) finds the mark and is refused. Only used states are written: an anonymous
// GET /slack/install stores nothing.
import { createHash } from 'node:crypto';
import slackOAuth, { InvalidStateError, type InstallURLOptions, type StateStore } from '@slack/oauth';
import type { SlackStore } from '../../storage/slack-store.js';

// Node's ESM loader does not see ClearStateStore among the CommonJS package's named exports
// (re-exported through a nested index): it is taken from the default export.
const { ClearStateStore } = slackOAuth;
type ClearStateStore = InstanceType<typeof ClearStateStore>;

/** How long a state is valid (seconds): the cookie's lifetime too. */
export const stateLifetimeSeconds = 600;

/** Signed states that a redirect consumes. */
export class SingleUseStateStore implements StateStore {
  private readonly signed: ClearStateStore;

  constructor(
    private readonly store: SlackStore,
    secret: string,
  ) {
    this.signed = new ClearStateStore(secret, stateLifetimeSeconds);
  }

  generateStateParam(installOptions: InstallURLOptions, now: Date): Promise<string> {
    return this.signed.generateStateParam(installOptions, now);
  }

  /** The state's install options; throws InvalidStateError when it is forged, expired or used. */
  async verifyStateParam(now: Date, state: string): Promise<InstallURLOptions> {
    const options = await this.signed.verifyStateParam(now, state);
    const stateHash = createHash('sha256').update(state).digest('hex');
    // A mark outlives its state: after that, the signature check refuses the state by itself.
    const expiresAt = new Date(now.getTime() + stateLifetimeSeconds * 1000);
    if (!(await this.store.markStateUsed(stateHash, expiresAt, now))) throw new InvalidStateError('The state was used already');
    return options;
  }
}
