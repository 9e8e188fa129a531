/** The API app: REST for jobs (gRPC comes with the admin API). */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadConfig } from '@tickwork/config';
import { ApiErrorsFilter } from './api-errors.filter';
import { ApiModule } from './api.module';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config), { bufferLogs: false });
  // Room for the payload limit plus the rest of the job definition.
  app.useBodyParser('json', { limit: config.api.maxPayloadBytes + 64 * 1024 });
  app.useGlobalFilters(new ApiErrorsFilter());
  app.enableShutdownHooks();
  await app.listen(config.api.port, config.api.host);
  new Logger('api').log(`REST API listening on ${await app.getUrl()}`);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
