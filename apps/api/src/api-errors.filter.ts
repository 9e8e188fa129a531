/** Maps domain and application errors to HTTP responses at the edge, with field-level detail. */
import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { ValidationError } from '@tickwork/domain';
import { JobNotFoundError } from '@tickwork/jobs';
import { JobAlreadyExistsError } from '@tickwork/store';

@Catch()
export class ApiErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('api');

  catch(error: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (error instanceof ValidationError) {
      res.status(400).json({ error: 'INVALID_ARGUMENT', message: error.message, violations: error.violations });
    } else if (error instanceof JobNotFoundError) {
      res.status(404).json({ error: 'NOT_FOUND', message: error.message });
    } else if (error instanceof JobAlreadyExistsError) {
      res.status(409).json({ error: 'ALREADY_EXISTS', message: error.message });
    } else if (error instanceof HttpException) {
      const status = error.getStatus();
      const body = error.getResponse();
      const message = typeof body === 'string' ? body : String((body as { message?: unknown }).message ?? error.message);
      res.status(status).json({ error: status === 400 ? 'INVALID_ARGUMENT' : 'HTTP_ERROR', message });
    } else {
      this.logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      res.status(500).json({ error: 'INTERNAL', message: 'internal error' });
    }
  }
}
