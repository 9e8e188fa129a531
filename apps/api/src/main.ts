/** The API app: REST and gRPC (tickwork.admin.v1) over the same jobs services, with tenant auth. */
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadApiListenConfig, loadConfig, loadTenants, type TenantRegistry } from '@tickwork/config';
import { warmUpTimeZones } from '@tickwork/domain';
import { CommandCodec } from '@tickwork/messaging';
import { ApiMetrics, httpServerTelemetry, startTelemetry } from '@tickwork/telemetry';
import { ApiErrorsFilter } from './api-errors.filter';
import { ApiModule } from './api.module';
import { grpcServerOptions } from './grpc/grpc-options';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  // First: the metrics provider must exist before any instrument is made.
  const telemetry = startTelemetry({ app: 'api', instanceId: config.instanceId });
  Logger.overrideLogger(telemetry.nestLogger);
  const log = new Logger('api');
  const tenants = loadTenants();
  const listen = loadApiListenConfig(process.env, config.api.maxPayloadBytes);
  guardOpenAuth(tenants, [config.api.host, listen.grpc.host], log);

  // The commands contract is registered before anyone is told the API is up, so producers
  // that look the schema up by subject (<prefix>.commands-value) find it.
  const codec = await CommandCodec.connect(config.schemaRegistryUrl, config.topics.commands);
  log.log(
    `ScheduleCommand registered as schema id ${codec.schemaId} under ${config.topics.commands}-value (BACKWARD)`,
  );

  // The first schedule in a time zone would otherwise pay for loading the zone data on a request.
  warmUpTimeZones();
  const apiMetrics = new ApiMetrics();
  const app = await NestFactory.create<NestExpressApplication>(
    ApiModule.forRoot(config, tenants, listen, telemetry, apiMetrics),
    {
      logger: telemetry.nestLogger,
      ...(listen.tls ? { httpsOptions: { cert: listen.tls.cert, key: listen.tls.key } } : {}),
    },
  );
  // Before the routes: every request is served inside its span (health probes and scrapes are not traced).
  app.use(
    httpServerTelemetry({
      metrics: apiMetrics,
      ignore: (path) => path.startsWith('/health/') || path === '/metrics',
      route: expressRoute,
    }),
  );
  // Room for the payload limit plus the rest of the job definition.
  app.useBodyParser('json', { limit: config.api.maxPayloadBytes + 64 * 1024 });
  app.useGlobalFilters(new ApiErrorsFilter());
  // The console (apps/console, bundled into dist/console by npm run build): static files that
  // call the public REST API like any other client.
  const consoleDir = join(__dirname, '..', '..', '..', 'console');
  if (existsSync(join(consoleDir, 'index.html'))) {
    app.useStaticAssets(consoleDir, { prefix: '/console', index: 'index.html', maxAge: 0 });
  } else {
    log.warn(`console not built (${consoleDir} is missing): npm run build bundles it`);
  }
  app.connectMicroservice(grpcServerOptions(listen));
  app.enableShutdownHooks();
  await app.startAllMicroservices();
  await app.listen(config.api.port, config.api.host);
  const scheme = listen.tls ? 'TLS' : 'plaintext';
  log.log(`REST API listening on ${await app.getUrl()} (OpenAPI: /v1/openapi.json)`);
  log.log(`console on ${await app.getUrl()}/console/`);
  log.log(
    `gRPC API (tickwork.admin.v1.SchedulerAdmin, health, reflection) listening on ${listen.grpc.host}:${listen.grpc.port}, ${scheme}`,
  );
}

/** The route template Express matched (e.g. /v1/jobs/:id), once it has routed the request. */
function expressRoute(req: IncomingMessage): string | undefined {
  const r = req as IncomingMessage & { baseUrl?: string; route?: { path?: unknown } };
  return typeof r.route?.path === 'string' ? `${r.baseUrl ?? ''}${r.route.path}` : undefined;
}

/** Auth off is for laptops: say so loudly, and refuse it on a non-loopback address unless TICKWORK_AUTH=off says it on purpose. */
function guardOpenAuth(tenants: TenantRegistry, hosts: readonly string[], log: Logger): void {
  if (tenants.authMode === 'required') {
    log.log(`auth: bearer tokens required (tenant registry from ${tenants.source})`);
    return;
  }
  const exposed = hosts.filter((h) => !LOOPBACK.has(h));
  if (exposed.length > 0 && process.env.TICKWORK_AUTH?.trim().toLowerCase() !== 'off') {
    throw new Error(
      `no API tokens are configured (TICKWORK_TENANTS_FILE or TICKWORK_TENANTS) and the API would listen on ${exposed.join(', ')}: ` +
        'configure tokens, listen on 127.0.0.1, or set TICKWORK_AUTH=off to run without authentication on purpose',
    );
  }
  const banner = '!'.repeat(100);
  log.warn(banner);
  log.warn(
    'AUTH IS OFF: no API tokens are configured, so every caller is an anonymous ADMIN that sees every tenant.',
  );
  log.warn(
    'Fine on a laptop; configure TICKWORK_TENANTS_FILE (see README "Tenants and auth") anywhere else.',
  );
  log.warn(banner);
}

bootstrap().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
