/** The scheduler app: the time brain. */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadConfig, loadTenants } from '@tickwork/config';
import { startTelemetry } from '@tickwork/telemetry';
import { SchedulerModule } from './scheduler.module';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  // Every file-based setting is read and validated before anything starts: a bad tenants file
  // stops the start naming TICKWORK_TENANTS_FILE, instead of failing the first command.
  const tenants = loadTenants();
  // First: the metrics provider must exist before any instrument is made.
  const telemetry = startTelemetry({ app: 'scheduler', instanceId: config.instanceId });
  const app = await NestFactory.create(SchedulerModule.forRoot(config, tenants, telemetry), {
    logger: telemetry.nestLogger,
  });
  app.enableShutdownHooks();
  await app.listen(config.http.schedulerPort, config.api.host);
  const url = await app.getUrl();
  telemetry.logger.info({ context: 'scheduler' }, `health on ${url}/health/ready, metrics on ${url}/metrics`);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
