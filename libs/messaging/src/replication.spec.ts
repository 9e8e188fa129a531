import { replicationLayoutProblems } from './replication';

describe('replicationLayoutProblems (which layouts keep an acknowledged fire)', () => {
  const check = (replicationFactor: number, minInsyncReplicas: number, brokers?: number) =>
    replicationLayoutProblems({ replicationFactor, minInsyncReplicas, brokers });

  it('allows the single-broker laptop default, RF 1 / min ISR 1', () => {
    expect(check(1, 1, 1)).toEqual({ problems: [], warnings: [] });
  });

  it('allows RF 3 / min ISR 2 on 3 brokers with no warning: one broker may be down, nothing lost', () => {
    expect(check(3, 2, 3)).toEqual({ problems: [], warnings: [] });
    expect(check(5, 3, 7)).toEqual({ problems: [], warnings: [] });
  });

  it('refuses a replicated topic whose min ISR lets one broker acknowledge alone (RF 3 / min ISR 1)', () => {
    const { problems } = check(3, 1, 3);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('replication factor 3 with min.insync.replicas 1');
    expect(check(2, 1).problems).toHaveLength(1);
  });

  it('refuses a min ISR above the replication factor (nothing could be acknowledged)', () => {
    expect(check(2, 3).problems).toEqual([
      'min.insync.replicas 3 is more than the replication factor 2: no fire could ever be acknowledged',
    ]);
  });

  it('refuses more replicas than brokers, and only checks brokers when their count is known', () => {
    expect(check(3, 2, 1).problems).toEqual([
      'replication factor 3 needs 3 brokers but the cluster has 1: the replicas cannot be placed',
    ]);
    expect(check(3, 2).problems).toEqual([]);
  });

  it('warns (does not refuse) when min ISR equals the replication factor: safe, but one broker down stops fires', () => {
    const { problems, warnings } = check(2, 2, 3);
    expect(problems).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('one broker down stops every fire');
  });

  it('refuses nonsense numbers', () => {
    expect(check(0, 1).problems).toHaveLength(1);
    expect(check(3, 0).problems).toHaveLength(1);
    expect(check(1.5, 1).problems).toHaveLength(1);
  });
});
