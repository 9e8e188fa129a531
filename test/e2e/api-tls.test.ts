/**
 * TLS on both API listeners: with TICKWORK_TLS_CERT_FILE/KEY_FILE set, REST answers only over
 * HTTPS and gRPC only over a TLS channel that trusts the certificate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdminTestClient } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { OpenApiContract } from '../support/openapi';

function httpsGet(
  url: string,
  ca: Buffer,
): Promise<{ status: number; body: string; contentType: string | null }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body, contentType: res.headers['content-type'] ?? null }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('API over TLS', () => {
  let iso: Isolation;
  let api: AppProcess;
  let dir: string;
  let cert: Buffer;
  let grpcPort: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickwork-tls-'));
    // A throwaway self-signed certificate for 127.0.0.1, made with the machine's openssl.
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'));
    iso = isolate('tls');
    grpcPort = await freePort();
    api = startApp(
      'api',
      iso.env({
        TICKWORK_TLS_CERT_FILE: join(dir, 'cert.pem'),
        TICKWORK_TLS_KEY_FILE: join(dir, 'key.pem'),
        TICKWORK_GRPC_PORT: String(grpcPort),
      }),
      await freePort(),
    );
    // Readiness over HTTPS (the harness's own check speaks plain HTTP, which must now fail).
    await eventually(
      'the API to answer over HTTPS',
      async () => {
        const r = await httpsGet(`https://127.0.0.1:${api.port}/health/live`, cert).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      90_000,
      250,
    );
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await iso?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves REST over HTTPS and refuses plain HTTP', async () => {
    const preview = await httpsGet(`https://127.0.0.1:${api.port}/v1/jobs?page_size=1`, cert);
    expect(preview.status).toBe(200);
    // Checked against the OpenAPI document this API serves (over HTTPS too).
    const contract = new OpenApiContract(
      JSON.parse((await httpsGet(`https://127.0.0.1:${api.port}/v1/openapi.json`, cert)).body) as Record<
        string,
        unknown
      >,
    );
    contract.assert({ method: 'GET', url: '/v1/jobs', ...preview });
    await expect(fetch(`http://127.0.0.1:${api.port}/health/live`)).rejects.toThrow();
  });

  it('serves gRPC over TLS and refuses a plaintext channel', async () => {
    const tls = new AdminTestClient(`127.0.0.1:${grpcPort}`, undefined, cert);
    const plain = new AdminTestClient(`127.0.0.1:${grpcPort}`);
    try {
      const ok = await tls.call('ListJobs', { page_size: 1 });
      expect(ok.ok).toBe(true);
      const refused = await plain.call('ListJobs', { page_size: 1 }, { deadlineMs: 3_000 });
      expect(refused.ok).toBe(false);
    } finally {
      tls.close();
      plain.close();
    }
  });
});
