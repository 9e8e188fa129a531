import { assertKafkajsVersion, KAFKAJS_PATCHES, KAFKAJS_VERSION } from './patches';

describe('kafkajs patch installation', () => {
  it('refuses any other kafkajs release, naming both', () => {
    expect(() => assertKafkajsVersion(KAFKAJS_VERSION)).not.toThrow();
    expect(() => assertKafkajsVersion('2.2.5')).toThrow(/kafkajs 2\.2\.5 is loaded.*written against 2\.2\.4/);
  });

  it('names every patch once, stand-ins first', () => {
    expect(new Set(KAFKAJS_PATCHES).size).toBe(KAFKAJS_PATCHES.length);
    expect(KAFKAJS_PATCHES.indexOf('record-encoding')).toBeLessThan(
      KAFKAJS_PATCHES.indexOf('produce-request'),
    );
  });
});
