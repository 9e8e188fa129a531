import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { PlainContextManager } from './plain-context';

describe('PlainContextManager', () => {
  const key = createContextKey('test');
  const manager = new PlainContextManager();

  it('makes a context active for the synchronous call, and restores the previous one after it', () => {
    const outer = ROOT_CONTEXT.setValue(key, 'outer');
    const inner = ROOT_CONTEXT.setValue(key, 'inner');
    const seen = manager.with(outer, () => {
      const nested = manager.with(
        inner,
        (a: number) => `${String(manager.active().getValue(key))}:${a}`,
        undefined,
        7,
      );
      return [nested, manager.active().getValue(key)];
    });
    expect(seen).toEqual(['inner:7', 'outer']);
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  it('restores the previous context when the call throws', () => {
    expect(() =>
      manager.with(ROOT_CONTEXT.setValue(key, 'x'), () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  it('does not carry a context across an await (that is what explicit propagation is for)', async () => {
    const seen = await manager.with(ROOT_CONTEXT.setValue(key, 'x'), async () => {
      await new Promise((r) => setImmediate(r));
      return manager.active().getValue(key);
    });
    expect(seen).toBeUndefined();
  });

  it('serves as the global context manager of the OpenTelemetry API', () => {
    expect(context.setGlobalContextManager(manager)).toBe(true);
    try {
      expect(context.with(ROOT_CONTEXT.setValue(key, 'y'), () => context.active().getValue(key))).toBe('y');
    } finally {
      context.disable();
    }
  });
});
