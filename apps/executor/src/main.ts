/** The executor app: runs fires. */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@tickwork/config';
import { startTelemetry } from '@tickwork/telemetry';
import { ExecutorModule } from './executor.module';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  // First: the metrics provider must exist before any instrument is made.
  // Without an exporter the executor hands trace context on from each fire's headers itself.
  const telemetry = startTelemetry({
    app: 'executor',
    instanceId: config.instanceId,
    asyncContext: 'when-tracing',
  });
  const app = await NestFactory.create(ExecutorModule.forRoot(config, telemetry), {
    logger: telemetry.nestLogger,
  });
  app.enableShutdownHooks();
  await app.listen(config.http.executorPort, config.api.host);
  const url = await app.getUrl();
  telemetry.logger.info({ context: 'executor' }, `health on ${url}/health/ready, metrics on ${url}/metrics`);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
