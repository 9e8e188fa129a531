/**
 * The REST contract, checked on every response a test receives: each response is matched to its
 * operation in the OpenAPI document the running API serves (path template, method, status, content
 * type) and its body validated by Ajv against that operation's schema (JSON Schema 2020-12, the
 * dialect of OpenAPI 3.1). An undocumented operation, status or media type is a failure too.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;
const DOC_ID = 'tickwork-openapi';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every `#/components/schemas/X` reference made absolute, so schemas compile outside the document. */
function absoluteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(absoluteRefs);
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] =
        k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
          ? `${DOC_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`
          : absoluteRefs(v);
    }
    return out;
  }
  return value;
}

/** One response as received, for the contract to judge. */
export interface ReceivedResponse {
  readonly method: string;
  /** The request URL (absolute, or a path); its query is ignored. */
  readonly url: string;
  readonly status: number;
  readonly contentType: string | null;
  /** The raw body text ('' when none). */
  readonly body: string;
}

export class OpenApiContract {
  private readonly ajv = new Ajv2020({
    allErrors: true,
    allowUnionTypes: true,
    strict: true,
    // A schema composed with allOf requires properties its parts define, as JSON Schema allows.
    strictRequired: false,
  });
  private readonly routes: { template: string; pattern: RegExp; item: Json }[];
  private readonly validators = new Map<string, ValidateFunction>();
  /** Responses checked so far, by operationId and status (what the tests covered). */
  readonly seen = new Map<string, number>();

  constructor(readonly document: Json) {
    addFormats(this.ajv);
    // OpenAPI 3.1's own schema keywords (annotations for JSON Schema validation).
    this.ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
    const components = (document.components ?? {}) as Json;
    this.ajv.addSchema({ $id: DOC_ID, $defs: absoluteRefs(components.schemas ?? {}) });
    const paths = (document.paths ?? {}) as Record<string, Json>;
    this.routes = Object.entries(paths)
      .map(([template, item]) => ({
        template,
        item,
        pattern: new RegExp(
          `^${template
            .split(/(\{[^}]+\})/)
            .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
            .join('')}$`,
        ),
      }))
      // Literal segments win over parameters when both match.
      .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  }

  /** The document the API at `baseUrl` serves (checked against itself once loaded). */
  static async served(baseUrl: string): Promise<OpenApiContract> {
    const res = await fetch(`${baseUrl}/v1/openapi.json`);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`GET /v1/openapi.json answered ${res.status}: ${body}`);
    const contract = new OpenApiContract(JSON.parse(body) as Json);
    contract.assert({
      method: 'GET',
      url: '/v1/openapi.json',
      status: res.status,
      contentType: res.headers.get('content-type'),
      body,
    });
    return contract;
  }

  private ref<T>(value: T): T {
    const ref = (value as { $ref?: unknown } | undefined)?.$ref;
    if (typeof ref !== 'string') return value;
    let at: unknown = this.document;
    for (const part of ref.replace(/^#\//, '').split('/'))
      at = (at as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    return this.ref(at as T);
  }

  /** What is wrong with a response by the document: [] when it conforms. */
  problems(r: ReceivedResponse): string[] {
    const method = r.method.toLowerCase();
    const path = new URL(r.url, 'http://x').pathname;
    const route = this.routes.find(
      (rt) => rt.pattern.test(path) && METHODS.includes(method) && rt.item[method],
    );
    if (!route) return [`${r.method} ${path} is not an operation of the document`];
    const op = route.item[method] as { operationId?: string; responses?: Record<string, unknown> };
    const where = `${r.method} ${route.template} (${op.operationId ?? '?'}) → ${r.status}`;
    const responses = op.responses ?? {};
    const documented =
      responses[String(r.status)] ?? responses[`${String(r.status)[0]}XX`] ?? responses.default;
    if (!documented)
      return [`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`];
    const key = `${op.operationId ?? route.template} ${r.status}`;
    this.seen.set(key, (this.seen.get(key) ?? 0) + 1);
    const response = this.ref(documented) as { content?: Record<string, { schema?: unknown }> };
    if (!response.content) return r.body === '' ? [] : [`${where}: a body where the document has none`];
    const mediaType = (r.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    const media = response.content[mediaType];
    if (!media)
      return [
        `${where}: content type ${mediaType || '(none)'} not documented (${Object.keys(response.content).join(', ')})`,
      ];
    if (media.schema === undefined) return [];
    let body: unknown = r.body;
    if (/[/+]json$/.test(mediaType)) {
      try {
        body = JSON.parse(r.body);
      } catch {
        return [`${where}: body is not JSON: ${r.body.slice(0, 200)}`];
      }
    }
    const id = `${route.template} ${method} ${r.status} ${mediaType}`;
    let validate = this.validators.get(id);
    if (!validate) {
      validate = this.ajv.compile(absoluteRefs(media.schema) as Json);
      this.validators.set(id, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) => `${where}: ${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
    );
  }

  /** Throws, naming every problem and the body, when the response does not conform. */
  assert(r: ReceivedResponse): void {
    const problems = this.problems(r);
    if (problems.length > 0)
      throw new Error(
        `response does not conform to the served OpenAPI document:\n  ${problems.join('\n  ')}\nbody: ${r.body.slice(0, 2000)}`,
      );
  }

  /**
   * A fetch that checks each response against the document before handing it back (unread: the
   * caller reads it as usual). Give it paths (`/v1/jobs`) or absolute URLs of this API.
   */
  fetch(baseUrl: string): typeof fetch {
    return async (input, init) => {
      const request = new Request(
        typeof input === 'string' && input.startsWith('/') ? `${baseUrl}${input}` : input,
        init,
      );
      const res = await fetch(request);
      const body = await res.clone().text();
      this.assert({
        method: request.method,
        url: request.url,
        status: res.status,
        contentType: res.headers.get('content-type'),
        body,
      });
      return res;
    };
  }
}

/** A fetch for the API at `baseUrl` that validates every response against the document it serves. */
export async function contractFetch(baseUrl: string): Promise<typeof fetch> {
  return (await OpenApiContract.served(baseUrl)).fetch(baseUrl);
}
