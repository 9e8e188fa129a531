import { dueRun } from './fire-loop';

const at = (ms: number) => ({ scheduledFor: new Date(ms) });

describe('dueRun', () => {
  const sorted = [at(1_000), at(1_000), at(1_200), at(1_500)];

  it('takes every fire due by now, and says when the next one is due', () => {
    expect(dueRun(sorted, 0, 1_100)).toEqual({ end: 2, nextAt: 1_200 });
    expect(dueRun(sorted, 2, 1_300)).toEqual({ end: 3, nextAt: 1_500 });
  });

  it('takes nothing before the first fire is due', () => {
    expect(dueRun(sorted, 0, 999)).toEqual({ end: 0, nextAt: 1_000 });
  });

  it('takes the rest once all are due', () => {
    expect(dueRun(sorted, 1, 5_000)).toEqual({ end: 4, nextAt: 5_000 });
  });
});
