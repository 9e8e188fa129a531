/**
 * Every scheduler registers the ScheduleCommand schema at boot, and every app its event schemas:
 * several started at once on a fresh subject must all succeed against the real registry (the
 * client refuses to register into a subject whose compatibility differs from BACKWARD, which a
 * starter that registered before setting the level left visible in between).
 */
import { randomBytes } from 'node:crypto';
import { CommandCodec, EventCodecs } from '@tickwork/messaging';
import { STACK } from '../support/env';

const STARTERS = 4;
const ROUNDS = 5;

describe('schema registration by apps starting together', () => {
  it(`${STARTERS} schedulers registering the command schema on a fresh subject all succeed, ${ROUNDS} rounds`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const topic = `tickwork-test.codec-race-${randomBytes(4).toString('hex')}.commands`;
      const results = await Promise.allSettled(
        Array.from({ length: STARTERS }, () => CommandCodec.connect(STACK.registryUrl, topic)),
      );
      expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
    }
  });

  it(`${STARTERS} apps registering the fire and result schemas on fresh subjects all succeed`, async () => {
    const prefix = `tickwork-test.codec-race-${randomBytes(4).toString('hex')}`;
    const topics = { fireTopics: [`${prefix}.fires`], resultTopics: [`${prefix}.fire-results`] };
    const results = await Promise.allSettled(
      Array.from({ length: STARTERS }, () => EventCodecs.connect(STACK.registryUrl, topics)),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
  });
});
