// Secrets at rest (Slack installation tokens): AES-256-GCM with a random 96-bit IV per value and
// an associated label (the row's key), so a ciphertext copied onto another row does not decrypt.
// Stored as "v1:<base64 iv|tag|ciphertext>"; the version prefix leaves room for a key change.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const version = 'v1';
const ivBytes = 12;
const tagBytes = 16;

/** Encrypts and decrypts short secrets with one key. The key never leaves this object. */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.#key = Buffer.from(key);
  }

  /** "v1:…" for `plaintext`, bound to `label` (e.g. the team id). */
  seal(plaintext: string, label: string): string {
    const iv = randomBytes(ivBytes);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(label, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${version}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The plaintext of a value made by `seal` with the same label; throws when it was altered or the key differs. */
  open(sealed: string, label: string): string {
    const [prefix, payload] = sealed.split(':', 2);
    if (prefix !== version || payload === undefined) throw new Error('sealed secret: unknown format');
    const raw = Buffer.from(payload, 'base64');
    if (raw.length < ivBytes + tagBytes) throw new Error('sealed secret: too short');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, ivBytes));
    decipher.setAAD(Buffer.from(label, 'utf8'));
    decipher.setAuthTag(raw.subarray(ivBytes, ivBytes + tagBytes));
    return Buffer.concat([decipher.update(raw.subarray(ivBytes + tagBytes)), decipher.final()]).toString('utf8');
  }
}
