import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeEncryptionKey } from '../../src/config.js';
import { SecretBox } from '../../src/adapters/storage/secret-box.js';

describe('SecretBox', () => {
  const key = randomBytes(32);

  it('decodes 32-byte keys in base64 or hex and refuses anything else', () => {
    expect(decodeEncryptionKey(key.toString('base64'))?.equals(key)).toBe(true);
    expect(decodeEncryptionKey(key.toString('hex'))?.equals(key)).toBe(true);
    expect(decodeEncryptionKey(key.toString('base64url'))?.equals(key)).toBe(true);
    expect(decodeEncryptionKey(randomBytes(16).toString('base64'))).toBeNull();
    expect(decodeEncryptionKey(randomBytes(16).toString('hex'))).toBeNull();
    expect(decodeEncryptionKey('correct horse battery staple')).toBeNull();
  });

  it('round-trips a secret without the plaintext in the sealed value, differently each time', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('xoxb-secret-token', 'T1');
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain('xoxb');
    expect(box.seal('xoxb-secret-token', 'T1')).not.toBe(sealed);
    expect(box.open(sealed, 'T1')).toBe('xoxb-secret-token');
  });

  it('refuses a value moved to another label, altered, or sealed with another key', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('xoxb-secret-token', 'T1');
    expect(() => box.open(sealed, 'T2')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => box.open(`v1:${raw.toString('base64')}`, 'T1')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'T1')).toThrow();
  });
});
