import { ValidationError } from '@tickwork/domain';
import { decodePageToken, encodePageToken } from './page-token';

/** The violations a decode throws, or [] when it returns. */
function refusal(fn: () => unknown): { field: string; message: string }[] {
  try {
    fn();
    return [];
  } catch (e) {
    if (e instanceof ValidationError)
      return e.violations.map((v) => ({ field: v.field, message: v.message }));
    throw e;
  }
}

describe('page tokens', () => {
  const filters = { tenant_id: 'acme', status: 'SCHEDULED', label: { suite: 'X', team: 'data' } };
  const token = encodePageToken('jobs', { after: 'job-7' }, filters);

  it('come back with their position for the same listing and filters (label and key order aside)', () => {
    expect(
      decodePageToken(token, 'jobs', {
        label: { team: 'data', suite: 'X' },
        status: 'SCHEDULED',
        tenant_id: 'acme',
      }),
    ).toMatchObject({ after: 'job-7' });
    expect(decodePageToken('', 'jobs', filters)).toBeUndefined();
    expect(decodePageToken(undefined, 'jobs', filters)).toBeUndefined();
  });

  it.each([
    ['another label value', { ...filters, label: { suite: 'other', team: 'data' } }],
    ['a label fewer', { ...filters, label: { suite: 'X' } }],
    ['no labels', { ...filters, label: {} }],
    ['another status', { ...filters, status: 'PAUSED' }],
    ['no status', { ...filters, status: undefined }],
    ['another tenant', { ...filters, tenant_id: 'globex' }],
    ['all tenants', { ...filters, tenant_id: undefined }],
  ])('are refused with %s, naming page_token', (_what, other) => {
    expect(refusal(() => decodePageToken(token, 'jobs', other))).toEqual([
      { field: 'page_token', message: expect.stringMatching(/^was issued for other filters/) },
    ]);
  });

  it('are refused by another listing, and garbage is refused', () => {
    expect(refusal(() => decodePageToken(token, 'dead-letters', filters))).toEqual([
      { field: 'page_token', message: 'is not a page token issued by this listing' },
    ]);
    expect(refusal(() => decodePageToken('garbage', 'jobs', filters))).toEqual([
      { field: 'page_token', message: 'is not a page token issued by this listing' },
    ]);
  });

  it('treat absent, empty and undefined filters alike (an unfiltered listing)', () => {
    const plain = encodePageToken('jobs', { after: 'a' });
    expect(decodePageToken(plain, 'jobs', { tenant_id: undefined, status: '', label: {} })).toMatchObject({
      after: 'a',
    });
  });
});
