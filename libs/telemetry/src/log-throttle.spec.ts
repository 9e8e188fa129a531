import { LogThrottle } from './log-throttle';

describe('LogThrottle', () => {
  it('writes the first line of a kind, holds back repeats within the window, and counts them', () => {
    let t = 0;
    const throttle = new LogThrottle(10_000, () => t);
    expect(throttle.admit('connection refused')).toEqual({ write: true, suppressed: 0 });
    t = 100;
    expect(throttle.admit('connection refused')).toEqual({ write: false, suppressed: 0 });
    t = 9_999;
    expect(throttle.admit('connection refused').write).toBe(false);
    t = 10_000;
    expect(throttle.admit('connection refused')).toEqual({ write: true, suppressed: 2 });
  });

  it('kinds are throttled apart', () => {
    const throttle = new LogThrottle(10_000, () => 0);
    expect(throttle.admit('a').write).toBe(true);
    expect(throttle.admit('b').write).toBe(true);
    expect(throttle.admit('a').write).toBe(false);
  });
});
