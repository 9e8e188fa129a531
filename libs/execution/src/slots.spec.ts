import { Slots } from './slots';

describe('Slots', () => {
  it('never hands out more than its size', () => {
    const slots = new Slots(2);
    expect(slots.tryAcquire()).toBe(true);
    expect(slots.tryAcquire()).toBe(true);
    expect(slots.tryAcquire()).toBe(false);
    expect(slots.inUse()).toBe(2);
  });

  it('hands a freed slot to the waiter of the lowest rank, first come first served within a rank', () => {
    const slots = new Slots(1);
    expect(slots.tryAcquire()).toBe(true);
    const granted: string[] = [];
    slots.whenFree(() => granted.push('late-a'), 30);
    slots.whenFree(() => granted.push('early'), 10);
    slots.whenFree(() => granted.push('late-b'), 30);
    slots.whenFree(() => granted.push('middle'), 20);
    expect(slots.waiting()).toBe(4);
    for (let i = 0; i < 4; i++) slots.release();
    expect(granted).toEqual(['early', 'middle', 'late-a', 'late-b']);
    // The last grant still holds its slot; releasing it frees the slot.
    expect(slots.inUse()).toBe(1);
    slots.release();
    expect(slots.inUse()).toBe(0);
  });

  it('keeps rank order across many waiters', () => {
    const slots = new Slots(1);
    slots.tryAcquire();
    const granted: number[] = [];
    const ranks = Array.from({ length: 200 }, (_, i) => (i * 7919) % 101);
    for (const r of ranks) slots.whenFree(() => granted.push(r), r);
    for (let i = 0; i < ranks.length; i++) slots.release();
    expect(granted).toEqual([...ranks].sort((a, b) => a - b));
  });
});
