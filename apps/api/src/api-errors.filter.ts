/** Maps domain and application errors to HTTP responses at the edge, with field-level detail. */
import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { ValidationError } from '@tickwork/domain';
import { errorCodeOf } from '@tickwork/jobs';
import { httpStatusOf } from './error-mapping';

@Catch()
export class ApiErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('api');

  catch(error: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const res = host.switchToHttp().getResponse<Response>();
    const parserError = bodyParserError(error);
    if (parserError) {
      res.status(parserError.status).json(parserError.body);
      return;
    }
    if (error instanceof HttpException) {
      // Framework errors: malformed JSON, a body over the size limit, an unknown route.
      const status = error.getStatus();
      const body = error.getResponse();
      const message =
        typeof body === 'string' ? body : String((body as { message?: unknown }).message ?? error.message);
      // Malformed JSON reaches here as a 400 HttpException (Nest's body parsing), not an http-errors error.
      if (status === 400 && /JSON/i.test(message)) {
        res.status(400).json({
          error: 'INVALID_ARGUMENT',
          message: `body: ${message}`,
          violations: [{ field: 'body', message: `is not valid JSON: ${message}` }],
        });
        return;
      }
      const code =
        status === 400
          ? 'INVALID_ARGUMENT'
          : status === 404
            ? 'NOT_FOUND'
            : status === 413
              ? 'RESOURCE_EXHAUSTED'
              : 'HTTP_ERROR';
      res.status(status).json({ error: code, message });
      return;
    }
    const code = errorCodeOf(error);
    const status = httpStatusOf(code, error);
    if (code === 'INTERNAL') {
      this.logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      res.status(500).json({ error: 'INTERNAL', message: 'internal error' });
      return;
    }
    if (code === 'UNAUTHENTICATED') res.setHeader('WWW-Authenticate', 'Bearer realm="tickwork"');
    res.status(status).json({
      error: code,
      message: (error as Error).message,
      ...(error instanceof ValidationError ? { violations: error.violations } : {}),
    });
  }
}

/**
 * The body parser's own refusals (http-errors with a `type`): a body over the limit is 413, a
 * charset or encoding it cannot read 415, malformed JSON 400, each naming what was wrong. Anything
 * else is undefined (handled as an application error).
 */
function bodyParserError(error: unknown):
  | {
      status: number;
      body: { error: string; message: string; violations: { field: string; message: string }[] };
    }
  | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const e = error as {
    status?: unknown;
    type?: unknown;
    message?: unknown;
    limit?: unknown;
    length?: unknown;
    charset?: unknown;
    encoding?: unknown;
    code?: unknown;
    contentType?: unknown;
  };
  const refuse = (status: number, code: string, field: string, message: string) => ({
    status,
    body: { error: code, message: `${field}: ${message}`, violations: [{ field, message }] },
  });
  // A body that does not inflate as its content-encoding says: zlib's error (Z_DATA_ERROR, …),
  // which the parser passes on as a 400 without a type.
  if (e.status === 400 && typeof e.code === 'string' && e.code.startsWith('Z_'))
    return refuse(
      400,
      'INVALID_ARGUMENT',
      'body',
      `cannot be decoded as its content-encoding says: ${String(e.message)}`,
    );
  if (typeof e.status !== 'number' || typeof e.type !== 'string') return undefined;
  switch (e.type) {
    case 'content-type.unsupported':
      return refuse(
        415,
        'INVALID_ARGUMENT',
        'content-type',
        `${typeof e.contentType === 'string' ? e.contentType : '(none)'} is not supported; send application/json`,
      );
    case 'entity.too.large':
      return refuse(
        413,
        'RESOURCE_EXHAUSTED',
        'body',
        `is ${typeof e.length === 'number' ? `${e.length} bytes` : 'too large'}; the limit is ${String(e.limit)} bytes`,
      );
    case 'charset.unsupported':
      return refuse(
        415,
        'INVALID_ARGUMENT',
        'content-type',
        `charset ${String(e.charset)} is not supported; send UTF-8 JSON`,
      );
    case 'encoding.unsupported':
      return refuse(415, 'INVALID_ARGUMENT', 'content-encoding', `${String(e.encoding)} is not supported`);
    case 'entity.parse.failed':
      return refuse(400, 'INVALID_ARGUMENT', 'body', `is not valid JSON: ${String(e.message)}`);
    default:
      return e.status >= 400 && e.status < 500
        ? refuse(e.status, 'INVALID_ARGUMENT', 'body', String(e.message))
        : undefined;
  }
}
