import { decodeWebhookSecret, WebhookSigner } from './webhook-signer';

// The example from the Standard Webhooks specification.
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const OTHER = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('WebhookSigner', () => {
  it('produces the signature of the specification example', () => {
    const signer = new WebhookSigner({ acme: [SPEC.secret] });
    expect(signer.sign('acme', SPEC.id, SPEC.timestamp, SPEC.body)).toBe(SPEC.signature);
  });

  it('signs with every active secret, space-separated, for rotation', () => {
    const signer = new WebhookSigner({ acme: [SPEC.secret, OTHER] });
    const parts = signer.sign('acme', SPEC.id, SPEC.timestamp, SPEC.body)!.split(' ');
    expect(parts).toHaveLength(2);
    expect(parts[0]).toBe(SPEC.signature);
    expect(parts[1]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(parts[1]).not.toBe(SPEC.signature);
  });

  it('falls back to the * secrets, and leaves tenants without any unsigned', () => {
    expect(new WebhookSigner({ '*': [SPEC.secret] }).sign('anyone', SPEC.id, SPEC.timestamp, SPEC.body)).toBe(
      SPEC.signature,
    );
    const only = new WebhookSigner({ acme: [SPEC.secret] });
    expect(only.sign('globex', SPEC.id, SPEC.timestamp, SPEC.body)).toBeNull();
    expect(only.signs('globex')).toBe(false);
  });

  it('refuses malformed secrets without echoing them', () => {
    expect(() => decodeWebhookSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toThrow(/must start with "whsec_"/);
    expect(() => decodeWebhookSecret('whsec_c2hvcnQ=')).toThrow(/24\.\.64 bytes \(got 5\)/);
    expect(() => decodeWebhookSecret('whsec_not base64!')).toThrow(/base64/);
    try {
      decodeWebhookSecret('whsec_c2hvcnQ=');
    } catch (e) {
      expect((e as Error).message).not.toContain('c2hvcnQ');
    }
  });
});
