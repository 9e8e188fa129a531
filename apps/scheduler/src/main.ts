/** The scheduler app: the time brain. */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@tickwork/config';
import { SchedulerModule } from './scheduler.module';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.create(SchedulerModule.forRoot(config));
  app.enableShutdownHooks();
  await app.listen(config.http.schedulerPort, config.api.host);
  new Logger('scheduler').log(`health on ${await app.getUrl()}/health/ready`);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
