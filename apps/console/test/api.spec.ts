/** The console's pure API helpers: query strings and readable errors (no request is made). */
import { ApiError, describeError, qs } from '../src/api';

describe('query strings', () => {
  it('keeps the defined, non-empty values, encoded', () => {
    expect(qs({ page_size: 25, page_token: '', status: undefined, tenant_id: null })).toBe('?page_size=25');
    expect(qs({ label_selector: 'team=web,env!=prod' })).toBe('?label_selector=team%3Dweb%2Cenv%21%3Dprod');
    expect(qs({})).toBe('');
  });
});

describe('errors in words', () => {
  it('names the fields of a refused request', () => {
    const e = new ApiError(400, 'INVALID_ARGUMENT', 'invalid job', [
      { field: 'schedule.expression', message: 'day-of-week field: bad' },
      { field: 'target.url', message: 'must be a URL' },
    ]);
    expect(describeError(e)).toBe(
      'INVALID_ARGUMENT: schedule.expression: day-of-week field: bad; target.url: must be a URL',
    );
  });

  it('gives the message when there are no violations, and any other error as text', () => {
    expect(describeError(new ApiError(404, 'NOT_FOUND', 'job x not found', []))).toBe(
      'NOT_FOUND: job x not found',
    );
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError('plain')).toBe('plain');
  });
});
