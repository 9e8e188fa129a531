/** Liveness and readiness (PostgreSQL and Kafka answer). */
import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Readiness } from '@tickwork/telemetry';
import { READINESS } from './tokens';

@Controller('health')
export class HealthController {
  constructor(@Inject(READINESS) private readonly readiness: Readiness) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  /** 200 with each check when all are up; 503 naming the ones that are down. */
  @Get('ready')
  async ready(
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ status: string; checks: Readonly<Record<string, string>> }> {
    const report = await this.readiness.report();
    // Set here rather than thrown: the API's error filter would replace the body naming the checks.
    if (!report.ready) res.status(HttpStatus.SERVICE_UNAVAILABLE);
    return { status: report.ready ? 'ready' : 'unavailable', checks: report.checks };
  }
}
