import { isProducerSessionLost, ProducerSession, type SessionProducer } from './producer-session';

const protocolError = (type: string) => Object.assign(new Error(type.toLowerCase()), { type });

class StandIn implements SessionProducer {
  connected = false;
  closed = false;
  constructor(readonly id: number) {}
  async connect(): Promise<void> {
    this.connected = true;
  }
  async disconnect(): Promise<void> {
    this.closed = true;
  }
}

describe('isProducerSessionLost', () => {
  it('knows the broker errors that end an idempotence session, also wrapped or aggregated', () => {
    expect(isProducerSessionLost(protocolError('OUT_OF_ORDER_SEQUENCE_NUMBER'))).toBe(true);
    expect(isProducerSessionLost(protocolError('UNKNOWN_PRODUCER_ID'))).toBe(true);
    expect(isProducerSessionLost({ cause: protocolError('INVALID_PRODUCER_EPOCH') })).toBe(true);
    expect(
      isProducerSessionLost({ errors: [new Error('x'), protocolError('OUT_OF_ORDER_SEQUENCE_NUMBER')] }),
    ).toBe(true);
  });

  it('leaves every other failure to the caller', () => {
    expect(isProducerSessionLost(protocolError('NOT_LEADER_FOR_PARTITION'))).toBe(false);
    expect(isProducerSessionLost(new Error('Connection error: connect ECONNREFUSED'))).toBe(false);
    expect(isProducerSessionLost(undefined)).toBe(false);
  });
});

describe('ProducerSession', () => {
  it('after a lost session sends again once on a new, connected producer and closes the old one', async () => {
    let made = 0;
    const first = new StandIn(0);
    const renewed: string[] = [];
    const session = new ProducerSession(
      first,
      () => new StandIn(++made),
      (r) => renewed.push(r),
    );
    const used: number[] = [];
    const result = await session.run(async (p) => {
      used.push(p.id);
      if (p.id === 0) throw protocolError('OUT_OF_ORDER_SEQUENCE_NUMBER');
      expect(p.connected).toBe(true);
      return 'sent';
    });
    expect(result).toBe('sent');
    expect(used).toEqual([0, 1]);
    expect(renewed).toEqual(['out_of_order_sequence_number']);
    await new Promise((r) => setImmediate(r));
    expect(first.closed).toBe(true);
  });

  it('replaces the producer once however many sends saw it fail', async () => {
    let made = 0;
    const session = new ProducerSession(new StandIn(0), () => new StandIn(++made));
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        session.run(async (p) => {
          if (p.id === 0) throw protocolError('UNKNOWN_PRODUCER_ID');
          return p.id;
        }),
      ),
    );
    expect(results).toEqual([1, 1, 1]);
    expect(made).toBe(1);
  });

  it('passes other errors through without a new producer', async () => {
    let made = 0;
    const session = new ProducerSession(new StandIn(0), () => new StandIn(++made));
    await expect(
      session.run(async () => {
        throw new Error('broker down');
      }),
    ).rejects.toThrow('broker down');
    expect(made).toBe(0);
  });
});
