/** Liveness and readiness. */
import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import type { Pool } from '@tickwork/store';
import { POOL } from './tokens';

@Controller('health')
export class HealthController {
  constructor(@Inject(POOL) private readonly pool: Pool) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(): Promise<{ status: string }> {
    try {
      await this.pool.query('SELECT 1');
    } catch {
      throw new ServiceUnavailableException('database unreachable');
    }
    return { status: 'ready' };
  }
}
