/** Serves the committed OpenAPI document (schemas/openapi/tickwork-api.v1.yaml) as YAML and JSON. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Header } from '@nestjs/common';
import { parse } from 'yaml';

/** The OpenAPI document's path, found from wherever this file was compiled to. */
export function openApiPath(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'schemas', 'openapi', 'tickwork-api.v1.yaml');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`schemas/openapi/tickwork-api.v1.yaml not found above ${__dirname}`);
}

@Controller('v1')
export class OpenApiController {
  private readonly yaml = readFileSync(openApiPath(), 'utf8');
  private readonly json = parse(this.yaml) as unknown;

  @Get('openapi.yaml')
  @Header('content-type', 'application/yaml; charset=utf-8')
  asYaml(): string {
    return this.yaml;
  }

  @Get('openapi.json')
  asJson(): unknown {
    return this.json;
  }
}
