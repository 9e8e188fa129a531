/** Nest pieces every app mounts: GET /metrics (Prometheus text format) from the process's telemetry. */
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Telemetry } from '@tickwork/telemetry';

/** Injection token of the process's Telemetry. */
export const TELEMETRY = Symbol('Telemetry');

/** GET /metrics, for any app module that provides TELEMETRY. */
@Controller()
export class MetricsController {
  constructor(@Inject(TELEMETRY) private readonly telemetry: Telemetry) {}

  /** The scrape endpoint: every metric of this process in the Prometheus text format. */
  @Get('metrics')
  metrics(@Req() req: IncomingMessage, @Res() res: ServerResponse): void {
    this.telemetry.serveMetrics(req, res);
  }
}
