/** The executor app: runs fires. */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@tickwork/config';
import { ExecutorModule } from './executor.module';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.create(ExecutorModule.forRoot(config));
  app.enableShutdownHooks();
  await app.listen(config.http.executorPort, config.api.host);
  new Logger('executor').log(`health on ${await app.getUrl()}/health/ready`);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
