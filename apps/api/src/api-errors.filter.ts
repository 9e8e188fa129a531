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
    if (error instanceof HttpException) {
      // Framework errors: malformed JSON, a body over the size limit, an unknown route.
      const status = error.getStatus();
      const body = error.getResponse();
      const message =
        typeof body === 'string' ? body : String((body as { message?: unknown }).message ?? error.message);
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
